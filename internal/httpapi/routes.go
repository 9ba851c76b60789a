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

	"github.com/paygate/paygate/internal/httpx"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
)

// handlerFunc serves one route; ids holds the path's {id} segments in order.
type handlerFunc func(w http.ResponseWriter, r *http.Request, key paygate.APIKey, ids []string)

// route is one endpoint of the /v1 API: a ServeMux pattern with its method
// ("GET /v1/payments/{id}"), its handler, and what serveAPI reads together
// with the API key, so that the handler needs no round trip of its own for
// it. Every wildcard is an id: a value that is not a UUID matches nothing.
type route struct {
	pattern string
	h       handlerFunc
	ahead   readAhead
}

// readAhead is what a request reads together with its API key (paygate.RequestReader).
type readAhead int

const (
	readNothing     readAhead = iota
	readIdempotency           // the Idempotency-Key's record (createPayment)
	readPayment               // the payment of the path's id (getPayment)
)

func (s *Server) apiRoutes() []route {
	return []route{
		{pattern: "GET /v1/payments", h: s.lookupPayment},
		{pattern: "POST /v1/payments", h: s.createPayment, ahead: readIdempotency},
		{pattern: "GET /v1/payments/{id}", h: s.getPayment, ahead: readPayment},
		{pattern: "POST /v1/payments/{id}/capture", h: s.capturePayment},
		{pattern: "POST /v1/payments/{id}/void", h: s.voidPayment},
		{pattern: "GET /v1/payments/{id}/refunds", h: s.listRefunds},
		{pattern: "POST /v1/refunds", h: s.createRefund},
		{pattern: "GET /v1/refunds/{id}", h: s.getRefund},
		{pattern: "POST /v1/customers", h: s.upsertCustomer},
		{pattern: "GET /v1/customers/{id}", h: s.getCustomer},
		{pattern: "GET /v1/customers/{id}/cards", h: s.listStoredCards},
		{pattern: "POST /v1/customers/{id}/cards", h: s.saveStoredCard},
		{pattern: "DELETE /v1/customers/{id}/cards/{cardId}", h: s.deleteStoredCard},
	}
}

// newAPI returns the router of /v1. Every answer, 404 and 405 included,
// comes after serveAPI authenticated the key (or, for a payment with a key
// it knows, left it to the payment's insert) and charged the rate limit
// (decisions §1): a path no route matches is served by noResource, and
// each path answers the methods it lacks with 405 and its Allow header.
// HEAD is such a method: the API serves no HEAD.
func (s *Server) newAPI() *httpx.Mux {
	api := httpx.New(s.endpoint(routeUnmatched, readNothing, nil, s.noResource))
	var patterns []string
	for _, rt := range s.apiRoutes() {
		_, path, _ := strings.Cut(rt.pattern, " ")
		api.Handle(rt.pattern, s.endpoint(routeName(path), rt.ahead, httpx.Wildcards(path), rt.h))
		patterns = append(patterns, rt.pattern)
	}
	for path, allow := range httpx.Allowed(patterns) {
		notAllowed := s.notAllowed(allow)
		h := s.endpoint(routeName(path), readNothing, httpx.Wildcards(path),
			func(w http.ResponseWriter, r *http.Request, _ paygate.APIKey, _ []string) { notAllowed(w, r) })
		api.Handle(path, h)
		if strings.HasPrefix(allow, http.MethodGet) {
			api.Handle(http.MethodHead+" "+path, h)
		}
	}
	return api
}

// routeName is the route a path pattern is logged under: every wildcard
// written {id}, as in /v1/customers/{id}/cards/{id}.
func routeName(path string) string {
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		if strings.HasPrefix(seg, "{") {
			segs[i] = "{id}"
		}
	}
	return strings.Join(segs, "/")
}

// endpoint returns the mux's handler of one route: it reads the ids from
// the path (lower-cased) and has serveAPI authenticate the request before h
// runs. An id that is not a UUID matches no route: such a resource cannot
// exist.
func (s *Server) endpoint(name string, ahead readAhead, wildcards []string, h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var ids []string
		for _, n := range wildcards {
			v := r.PathValue(n)
			if !id.Valid(v) {
				s.serveAPI(w, r, readNothing, nil, s.noResource)
				return
			}
			ids = append(ids, strings.ToLower(v))
		}
		stateOf(r.Context()).route = name
		s.serveAPI(w, r, ahead, ids, h)
	}
}

// noResource answers a /v1 path that no route matched.
func (s *Server) noResource(w http.ResponseWriter, r *http.Request, _ paygate.APIKey, _ []string) {
	s.writeError(w, r, paygate.Errorf(paygate.CodeNotFound, "", "no such resource"))
}

// notAllowed answers 405 for a path that serves only the methods in allow.
func (s *Server) notAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		s.writeError(w, r, paygate.Errorf(paygate.CodeMethodNotAllowed, "", "method %s is not allowed here", r.Method))
	}
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
	st := stateOf(r.Context())
	if st.unverified {
		// The key was only known (knownPayer): the payment's insert, or
		// the runner before any other answer, authenticated it.
		switch {
		case paygate.ErrorCode(err) == paygate.CodeUnauthorized:
			st.authed = false
			s.cfg.Auth.Forget(r.Header.Get("X-API-Key"))
			s.refuse(w, r, err)
			return
		case err == nil:
			s.cfg.Auth.Used(key)
		}
	}
	if err != nil {
		var re *payment.ReleaseError
		if errors.As(err, &re) {
			s.log.Error("release idempotency key", "request_id", st.requestID, "error", re.Release.Error())
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
		in.ClientAddr = clientIP(r) // the card-testing guard's address
		in.BillingIPDefaulted = pr.Billing != nil && pr.Billing.IPAddress == ""
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
		in, _, e := parseRefund(body)
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
