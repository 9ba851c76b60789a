package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
)

// handlerFunc serves one route; ids holds the path's {id} segments in order.
type handlerFunc func(w http.ResponseWriter, r *http.Request, key paygate.APIKey, ids []string)

// route is a path pattern (segments, "{id}" for a UUID) and its methods.
type route struct {
	pattern []string
	methods map[string]handlerFunc
	allow   string
	// peek is what serveAPI reads together with the API key, for requests
	// of method peekMethod, so that the handler needs no round trip of its
	// own for it.
	peek       peekKind
	peekMethod string
}

// peekKind is what a request's API key is read with.
type peekKind int

const (
	peekNothing     peekKind = iota
	peekIdempotency          // the Idempotency-Key's record (createPayment)
	peekPayment              // the payment of the path's id (getPayment)
)

// peeking returns rt whose requests of method read kind with their key.
func (rt route) peeking(method string, kind peekKind) route {
	rt.peekMethod, rt.peek = method, kind
	return rt
}

func newRoute(pattern string, methods map[string]handlerFunc) route {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		if _, ok := methods[m]; ok {
			allow = append(allow, m)
		}
	}
	return route{pattern: strings.Split(strings.Trim(pattern, "/"), "/"), methods: methods, allow: strings.Join(allow, ", ")}
}

func (s *Server) apiRoutes() []route {
	return []route{
		newRoute("/v1/payments", map[string]handlerFunc{http.MethodGet: s.lookupPayment, http.MethodPost: s.createPayment}).
			peeking(http.MethodPost, peekIdempotency),
		newRoute("/v1/payments/{id}", map[string]handlerFunc{http.MethodGet: s.getPayment}).
			peeking(http.MethodGet, peekPayment),
		newRoute("/v1/payments/{id}/capture", map[string]handlerFunc{http.MethodPost: s.capturePayment}),
		newRoute("/v1/payments/{id}/void", map[string]handlerFunc{http.MethodPost: s.voidPayment}),
		newRoute("/v1/payments/{id}/refunds", map[string]handlerFunc{http.MethodGet: s.listRefunds}),
		newRoute("/v1/refunds", map[string]handlerFunc{http.MethodPost: s.createRefund}),
		newRoute("/v1/refunds/{id}", map[string]handlerFunc{http.MethodGet: s.getRefund}),
		newRoute("/v1/customers", map[string]handlerFunc{http.MethodPost: s.upsertCustomer}),
		newRoute("/v1/customers/{id}", map[string]handlerFunc{http.MethodGet: s.getCustomer}),
		newRoute("/v1/customers/{id}/cards", map[string]handlerFunc{http.MethodGet: s.listStoredCards, http.MethodPost: s.saveStoredCard}),
		newRoute("/v1/customers/{id}/cards/{id}", map[string]handlerFunc{http.MethodDelete: s.deleteStoredCard}),
	}
}

// matched is the route a path matched, with its ids; ok is false when no
// route matched.
type matched struct {
	route
	ids []string
	ok  bool
}

// name is the route's pattern as written: /v1/payments/{id}.
func (rt route) name() string { return "/" + strings.Join(rt.pattern, "/") }

// peeks returns what a request of method to the matched route reads with
// its API key.
func (m matched) peeks(method string) peekKind {
	if !m.ok || method != m.peekMethod {
		return peekNothing
	}
	return m.peek
}

// match returns the route of path and its ids. A segment in an {id}
// position that is not a UUID makes no match: such a resource cannot exist.
func match(routes []route, path string) matched {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for _, rt := range routes {
		if len(rt.pattern) != len(segs) {
			continue
		}
		var ids []string
		ok := true
		for i, p := range rt.pattern {
			if p == "{id}" {
				if !id.Valid(segs[i]) {
					ok = false
					break
				}
				ids = append(ids, strings.ToLower(segs[i]))
			} else if p != segs[i] {
				ok = false
				break
			}
		}
		if ok {
			return matched{route: rt, ids: ids, ok: true}
		}
	}
	return matched{}
}

