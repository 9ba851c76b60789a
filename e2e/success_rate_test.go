package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/testenv"
)

// scoresTable is the scores part of `paygate providers --json`.
type scoresTable struct {
	Scores []struct {
		Provider string  `json:"provider"`
		Currency string  `json:"currency"`
		Brand    string  `json:"brand"`
		Attempts int64   `json:"attempts"`
		Approved int64   `json:"approved"`
		Score    float64 `json:"score"`
		Share    float64 `json:"share"`
	} `json:"scores"`
}

// TestSuccessRateTwoNodesRedis: two nodes on one database and one Redis
// route EUR between two sandboxes that differ in approval rate with
// strategy success_rate (decisions §21). Traffic moves to the better one
// on the node that learns it, the other node starts from the shared scores
// instead of exploring afresh, and `paygate providers` shows the scores.
func TestSuccessRateTwoNodesRedis(t *testing.T) {
	t.Parallel()
	redisURL := testenv.RedisURL(t)
	db := postgresEngine().url(t)
	// Provider ids of this run only: the scores in Redis outlive a run.
	var b [4]byte
	_, _ = rand.Read(b[:])
	run := hex.EncodeToString(b[:])
	poor, good := "poor-"+run, "good-"+run
	cfg := writeConfig(t, fmt.Sprintf(`
providers:
  - id: %[1]s
    kind: sandbox
    sandbox: {approvalRate: 0.4}
  - id: %[2]s
    kind: sandbox
    sandbox: {approvalRate: 0.95}
routes:
  test:
    EUR:
      providers: [%[1]s, %[2]s]
      strategy: success_rate
      window: 50
      explore: 5
      minSamples: 10
    default: [%[2]s]
`, poor, good))
	m := createMerchant(t, db, "Success Rate Ltd")
	g1 := startGateway(t, db, "--config", cfg, "--redis-url", redisURL, "--rate-limit-test", "10000")
	g2 := startGateway(t, db, "--config", cfg, "--redis-url", redisURL, "--rate-limit-test", "10000")

	// A Visa card outside the test-card table: the approval rate decides.
	pay := func(g *gateway) string {
		t.Helper()
		r := g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, paymentBody("4111111111111111", "10.00", "EUR"))
		// Captured (201) or declined by the approval rate (400
		// CARD_DECLINED, generic_decline): either names the payment.
		if r.Status == http.StatusCreated {
			p, _ := r.Data()["provider"].(string)
			return p
		}
		if r.Status != http.StatusBadRequest || r.Err()["name"] != "CARD_DECLINED" {
			t.Fatalf("payment: %d %s", r.Status, r.Raw)
		}
		return providerOf(t, g, m.TestSecretKey, r)
	}

	// Node 1 learns: both are explored, then the better one leads.
	count := func(g *gateway, n int) map[string]int {
		got := map[string]int{}
		for range n {
			got[pay(g)]++
		}
		return got
	}
	first := count(g1, 40)
	if first[poor] < 10 || first[good] < 10 {
		t.Fatalf("node 1's first 40 payments: %v, want each provider explored at least minSamples (10) times", first)
	}
	learned := count(g1, 60)
	if learned[good] < 48 {
		t.Fatalf("node 1 after learning: %v, want most payments at %s (approval 0.95 against 0.4)", learned, good)
	}
	// Node 2 has routed nothing: on its own scores it would send minSamples
	// (10) of its first payments to each provider; with the shared ones it
	// explores only explore percent (about 2 of 40).
	second := count(g2, 40)
	if second[poor] >= 10 {
		t.Fatalf("node 2's first 40 payments: %v, want the shared scores to send nearly all to %s", second, good)
	}
	t.Logf("node 1: %v then %v; node 2: %v", first, learned, second)

	// Both nodes write the scores; the command line shows them.
	var tab scoresTable
	eventually(t, 15*time.Second, "the scores in paygate providers", func() bool {
		tab = scoresTable{}
		mustCLI(t, &tab, "providers", "--json", "--database-url", db, "--config", cfg)
		n := 0
		for _, s := range tab.Scores {
			if (s.Provider == poor || s.Provider == good) && s.Currency == "EUR" && s.Brand == "visa" {
				n++
			}
		}
		return n == 2
	})
	for _, s := range tab.Scores {
		switch s.Provider {
		case good:
			if s.Attempts < 40 || s.Score < 0.8 || s.Share < 0.6 {
				t.Fatalf("%s's score: %+v", good, s)
			}
		case poor:
			if s.Attempts < 10 || s.Score > 0.75 || s.Share > 0.4 {
				t.Fatalf("%s's score: %+v", poor, s)
			}
		}
	}
}

// providerOf reads back the provider of a payment whose answer did not
// name it.
func providerOf(t *testing.T, g *gateway, key string, r response) string {
	t.Helper()
	id, _ := r.Data()["id"].(string)
	if id == "" {
		if e := r.Err(); e != nil {
			id, _ = e["transactionId"].(string)
		}
	}
	if id == "" {
		t.Fatalf("no payment id in %s", r.Raw)
	}
	got := g.call(http.MethodGet, "/v1/payments/"+id, key, nil)
	expect(t, got, http.StatusOK)
	p, _ := got.Data()["providerId"].(string)
	return p
}
