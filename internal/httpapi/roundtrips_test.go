package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/store/postgres"
	"github.com/paygate/paygate/internal/testenv"
)

// TestPaymentRoundTripsOnPostgres counts, on the wire, the round trips a
// captured test-mode payment makes to PostgreSQL through the real handler
// and wiring (decisions.md section 22): the key's authentication with the
// reservation and the insert (the key authenticated on this node before, so
// the insert verifies it); the outcome's unit with the sandbox's ledger
// entry. A replay and a GET are one each. A proxy between the store and the database counts them
// (testenv.RoundTrips).
func TestPaymentRoundTripsOnPostgres(t *testing.T) {
	t.Parallel()
	p := testenv.CountRoundTrips(t, testenv.PostgresSchema(t))
	st, err := postgres.Open(t.Context(), p.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	s := wireServer(t, st)

	// The first payment and GET prepare the connection's statements.
	warm := s.create(t, 1, "warm-"+id.New())
	if w := s.do(http.MethodGet, "/v1/payments/"+warm, s.secret, "", nil); w.Code != http.StatusOK {
		t.Fatalf("get: %d %s", w.Code, w.Body.String())
	}
	key := "counted-" + id.New()
	p.Start()
	paymentID := s.create(t, 2, key)
	if got := p.Stop(); got != 2 {
		t.Errorf("a captured test-mode payment: %d round trips, want 2", got)
	}
	p.Start()
	if w := s.do(http.MethodPost, "/v1/payments", s.secret, key, benchBody(2)); w.Code != http.StatusCreated {
		t.Fatalf("replay: %d %s", w.Code, w.Body.String())
	}
	if got := p.Stop(); got != 1 {
		t.Errorf("a replay: %d round trips, want 1", got)
	}
	p.Start()
	if w := s.do(http.MethodGet, "/v1/payments/"+paymentID, s.secret, "", nil); w.Code != http.StatusOK {
		t.Fatalf("get: %d %s", w.Code, w.Body.String())
	}
	if got := p.Stop(); got != 1 {
		t.Errorf("a GET: %d round trips, want 1", got)
	}
}
