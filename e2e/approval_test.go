package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSetApprovalWhileServing: `paygate providers set-approval` changes a
// sandbox's approval rate on a running node within a second, as a drain
// does; the test cards keep their meaning, and --clear puts the configured
// rate back.
func TestSetApprovalWhileServing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db, m, g := startWithMerchant(t, e, "Approval Ltd", "--rate-limit-test", "1000")
		key := m.TestSecretKey
		// other pays EUR with a card outside the test-card table and
		// returns the answer's status code.
		other := func() int {
			t.Helper()
			return g.call(http.MethodPost, "/v1/payments", key, paymentBody("4111111111111111", "10.00", "EUR")).Status
		}
		if status := other(); status != http.StatusCreated {
			t.Fatalf("before the override: %d", status)
		}

		mustCLI(t, nil, "providers", "set-approval", "--provider", "sandbox-eu", "--rate", "0", "--database-url", db)
		setAt := time.Now()
		eventually(t, 5*time.Second, "sandbox-eu to decline every card outside the table", func() bool {
			return other() == http.StatusBadRequest
		})
		t.Logf("override in force after %s", time.Since(setAt))
		r := g.call(http.MethodPost, "/v1/payments", key, paymentBody("4111111111111111", "11.00", "EUR"))
		expect(t, r, http.StatusBadRequest, "CARD_DECLINED")
		if !strings.Contains(string(r.Raw), "generic_decline") {
			t.Fatalf("declined without generic_decline: %s", r.Raw)
		}
		// The test table keeps its meaning.
		if by := payEUR(t, g, key); by != "sandbox-eu" {
			t.Fatalf("4242 went to %s", by)
		}

		mustCLI(t, nil, "providers", "set-approval", "--provider", "sandbox-eu", "--clear", "--database-url", db)
		eventually(t, 5*time.Second, "the configured approval rate back", func() bool {
			return other() == http.StatusCreated
		})
	})
}
