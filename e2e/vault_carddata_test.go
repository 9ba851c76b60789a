package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
)

// TestNoCardDataWithStoredCards extends TestNoCardDataAtRest to the vault:
// after saving cards, paying with them (every outcome), saveCard on card
// payments (3-D Secure too), refused requests, deletion and a rewrap, no
// card number and no CVV is in the database (every file of SQLite, every row
// of every PostgreSQL table), the logs, any event payload or any webhook
// body, in plain text, hex or base64.
func TestNoCardDataWithStoredCards(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		dir := t.TempDir()
		dbURL := e.url(t)
		if e.name == "sqlite" {
			dbURL = "sqlite:" + filepath.Join(dir, "paygate.db")
		}
		m := createMerchant(t, dbURL, "Vault PAN Ltd")

		var hooksMu sync.Mutex
		var hooks [][]byte
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			hooksMu.Lock()
			hooks = append(hooks, b)
			hooksMu.Unlock()
		}))
		defer receiver.Close()
		// The endpoint's signing secret is sealed under the key serve gets.
		oldKey, newKey := vaultKey(t), vaultKey(t)
		mustCLI(t, nil, "webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", receiver.URL, "--database-url", dbURL, "--vault-key", oldKey)

		g := startGateway(t, dbURL, "--vault-key", oldKey, "--rate-limit-test", "1000", "--log-level", "debug")
		key := m.TestSecretKey
		const cvv = "987"
		numbers := []string{"4242424242424242", "5555555555554444", "378282246310005", "6011111111111117",
			"4000000000000002", "4000000000000077", "4000000000000119", "4000000000000259",
			"4000000000005126", "4000000000009995", card3DS}
		cust := newCustomer(t, g, key, "cust-pan")
		var ids []string
		for _, n := range numbers {
			// Refused first: a CVV in a card to save, and an expired card.
			b := cardBody(n)
			b["card"].(map[string]any)["cvv"] = cvv
			expect(t, g.call(http.MethodPost, "/v1/customers/"+cust+"/cards", key, b), 400, "INVALID_REQUEST", "card.cvv")
			b = cardBody(n)
			b["card"].(map[string]any)["expiryYear"] = "20"
			expect(t, g.call(http.MethodPost, "/v1/customers/"+cust+"/cards", key, b), 400)

			ids = append(ids, saveStoredCard(t, g, key, cust, n)["id"].(string))
			g.call(http.MethodPost, "/v1/payments", key, storedCardPayment("cust-pan", ids[len(ids)-1]))

			// saveCard on a card payment with the CVV, for another customer.
			pb := paymentBody(n, "10.00", "EUR")
			pb["card"].(map[string]any)["cvv"] = cvv
			pb["customerId"], pb["saveCard"] = "cust-pan-2", true
			g.call(http.MethodPost, "/v1/payments", key, pb)
			pb["amount"] = "10.001" // refused: validation must not echo or log it
			g.call(http.MethodPost, "/v1/payments", key, pb)
		}
		// A 3-D Secure payment with saveCard, completed.
		pb := paymentBody(card3DS, "10.50", "EUR")
		pb["card"].(map[string]any)["cvv"] = cvv
		pb["customerId"], pb["saveCard"] = "cust-pan-3ds", true
		r := g.call(http.MethodPost, "/v1/payments", key, pb)
		if r.Status == http.StatusCreated && r.Data()["status"] == "pending_3ds" {
			raw := r.Data()["threeDsData"].(map[string]any)
			tds := threeDS{RedirectURL: raw["redirectUrl"].(string), Method: "POST", Parameters: map[string]string{}}
			for k, v := range raw["parameters"].(map[string]any) {
				tds.Parameters[k] = v.(string)
			}
			submit(t, challengeForms(t, openChallenge(t, tds).Body)["threeds-complete"])
		}
		expect(t, g.call(http.MethodDelete, "/v1/customers/"+cust+"/cards/"+ids[0], key, nil), 200)
		if _, errOut, code := cli(t, nil, "vault", "rewrap", "--database-url", dbURL, "--vault-key", newKey+","+oldKey); code != 0 {
			t.Fatalf("rewrap: %s", errOut)
		}
		time.Sleep(500 * time.Millisecond) // let due webhooks go out
		if err := g.Stop(); err != nil {
			t.Fatal(err)
		}

		blobs := map[string][]byte{"logs": []byte(g.Logs())}
		ctx := context.Background()
		st, err := store.Open(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := st.Events(ctx, paygate.EventQuery{MerchantID: m.MerchantID, Mode: paygate.ModeTest})
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) < len(numbers) {
			t.Fatalf("only %d events", len(evs))
		}
		for _, ev := range evs {
			blobs["event "+ev.ID] = ev.Payload
		}
		hooksMu.Lock()
		for i, h := range hooks {
			blobs[fmt.Sprintf("webhook body %d", i)] = h
		}
		delivered := len(hooks)
		hooksMu.Unlock()
		if e.name == "sqlite" {
			entries, _ := os.ReadDir(dir)
			for _, f := range entries {
				raw, err := os.ReadFile(filepath.Join(dir, f.Name()))
				if err != nil {
					t.Fatal(err)
				}
				blobs["file "+f.Name()] = raw
			}
			if blobs["file paygate.db"] == nil {
				t.Fatal("no database file")
			}
		} else {
			blobs["database"] = dumpPostgres(t, e, dbURL)
		}

		// The scan sees the data: the masked summaries are there.
		db := blobs["database"]
		if e.name == "sqlite" {
			db = blobs["file paygate.db"]
			db = append(db, blobs["file paygate.db-wal"]...)
		}
		if !bytes.Contains(db, []byte("Ada Lovelace")) || !bytes.Contains(db, []byte("0005")) {
			t.Fatal("the database dump does not show the stored cards' summaries; the scan would see nothing")
		}
		t.Logf("scanned %d blobs: %d events, %d webhook bodies", len(blobs), len(evs), delivered)

		for name, raw := range blobs {
			for _, n := range numbers {
				for form, needle := range encodings(n) {
					if bytes.Contains(raw, []byte(needle)) {
						t.Errorf("%s contains card number %s… (%s)", name, n[:6], form)
					}
				}
			}
			for form, needle := range encodings(`"` + cvv + `"`) {
				if bytes.Contains(raw, []byte(needle)) {
					t.Errorf("%s contains the CVV (%s)", name, form)
				}
			}
			if bytes.Contains(bytes.ToLower(raw), []byte(`"cvv"`)) {
				t.Errorf("%s contains a cvv field", name)
			}
		}
	})
}

// encodings returns s as it could appear at rest: plain, hex, base64.
func encodings(s string) map[string]string {
	return map[string]string{
		"plain":  s,
		"hex":    hex.EncodeToString([]byte(s)),
		"base64": base64.StdEncoding.EncodeToString([]byte(s)),
	}
}

// dumpPostgres returns every row of every table of the test's schema as
// text (bytea as hex).
func dumpPostgres(t *testing.T, e engine, dbURL string) []byte {
	t.Helper()
	db, _ := rawDB(t, e, dbURL)
	tables := tableNames(t, e, db)
	if len(tables) < 5 {
		t.Fatalf("found only tables %v", tables)
	}
	var out bytes.Buffer
	for _, table := range tables {
		rows, err := db.Query(`SELECT t::text FROM "` + strings.ReplaceAll(table, `"`, `""`) + `" t`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var row string
			if err := rows.Scan(&row); err != nil {
				t.Fatal(err)
			}
			out.WriteString(table + " " + row + "\n")
		}
		rows.Close()
	}
	if !bytes.Contains(out.Bytes(), []byte("stored_cards")) {
		t.Fatal("no stored card rows in the dump")
	}
	return out.Bytes()
}
