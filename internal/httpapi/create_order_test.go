package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
)

// noReadAheadStore hides the store's paygate.RequestReader: the server then
// reserves a payment's key before validation instead of reading its record
// with the API key.
type noReadAheadStore struct{ paygate.Store }

// failingReadStore reads API keys with the request, but the read beside the
// key fails: the server proceeds as without the capability.
type failingReadStore struct{ paygate.Store }

func (s failingReadStore) APIKeyAndRequest(ctx context.Context, hash []byte, _ paygate.RequestReads) (paygate.APIKey, paygate.RequestData, error) {
	k, err := paygate.OneAPIKey(s.APIKeys(ctx, paygate.APIKeyQuery{Hash: hash}))
	return k, paygate.RequestData{Err: errors.New("the read beside the key failed")}, err
}

// TestCreatePaymentOrderOfChecks checks decisions §1's order (idempotency
// before validation) for POST /v1/payments, with the key's record read
// alongside the API key and without that read.
func TestCreatePaymentOrderOfChecks(t *testing.T) {
	for name, wrap := range map[string]func(paygate.Store) paygate.Store{
		"readAhead":   func(s paygate.Store) paygate.Store { return s },
		"noReadAhead": func(s paygate.Store) paygate.Store { return noReadAheadStore{s} },
		"failed":      func(s paygate.Store) paygate.Store { return failingReadStore{s} },
	} {
		t.Run(name, func(t *testing.T) {
			s := newBenchServer(t, "sqlite", wrap)
			if _, ok := s.store.(paygate.RequestReader); ok == (name == "noReadAhead") {
				t.Fatalf("store %T: the wrapper did not do its job", s.store)
			}
			valid, invalid := benchBody(1), []byte(`{"amount":"1.001","currency":"EUR"}`)
			post := func(idemKey string, body []byte) *httpResult {
				w := s.do(http.MethodPost, "/v1/payments", s.secret, idemKey, body)
				return &httpResult{code: w.Code, replayed: w.Header().Get("Idempotent-Replayed"), body: w.Body.String()}
			}
			first := post("k1", valid)
			wantStatus(t, "first payment", first, http.StatusCreated)
			wantStatus(t, "invalid body, used key", post("k1", invalid), http.StatusConflict)
			replay := post("k1", valid)
			wantStatus(t, "replay", replay, http.StatusCreated)
			if replay.replayed != "true" || replay.body != first.body {
				t.Errorf("replay: header %q, body equal %v", replay.replayed, replay.body == first.body)
			}
			wantStatus(t, "invalid body, fresh key", post("k2", invalid), http.StatusBadRequest)
			wantStatus(t, "valid body, same fresh key", post("k2", benchBody(2)), http.StatusCreated)
		})
	}
}

type httpResult struct {
	code           int
	replayed, body string
}

func wantStatus(t *testing.T, what string, r *httpResult, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("%s: status %d, want %d: %s", what, r.code, code, r.body)
	}
}