func (s *Server) route(w http.ResponseWriter, r *http.Request, key paygate.APIKey, m matched) {
	if !m.ok {
		s.writeError(w, r, paygate.Errorf(paygate.CodeNotFound, "", "no such resource"))
		return
	}
	h, ok := m.methods[r.Method]
	if !ok {
		w.Header().Set("Allow", m.allow)
		s.writeError(w, r, paygate.Errorf(paygate.CodeMethodNotAllowed, "", "method %s is not allowed here", r.Method))
		return
	}
	h(w, r, key, m.ids)
}

// runIdempotent runs a POST under its Idempotency-Key with the payment
// service's runner (payment.Service.Run) and renders the outcome: the
// stored answer, with Idempotent-Replayed on a replay; 409 with
// Retry-After: 1 for a key whose request is still running; any other error
// as its envelope. prepare decodes and validates the JSON body; ahead is
// the key's record read with the API key, nil when it was not.
func (s *Server) runIdempotent(w http.ResponseWriter, r *http.Request, key paygate.APIKey, ahead *payment.ReadAhead, prepare payment.Prepare) {
	out, err := s.cfg.Payments.Run(r.Context(), payment.IdempotentRequest{
		MerchantID: key.MerchantID, Mode: key.Mode, APIKeyID: key.ID,
		Key: r.Header.Get("Idempotency-Key"), Method: r.Method, Path: r.URL.Path,
		Body: func() ([]byte, error) { return readBody(r) }, Ahead: ahead,
	}, func(body []byte) (payment.Operation, error) {
		if !isJSON(r.Header.Get("Content-Type")) {
			return nil, paygate.Errorf(paygate.CodeInvalidRequest, "Content-Type", "Content-Type must be application/json")
		}
		return prepare(body)
	})
	if err != nil {
		var re *payment.ReleaseError
		if errors.As(err, &re) {
			s.log.Error("release idempotency key", "request_id", stateOf(r.Context()).requestID, "error", re.Release.Error())
			err = re.Err
		}
		if errors.Is(err, payment.ErrInFlight) {
			w.Header().Set("Retry-After", "1")
		}
		s.fail(w, r, err)
		return
	}
	if out.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeRaw(w, out.Answer.Status, out.Answer.Body)
}

// readBody reads a request body within the limit.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, paygate.Errorf(paygate.CodeInvalidRequest, "", "the request body could not be read")
	}
	if len(body) > maxBody {
		return nil, paygate.Errorf(paygate.CodeBodyTooLarge, "", "the request body is larger than 64 KiB")
	}
	return body, nil
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// --- handlers ---

// createPayment is idempotent like the other POSTs, with fewer round trips
// where the key's record was read with the API key (serveAPI): a live
// record is answered at once, before validation, as decisions §1 orders
// the checks, and a free key is reserved by the payment's insert itself.
func (s *Server) createPayment(w http.ResponseWriter, r *http.Request, key paygate.APIKey, _ []string) {
	s.runIdempotent(w, r, key, stateOf(r.Context()).ahead, func(body []byte) (payment.Operation, error) {
		var pr paymentRequest
		if e := decodeJSON(body, &pr); e != nil {
			return nil, e
		}
		in, e := pr.validate(s.clock.Now(), clientIP(r))
		if e != nil {
			return nil, e
		}
		return func(ctx context.Context, req payment.Request) (payment.Result, error) {
			return s.cfg.Payments.Create(ctx, req, in)
		}, nil
	})
}

func (s *Server) capturePayment(w http.ResponseWriter, r *http.Request, key paygate.APIKey, ids []string) {
	s.runIdempotent(w, r, key, nil, func(body []byte) (payment.Operation, error) {
		var amount string
		if len(bytes.TrimSpace(body)) > 0 { // no body: capture everything
			var cr captureRequest
			if e := decodeJSON(body, &cr); e != nil {
				return nil, e
			}
			a, e := cr.validate()
			if e != nil {
				return nil, e
			}
			amount = a
		}
		return func(ctx context.Context, req payment.Request) (payment.Result, error) {
			return s.cfg.Payments.Capture(ctx, req, payment.CaptureInput{PaymentID: ids[0], AmountText: amount})
		}, nil
	})
}

// emptyObject is the body of a void: {} (or nothing at all).
type emptyObject struct{}

