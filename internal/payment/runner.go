package payment

import (
	"context"
	"errors"
	"fmt"

	"github.com/paygate/paygate/internal/idempotency"
	"github.com/paygate/paygate/internal/paygate"
)

// The runner of idempotent operations (decisions §5): every POST of the API
// and the dashboard's refund go through Run, which validates the key,
// fingerprints the request, reserves the key (or answers a replay or a 409),
// runs the operation, whose use case stores its answer under the key
// together with its outcome, and releases the key when the operation
// stored nothing.

// IdempotentRequest is one request to run under an idempotency key.
type IdempotentRequest struct {
	MerchantID string
	Mode       paygate.Mode
	// APIKeyID is re-checked when the key is reserved (a key revoked since
	// authentication gets UNAUTHORIZED); "" skips the check, for the
	// dashboard, whose session is checked instead.
	APIKeyID string
	// Key is the idempotency key, within (merchant, mode).
	Key string
	// Method, Path and the body are what the request is fingerprinted by.
	Method, Path string
	// Body returns the request's body. It is called once the key is known
	// to be valid; its error is the answer.
	Body func() ([]byte, error)
	// Ahead, when set, is the key's record as it was read with the
	// request's API key (paygate.RequestReader), and asks that a free key be reserved by the
	// operation's own first write (Request.Reservation; Create does):
	// one round trip fewer, and an answer to a replay with no other read.
	// Only an operation whose first write honours req.Reservation (Create)
	// may be run so: any other would leave the key unreserved, and its
	// error would release a key another request may hold.
	Ahead *ReadAhead
}

// ReadAhead is the record of an idempotency key as it was read ahead of the
// request's run.
type ReadAhead struct {
	Record *paygate.IdempotencyRecord // nil: the key had no record

	// Unread, when set, says that neither the key's record nor the
	// request's API key was read: the API key is known only by its hash
	// from an earlier request (auth.Authenticator.Known), and the
	// operation's first write verifies it with the reservation, in the same
	// statement (decisions §22). Run calls Unread before it answers
	// anything that write did not decide (an unreadable body, a validation
	// error, an error before the write): it authenticates the API key and
	// reads the key's record, in one round trip, so that the answer is the
	// one the checks of decisions §1 give in their order: 401 first, then a
	// replay or 409 of a live record, then the error. Record is then nil.
	Unread func(ctx context.Context) (*paygate.IdempotencyRecord, error)
}

// ErrRecordUnread is what ReadAhead.Unread returns when it authenticated the
// API key but could not read the key's record: the runner then reserves the
// key on its own to learn whether it is taken.
var ErrRecordUnread = errors.New("the idempotency record could not be read with the API key")

// settle answers err, an error the operation's first write did not decide,
// for a run whose API key and record were not read (Unread): after the
// authentication, and the live record (res is the reservation of a request
// with a fingerprint, nil before there is one), that would have answered
// first.
func (s *Service) settle(ctx context.Context, a *ReadAhead, res *paygate.IdempotencyReservation, err error, taken func(paygate.IdempotencyRecord) (Outcome, error)) (Outcome, error) {
	if a == nil || a.Unread == nil {
		return Outcome{}, err
	}
	rec, uerr := a.Unread(ctx)
	switch {
	case res == nil && (uerr == nil || errors.Is(uerr, ErrRecordUnread)):
		return Outcome{}, err
	case errors.Is(uerr, ErrRecordUnread):
		// As a run without a read-ahead: reserve, then release.
		rec, reserved, rerr := s.store.ReserveIdempotency(ctx, *res)
		switch {
		case rerr != nil:
			return Outcome{}, rerr
		case !reserved:
			return taken(rec)
		}
		return Outcome{}, s.release(ctx, *res, err)
	case uerr != nil:
		return Outcome{}, uerr
	case rec != nil && rec.Live(res.Now):
		return taken(*rec)
	}
	return Outcome{}, err
}

// reserveToSettle answers err, an error before the operation's first
// write, for a run whose key was read ahead as free, as a run without a
// read-ahead would: it reserves the key; a key taken meanwhile is answered
// by its record (taken), a free one is released and err answered.
func (s *Service) reserveToSettle(ctx context.Context, res paygate.IdempotencyReservation, err error, taken func(paygate.IdempotencyRecord) (Outcome, error)) (Outcome, error) {
	rec, reserved, rerr := s.store.ReserveIdempotency(ctx, res)
	switch {
	case rerr != nil:
		return Outcome{}, rerr
	case !reserved:
		return taken(rec)
	}
	return Outcome{}, s.release(ctx, res, err)
}

// Prepare decodes and validates a request's body into the operation to run.
// Its error is the answer, and nothing is stored under the key.
type Prepare func(body []byte) (Operation, error)

// Operation runs a use case for a request whose key is reserved (or is to
// be reserved by its first write, with req.Reservation). It returns the
// result whose answer the use case stored under the key, or an error when
// it stored nothing.
type Operation func(ctx context.Context, req Request) (Result, error)

// Outcome is what Run answers: the result of the operation and the answer
// stored for it, or, on a replay, the answer stored by the first request
// (Result is then zero).
type Outcome struct {
	Result   Result
	Answer   Answer
	Replayed bool
}

// ErrInFlight marks the DUPLICATE_REQUEST of a key whose first request is
// still running: the client may retry in a second (Retry-After: 1).
var ErrInFlight = errors.New("the first request with this idempotency key is still running")

