package httpapi

import (
	"context"
	"fmt"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
)

// authenticate authenticates the API key of a request (header is its
// X-API-Key) and reads what the request needs beside it (reads) in the same
// round trip when the store can (paygate.RequestReader), into st: the
// Idempotency-Key's record for createPayment, the payment for getPayment.
// This is the one place that uses the capability. What was not read so (the
// store cannot, or the read beside the key failed) is left unset, and the
// request reads it on its own after the rate limit: the runner reserves the
// key before validation, getPayment reads the payment. So a failure beside
// the key never overtakes 401 or 429, and a request has one code path
// whether or not the store offers the capability.
func (s *Server) authenticate(ctx context.Context, st *reqState, header string, reads paygate.RequestReads) (paygate.APIKey, error) {
	rr, ok := s.cfg.Store.(paygate.RequestReader)
	if !ok || reads == (paygate.RequestReads{}) {
		return s.cfg.Auth.Authenticate(ctx, header)
	}
	key, data, err := s.readWithKey(ctx, rr, header, reads)
	if err != nil || data.Err != nil {
		return key, err
	}
	if reads.IdempotencyKey != "" {
		st.ahead = &payment.ReadAhead{Record: data.Record}
	}
	st.payment = data.Payment
	return key, nil
}

// readWithKey authenticates the API key of header and reads reads with it,
// in one round trip.
func (s *Server) readWithKey(ctx context.Context, rr paygate.RequestReader, header string, reads paygate.RequestReads) (paygate.APIKey, paygate.RequestData, error) {
	var data paygate.RequestData
	key, err := s.cfg.Auth.AuthenticateBy(header, func(hash []byte) (paygate.APIKey, error) {
		k, d, err := rr.APIKeyAndRequest(ctx, hash, reads)
		data = d
		return k, err
	})
	return key, data, err
}

// knownPayer returns the key of a POST /v1/payments (reads asks for its
// idempotency record) whose API key authenticated on this node before
// (auth.Authenticator.Known), and the request's read-ahead: nothing was
// read, and the runner authenticates the key and reads the record
// (payment.ReadAhead.Unread) whenever something other than the payment's
// insert, which verifies the key itself (decisions §22), would answer.
// ok is false when the store cannot read the record with the key
// (paygate.RequestReader).
func (s *Server) knownPayer(header string, reads paygate.RequestReads) (paygate.APIKey, *payment.ReadAhead, bool) {
	if reads.IdempotencyKey == "" {
		return paygate.APIKey{}, nil, false
	}
	rr, ok := s.cfg.Store.(paygate.RequestReader)
	if !ok {
		return paygate.APIKey{}, nil, false
	}
	key, ok := s.cfg.Auth.Known(header)
	if !ok || s.recent.seen(key.MerchantID, key.Mode, reads.IdempotencyKey) {
		// A key used here before is most likely a retry: read its
		// record with the API key, and answer a replay from it.
		return paygate.APIKey{}, nil, false
	}
	return key, &payment.ReadAhead{Unread: func(ctx context.Context) (*paygate.IdempotencyRecord, error) {
		_, data, err := s.readWithKey(ctx, rr, header, reads)
		switch {
		case err != nil:
			return nil, err
		case data.Err != nil:
			return nil, fmt.Errorf("%w: %w", payment.ErrRecordUnread, data.Err)
		}
		return data.Record, nil
	}}, true
}