func (s *Server) voidPayment(w http.ResponseWriter, r *http.Request, key paygate.APIKey, ids []string) {
	s.runIdempotent(w, r, key, nil, func(body []byte) (payment.Operation, error) {
		if len(bytes.TrimSpace(body)) > 0 {
			var v emptyObject
			if e := decodeJSON(body, &v); e != nil {
				return nil, e
			}
		}
		return func(ctx context.Context, req payment.Request) (payment.Result, error) {
			return s.cfg.Payments.Void(ctx, req, ids[0])
		}, nil
	})
}

func (s *Server) createRefund(w http.ResponseWriter, r *http.Request, key paygate.APIKey, _ []string) {
	s.runIdempotent(w, r, key, nil, func(body []byte) (payment.Operation, error) {
		in, _, e := ParseRefund(body)
		if e != nil {
			return nil, e
		}
		return func(ctx context.Context, req payment.Request) (payment.Result, error) {
			return s.cfg.Payments.Refund(ctx, req, in)
		}, nil
	})
}

func (s *Server) upsertCustomer(w http.ResponseWriter, r *http.Request, key paygate.APIKey, _ []string) {
	s.runIdempotent(w, r, key, nil, func(body []byte) (payment.Operation, error) {
		var cr customerRequest
		if e := decodeJSON(body, &cr); e != nil {
			return nil, e
		}
		ext, email, md, e := cr.validate()
		if e != nil {
			return nil, e
		}
		return func(ctx context.Context, req payment.Request) (payment.Result, error) {
			return s.cfg.Payments.UpsertCustomer(ctx, req, ext, email, md)
		}, nil
	})
}

func (s *Server) getPayment(w http.ResponseWriter, r *http.Request, key paygate.APIKey, ids []string) {
	if p := stateOf(r.Context()).payment; p != nil {
		s.writeData(w, r, http.StatusOK, paymentResponse(*p))
		return
	}
	// Not read with the key, or not found: the store's own answer.
	p, err := s.cfg.Store.PaymentByID(r.Context(), key.MerchantID, key.Mode, ids[0])
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeData(w, r, http.StatusOK, paymentResponse(p))
}

func (s *Server) lookupPayment(w http.ResponseWriter, r *http.Request, key paygate.APIKey, _ []string) {
	ref, e := queryText(r, "merchantRef")
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	if ref == "" {
		s.writeError(w, r, paygate.Errorf(paygate.CodeInvalidRequest, "merchantRef", "the merchantRef query parameter is required"))
		return
	}
	p, err := s.cfg.Store.PaymentByMerchantRef(r.Context(), key.MerchantID, key.Mode, ref)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeData(w, r, http.StatusOK, paymentResponse(p))
}

// queryText returns the query parameter name, refused (param name) when it
// is not UTF-8 or holds U+0000 (decisions §15): such text can be neither
// stored nor compared by PostgreSQL, and is nobody's reference.
func queryText(r *http.Request, name string) (string, *paygate.Error) {
	v := r.URL.Query().Get(name)
	if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
		return "", paygate.Errorf(paygate.CodeInvalidRequest, name, "the %s query parameter must be UTF-8 text without NUL characters", name)
	}
	return v, nil
}

func (s *Server) listRefunds(w http.ResponseWriter, r *http.Request, key paygate.APIKey, ids []string) {
	refunds, err := s.cfg.Store.RefundsByPayment(r.Context(), key.MerchantID, key.Mode, ids[0])
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]refundRecord, 0, len(refunds))
	for _, rf := range refunds {
		out = append(out, refundResponse(rf))
	}
	s.writeData(w, r, http.StatusOK, out)
}

func (s *Server) getRefund(w http.ResponseWriter, r *http.Request, key paygate.APIKey, ids []string) {
	rf, err := s.cfg.Store.RefundByID(r.Context(), key.MerchantID, key.Mode, ids[0])
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeData(w, r, http.StatusOK, refundResponse(rf))
}

func (s *Server) getCustomer(w http.ResponseWriter, r *http.Request, key paygate.APIKey, ids []string) {
	c, err := s.cfg.Store.CustomerByID(r.Context(), key.MerchantID, key.Mode, ids[0])
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeData(w, r, http.StatusOK, customerResponse(c))
}
