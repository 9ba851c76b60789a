package httpapi

import (
	"context"

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
	var data paygate.RequestData
	key, err := s.cfg.Auth.AuthenticateBy(header, func(hash []byte) (paygate.APIKey, error) {
		k, d, err := rr.APIKeyAndRequest(ctx, hash, reads)
		data = d
		return k, err
	})
	if err != nil || data.Err != nil {
		return key, err
	}
	if reads.IdempotencyKey != "" {
		st.ahead = &payment.ReadAhead{Record: data.Record}
	}
	st.payment = data.Payment
	return key, nil
}