// ReleaseError is an error of an operation that stored nothing, whose key
// could not be released either: Err is the operation's error (the answer),
// Release the release's.
type ReleaseError struct {
	Err, Release error
}

func (e *ReleaseError) Error() string {
	return fmt.Sprintf("%v; release idempotency key: %v", e.Err, e.Release)
}

// Unwrap returns both errors, the operation's first.
func (e *ReleaseError) Unwrap() []error { return []error{e.Err, e.Release} }

// Run runs one request under its idempotency key. Errors: INVALID_REQUEST
// param Idempotency-Key for a missing or malformed key; DUPLICATE_REQUEST
// param Idempotency-Key when the key was used with another request, also
// ErrInFlight when that request is still running; the error of Body,
// prepare or the operation (nothing stored, the key released; a
// *ReleaseError when the release failed too); store failures.
func (s *Service) Run(ctx context.Context, ir IdempotentRequest, prepare Prepare) (Outcome, error) {
	now := s.clock.Now()
	if !idempotency.ValidKey(ir.Key) {
		return s.settle(ctx, ir.Ahead, nil, paygate.Errorf(paygate.CodeInvalidRequest, "Idempotency-Key", "the Idempotency-Key header is required: 1 to 255 characters"), nil)
	}
	body, err := ir.Body()
	if err != nil {
		return s.settle(ctx, ir.Ahead, nil, err, nil)
	}
	fp, err := s.RequestFingerprint(ir.Method, ir.Path, body)
	if err != nil {
		return s.settle(ctx, ir.Ahead, nil, err, nil)
	}
	res := paygate.IdempotencyReservation{
		MerchantID: ir.MerchantID, Mode: ir.Mode, Key: ir.Key, Fingerprint: fp, APIKeyID: ir.APIKeyID, Now: now,
	}
	taken := func(rec paygate.IdempotencyRecord) (Outcome, error) {
		switch {
		case !s.SameRequest(rec.Fingerprint, fp, ir.Method, ir.Path, body):
			return Outcome{}, paygate.Errorf(paygate.CodeDuplicateRequest, "Idempotency-Key", "this Idempotency-Key was used with different request parameters")
		case rec.State != paygate.IdempotencyComplete:
			return Outcome{}, errors.Join(paygate.Errorf(paygate.CodeDuplicateRequest, "Idempotency-Key", "a request with this Idempotency-Key is still being processed"), ErrInFlight)
		default:
			s.metrics.Replayed()
			return Outcome{Answer: Answer{Status: rec.StatusCode, Body: rec.Body}, Replayed: true}, nil
		}
	}
	req := Request{MerchantID: ir.MerchantID, Mode: ir.Mode, IdempotencyKey: ir.Key}

	if a := ir.Ahead; a != nil {
		// The key's record was read ahead: a live one answers at once; a
		// free key is reserved by the operation's first write.
		if a.Record != nil && a.Record.Live(res.Now) {
			return taken(*a.Record)
		}
		op, err := prepare(body)
		if err != nil {
			return s.settle(ctx, a, &res, err, taken) // nothing was reserved
		}
		req.Reservation = &res
		if a.Unread != nil {
			req.Authenticate = func(ctx context.Context) error {
				rec, err := a.Unread(ctx)
				switch {
				case errors.Is(err, ErrRecordUnread):
					return nil // verified; the insert settles the key
				case err != nil:
					return err
				case rec != nil && rec.Live(res.Now):
					return &paygate.KeyTakenError{Record: *rec}
				}
				return nil
			}
		}
		r, err := op(ctx, req)
		var tk *paygate.KeyTakenError
		switch {
		case err == nil:
			return Outcome{Result: r, Answer: r.answer}, nil
		case errors.As(err, &tk):
			return taken(tk.Record)
		case errors.Is(err, ErrNotReserved) && errors.Is(err, errTokenUnusable) && a.Unread == nil:
			// The key was read ahead as free, but its token is used:
			// maybe by a twin of this request with the key, which
			// committed since (decisions §5 answers it 409 or its
			// replay, not 400 token). Learn by reserving the key.
			return s.reserveToSettle(ctx, res, err, taken)
		case errors.Is(err, ErrNotReserved):
			return s.settle(ctx, a, &res, err, taken) // the key may be another request's
		}
		return Outcome{}, s.release(ctx, res, err)
	}

	rec, reserved, err := s.store.ReserveIdempotency(ctx, res)
	if err != nil {
		return Outcome{}, err
	}
	if !reserved {
		return taken(rec)
	}
	op, err := prepare(body)
	if err == nil {
		var r Result
		if r, err = op(ctx, req); err == nil {
			return Outcome{Result: r, Answer: r.answer}, nil
		}
	}
	return Outcome{}, s.release(ctx, res, err)
}

// release frees the key of a request that stored nothing under it, so that
// the client may fix the request and retry with the same key, and returns
// the request's error.
func (s *Service) release(ctx context.Context, res paygate.IdempotencyReservation, err error) error {
	release := paygate.IdempotencyRelease{MerchantID: res.MerchantID, Mode: res.Mode, Key: res.Key}
	if rerr := s.store.Commit(context.WithoutCancel(ctx), paygate.Unit{Ops: []paygate.Op{release}}); rerr != nil {
		return &ReleaseError{Err: err, Release: rerr}
	}
	return err
}

// ResourceID returns the id of the resource an outcome's answer names (the
// refund of a refund's answer), a replayed one included; "" when none.
func (s *Service) ResourceID(o Outcome) string {
	return s.encoder.ResourceID(o.Answer)
}
