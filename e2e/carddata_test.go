package e2e

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoCardDataAtRest runs payments of every outcome, with cards and with
// card tokens, then searches the
// database files and the server's logs for the card numbers and CVVs.
// tokenPaymentStatus is the status of a payment with a token of the test
// card, as TestNoCardDataAtRest pays them.
var tokenPaymentStatus = map[string]int{
	"4242424242424242": http.StatusCreated, "378282246310005": http.StatusCreated,
	"4000000000000119": http.StatusBadGateway, "4000000000000077": http.StatusCreated,
}

func TestNoCardDataAtRest(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "paygate.db")
	db := "sqlite:" + dbPath
	m := createMerchant(t, db, "PAN Ltd")
	g := startGateway(t, db, "--rate-limit-test", "1000", "--log-level", "debug")
	numbers := []string{"4242424242424242", "5555555555554444", "378282246310005", "4000000000000002",
		"4000000000000119", "4000000000000259", "4000000000000077", "4000000000005126"}
	for _, n := range numbers {
		b := paymentBody(n, "10.00", "EUR")
		b["card"].(map[string]any)["cvv"] = "987"
		g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, b)
		// An invalid request too: validation must not echo or log it.
		bad := paymentBody(n, "10.001", "EUR")
		g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, bad)
	}
	// Card tokens: every number tokenized with its CVV, one in two paid
	// with; the others stay sealed in the database until they expire.
	for i, n := range numbers {
		b := map[string]any{"card": paymentBody(n, "1.00", "EUR")["card"]}
		if len(n) == 16 {
			b["card"].(map[string]any)["cvv"] = "987"
		}
		r := g.call(http.MethodPost, "/v1/tokens", m.TestPublicKey, b, "Idempotency-Key", "")
		if r.Status != http.StatusCreated {
			t.Fatalf("token of %s…: %d %s", n[:6], r.Status, r.Raw)
		}
		if i%2 == 0 {
			pay := paymentBody(n, "10.00", "EUR")
			delete(pay, "card")
			pay["paymentMethod"], pay["token"] = "token", r.Data()["id"]
			// The token pays: the payment is made (a test card's own
			// outcome, 201 for the cards that approve), never refused
			// as a token.
			pr := g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, pay)
			if want := tokenPaymentStatus[n]; pr.Status != want {
				t.Fatalf("payment with the token of %s…: %d %s, want %d", n[:6], pr.Status, pr.Raw, want)
			}
		}
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	var blobs = map[string][]byte{"logs": []byte(g.Logs())}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		blobs[e.Name()] = raw
	}
	if len(blobs) < 2 {
		t.Fatal("no database files found")
	}
	for name, raw := range blobs {
		for _, n := range numbers {
			if bytes.Contains(raw, []byte(n)) {
				t.Errorf("%s contains card number %s…", name, n[:6])
			}
		}
		if name == "logs" && strings.Contains(string(raw), `"987"`) {
			t.Errorf("logs contain the CVV")
		}
	}
}
