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
	"github.com/paygate/paygate/internal/idempotency"
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

// operation is the work of a POST once its idempotency key is reserved: it
// returns the answer (already stored under the key by the use case) or an
// error (nothing stored: the key is released).
type operation func(ctx context.Context, body []byte, req payment.Request) (payment.Answer, error)

// idempotent runs a POST under the Idempotency-Key rules of decisions §5:
// replay of a stored answer, 409 for another body or a request in flight,
// and release of the key for answers that are not stored.
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, key paygate.APIKey, op operation) {
	ctx := r.Context()
	res, body, ok := s.readIdempotent(w, r, key)
	if !ok {
		return
	}
	rec, reserved, err := s.cfg.Store.ReserveIdempotency(ctx, res)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !reserved {
		s.answerTaken(w, r, rec, res.Fingerprint, body)
		return
	}

	ans, err := func() (payment.Answer, error) {
		if !isJSON(r.Header.Get("Content-Type")) {
			return payment.Answer{}, paygate.Errorf(paygate.CodeInvalidRequest, "Content-Type", "Content-Type must be application/json")
		}
		return op(ctx, body, payment.Request{MerchantID: key.MerchantID, Mode: key.Mode, IdempotencyKey: res.Key})
	}()
	if err != nil {
		s.releaseAndFail(w, r, res, err)
		return
	}
	writeRaw(w, ans.Status, ans.Body)
}

// readIdempotent reads what every idempotent POST needs before its key is
// looked up: a valid Idempotency-Key, a body within the limit, and the
// request's fingerprint. It answers the request itself when one is missing.
func (s *Server) readIdempotent(w http.ResponseWriter, r *http.Request, key paygate.APIKey) (paygate.IdempotencyReservation, []byte, bool) {
	ik := r.Header.Get("Idempotency-Key")
	if !idempotency.ValidKey(ik) {
		s.writeError(w, r, paygate.Errorf(paygate.CodeInvalidRequest, "Idempotency-Key", "the Idempotency-Key header is required: 1 to 255 characters"))
		return paygate.IdempotencyReservation{}, nil, false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		s.writeError(w, r, paygate.Errorf(paygate.CodeInvalidRequest, "", "the request body could not be read"))
		return paygate.IdempotencyReservation{}, nil, false
	}
	if len(body) > maxBody {
		s.writeError(w, r, paygate.Errorf(paygate.CodeBodyTooLarge, "", "the request body is larger than 64 KiB"))
		return paygate.IdempotencyReservation{}, nil, false
	}
	fp, err := s.cfg.Payments.RequestFingerprint(r.Method, r.URL.Path, body)
	if err != nil {
		s.fail(w, r, err)
		return paygate.IdempotencyReservation{}, nil, false
	}
	return paygate.IdempotencyReservation{
		MerchantID: key.MerchantID, Mode: key.Mode, Key: ik, Fingerprint: fp, APIKeyID: key.ID, Now: s.clock.Now(),
	}, body, true
}

// answerTaken answers a request whose key has a live record: a replay of
// the stored answer, or 409 for another body or a request still in flight.
func (s *Server) answerTaken(w http.ResponseWriter, r *http.Request, rec paygate.IdempotencyRecord, fp, body []byte) {
	switch {
	case !s.cfg.Payments.SameRequest(rec.Fingerprint, fp, r.Method, r.URL.Path, body):
		s.writeError(w, r, paygate.Errorf(paygate.CodeDuplicateRequest, "Idempotency-Key", "this Idempotency-Key was used with different request parameters"))
	case rec.State != paygate.IdempotencyComplete:
		w.Header().Set("Retry-After", "1")
		s.writeError(w, r, paygate.Errorf(paygate.CodeDuplicateRequest, "Idempotency-Key", "a request with this Idempotency-Key is still being processed"))
	default:
		w.Header().Set("Idempotent-Replayed", "true")
		writeRaw(w, rec.StatusCode, rec.Body)
	}
}

// releaseAndFail answers err for a request that reserved its key and
// stored nothing under it: the key is freed so that the client may fix the
// request and retry with the same key.
func (s *Server) releaseAndFail(w http.ResponseWriter, r *http.Request, res paygate.IdempotencyReservation, err error) {
	if rerr := s.cfg.Store.ReleaseIdempotency(context.WithoutCancel(r.Context()), res.MerchantID, res.Mode, res.Key); rerr != nil {
		s.log.Error("release idempotency key", "request_id", stateOf(r.Context()).requestID, "error", rerr.Error())
	}
	s.fail(w, r, err)
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// --- handlers ---

// createPayment is idempotent like the other POSTs, with fewer round trips
// and transactions. The record of its Idempotency-Key was read with its API
// key (serveAPI): a live record is answered at once (replay or 409), before
// validation, as decisions §1 orders the checks. A free key is reserved by
// the payment's insert itself (payment.Request.Reservation), which settles
// a race with a concurrent request using the same key. Without that read
// (a store that cannot), a request that fails validation looks its key up
// as any POST does.
func (s *Server) createPayment(w http.ResponseWriter, r *http.Request, key paygate.APIKey, _ []string) {
	ctx := r.Context()
	st := stateOf(ctx)
	res, body, ok := s.readIdempotent(w, r, key)
	if !ok {
		return
	}
	if st.peeked && st.record != nil && st.record.Live(res.Now) {
		s.answerTaken(w, r, *st.record, res.Fingerprint, body)
		return
	}
	in, err := s.paymentInput(r, body)
	if err == nil {
		var ans payment.Answer
		ans, err = s.cfg.Payments.Create(ctx, payment.Request{
			MerchantID: key.MerchantID, Mode: key.Mode, IdempotencyKey: res.Key, Reservation: &res,
		}, in)
		var taken *paygate.KeyTakenError
		switch {
		case err == nil:
			writeRaw(w, ans.Status, ans.Body)
			return
		case errors.As(err, &taken):
			s.answerTaken(w, r, taken.Record, res.Fingerprint, body)
			return
		case !errors.Is(err, payment.ErrNotReserved):
			s.releaseAndFail(w, r, res, err)
			return
		}
	}
	if st.peeked {
		// The key was free when it was read: the error is the answer,
		// and nothing is stored under the key.
		s.fail(w, r, err)
		return
	}
	rec, reserved, rerr := s.cfg.Store.ReserveIdempotency(ctx, res)
	switch {
	case rerr != nil:
		s.fail(w, r, rerr)
	case !reserved:
		s.answerTaken(w, r, rec, res.Fingerprint, body)
	default:
		s.releaseAndFail(w, r, res, err)
	}
}

// paymentInput decodes and validates the body of POST /v1/payments.
func (s *Server) paymentInput(r *http.Request, body []byte) (payment.CreateInput, error) {
	if !isJSON(r.Header.Get("Content-Type")) {
		return payment.CreateInput{}, paygate.Errorf(paygate.CodeInvalidRequest, "Content-Type", "Content-Type must be application/json")
	}
	var pr paymentRequest
	if e := decodeJSON(body, &pr); e != nil {
		return payment.CreateInput{}, e
	}
	in, e := pr.validate(s.clock.Now(), clientIP(r))
	if e != nil {
		return payment.CreateInput{}, e
	}
	return in, nil
}

func (s *Server) capturePayment(w http.ResponseWriter, r *http.Request, key paygate.APIKey, ids []string) {
	s.idempotent(w, r, key, func(ctx context.Context, body []byte, req payment.Request) (payment.Answer, error) {
		var amount string
		if len(bytes.TrimSpace(body)) > 0 { // no body: capture everything
			var cr captureRequest
			if e := decodeJSON(body, &cr); e != nil {
				return payment.Answer{}, e
			}
			a, e := cr.validate()
			if e != nil {
				return payment.Answer{}, e
			}
			amount = a
		}
		return s.cfg.Payments.Capture(ctx, req, payment.CaptureInput{PaymentID: ids[0], AmountText: amount})
	})
}

// emptyObject is the body of a void: {} (or nothing at all).
type emptyObject struct{}

func (s *Server) voidPayment(w http.ResponseWriter, r *http.Request, key paygate.APIKey, ids []string) {
	s.idempotent(w, r, key, func(ctx context.Context, body []byte, req payment.Request) (payment.Answer, error) {
		if len(bytes.TrimSpace(body)) > 0 {
			var v emptyObject
			if e := decodeJSON(body, &v); e != nil {
				return payment.Answer{}, e
			}
		}
		return s.cfg.Payments.Void(ctx, req, ids[0])
	})
}

func (s *Server) createRefund(w http.ResponseWriter, r *http.Request, key paygate.APIKey, _ []string) {
	s.idempotent(w, r, key, func(ctx context.Context, body []byte, req payment.Request) (payment.Answer, error) {
		var rr refundRequest
		if e := decodeJSON(body, &rr); e != nil {
			return payment.Answer{}, e
		}
		in, _, e := rr.validate()
		if e != nil {
			return payment.Answer{}, e
		}
		return s.cfg.Payments.Refund(ctx, req, in)
	})
}

func (s *Server) upsertCustomer(w http.ResponseWriter, r *http.Request, key paygate.APIKey, _ []string) {
	s.idempotent(w, r, key, func(ctx context.Context, body []byte, req payment.Request) (payment.Answer, error) {
		var cr customerRequest
		if e := decodeJSON(body, &cr); e != nil {
			return payment.Answer{}, e
		}
		ext, email, md, e := cr.validate()
		if e != nil {
			return payment.Answer{}, e
		}
		return s.cfg.Payments.UpsertCustomer(ctx, req, ext, email, md)
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
