package e2e

import (
	"bytes"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Stored cards end to end (decisions.md section 13): the API, payments with
// stored cards, saveCard, tampering with the vault's rows, and rotation of
// the master key.

// vaultKey returns a fresh master key, base64 as configured.
func vaultKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// cardBody is the body of POST /v1/customers/{id}/cards.
func cardBody(number string) map[string]any {
	return map[string]any{"card": map[string]any{
		"number": number, "expiryMonth": "12", "expiryYear": futureYear(), "holderName": "Ada Lovelace",
	}}
}

// storedCardPayment is a stored_card payment body.
func storedCardPayment(customerExternalID, cardID string) map[string]any {
	return map[string]any{
		"amount": "10.00", "currency": "EUR", "paymentMethod": "stored_card",
		"customerId": customerExternalID, "storedCardId": cardID,
	}
}

// newCustomer creates a customer and returns its id.
func newCustomer(t *testing.T, g *gateway, key, externalID string) string {
	t.Helper()
	r := g.call(http.MethodPost, "/v1/customers", key, map[string]any{"externalId": externalID})
	expect(t, r, http.StatusCreated)
	return r.Data()["id"].(string)
}

// saveStoredCard saves a card and returns the stored card.
func saveStoredCard(t *testing.T, g *gateway, key, customerID, number string) map[string]any {
	t.Helper()
	r := g.call(http.MethodPost, "/v1/customers/"+customerID+"/cards", key, cardBody(number))
	expect(t, r, http.StatusCreated)
	return r.Data()
}

// listCards returns the ids of the customer's stored cards, as listed.
func listCards(t *testing.T, g *gateway, key, customerID string) []string {
	t.Helper()
	r := g.call(http.MethodGet, "/v1/customers/"+customerID+"/cards", key, nil)
	expect(t, r, http.StatusOK)
	list, ok := r.Body["data"].([]any)
	if !ok {
		t.Fatalf("list is not an array: %s", r.Raw)
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, c.(map[string]any)["id"].(string))
	}
	return ids
}

func TestStoredCards(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db := e.url(t)
		m := createMerchant(t, db, "Vault Ltd")
		other := createMerchant(t, db, "Other Ltd")
		g := startGateway(t, db, "--rate-limit-test", "1000")
		key := m.TestSecretKey
		cust := newCustomer(t, g, key, "cust-vault")
		cards := "/v1/customers/" + cust + "/cards"

		var visa map[string]any
		t.Run("Save", func(t *testing.T) {
			r := g.call(http.MethodPost, cards, key, cardBody("4242424242424242"), "Idempotency-Key", "save-visa")
			expect(t, r, http.StatusCreated)
			visa = r.Data()
			wantKeys(t, r, "id", "customerId", "brand", "last4", "expiryMonth", "expiryYear", "holderName", "createdAt")
			if visa["customerId"] != cust || visa["brand"] != "visa" || visa["last4"] != "4242" ||
				visa["expiryMonth"] != "12" || visa["expiryYear"] != futureYear() || visa["holderName"] != "Ada Lovelace" {
				t.Fatalf("stored card: %s", r.Raw)
			}
			if bytes.Contains(r.Raw, []byte("4242424242424242")) || bytes.Contains(r.Raw, []byte("424242")) {
				t.Fatalf("the answer shows more than the last four digits: %s", r.Raw)
			}
			// A replay is the same bytes.
			again := g.call(http.MethodPost, cards, key, cardBody("4242424242424242"), "Idempotency-Key", "save-visa")
			if !bytes.Equal(again.Raw, r.Raw) || again.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("replay: %s", again.Raw)
			}
			// The same number saved again (new request) is the same card.
			dup := g.call(http.MethodPost, cards, key, cardBody("4242424242424242"))
			expect(t, dup, http.StatusCreated)
			if dup.Data()["id"] != visa["id"] || dup.Data()["createdAt"] != visa["createdAt"] {
				t.Fatalf("re-save made another card: %s vs %s", dup.Raw, r.Raw)
			}
			mc := saveStoredCard(t, g, key, cust, "5555555555554444")
			if mc["brand"] != "mastercard" || mc["last4"] != "4444" || mc["id"] == visa["id"] {
				t.Fatalf("second card: %v", mc)
			}
			if ids := listCards(t, g, key, cust); !slices.Equal(ids, []string{mc["id"].(string), visa["id"].(string)}) {
				t.Fatalf("list %v, want newest first", ids)
			}
		})

		t.Run("SaveRefusals", func(t *testing.T) {
			withCVV := cardBody("4242424242424242")
			withCVV["card"].(map[string]any)["cvv"] = "123"
			for _, c := range []struct {
				name  string
				body  any
				param string
			}{
				{"CVV", withCVV, "card.cvv"},
				{"NoCard", map[string]any{}, "card"},
				{"Luhn", cardBody("4242424242424241"), "card.number"},
				{"Short", cardBody("4242"), "card.number"},
				{"Expired", map[string]any{"card": map[string]any{"number": "4242424242424242", "expiryMonth": "01", "expiryYear": "20", "holderName": "A"}}, "card.expiryYear"},
				{"FourDigitYear", map[string]any{"card": map[string]any{"number": "4242424242424242", "expiryMonth": "01", "expiryYear": "2040", "holderName": "A"}}, "card.expiryYear"},
				{"NoHolder", map[string]any{"card": map[string]any{"number": "4242424242424242", "expiryMonth": "01", "expiryYear": futureYear()}}, "card.holderName"},
				{"UnknownField", map[string]any{"card": cardBody("4242424242424242")["card"], "saveCard": true}, "saveCard"},
			} {
				t.Run(c.name, func(t *testing.T) {
					r := g.call(http.MethodPost, cards, key, c.body)
					expect(t, r, http.StatusBadRequest, "INVALID_REQUEST", c.param)
					if bytes.Contains(r.Raw, []byte("424242")) {
						t.Fatalf("the error echoes the number: %s", r.Raw)
					}
				})
			}
			// The CVV is refused even though the rest is valid; the key is
			// free again for the corrected request.
			expect(t, g.call(http.MethodPost, cards, key, withCVV, "Idempotency-Key", "cvv-1"), 400, "INVALID_REQUEST", "card.cvv")
			expect(t, g.call(http.MethodPost, cards, key, cardBody("378282246310005"), "Idempotency-Key", "cvv-1"), 201)
			// Without an Idempotency-Key, as every POST.
			expect(t, g.call(http.MethodPost, cards, key, cardBody("4242424242424242"), "Idempotency-Key", ""), 400, "INVALID_REQUEST", "Idempotency-Key")
		})

		t.Run("NotFound", func(t *testing.T) {
			missing := "/v1/customers/00000000-0000-4000-8000-000000000000/cards"
			expect(t, g.call(http.MethodPost, missing, key, cardBody("4242424242424242")), 404, "NOT_FOUND")
			expect(t, g.call(http.MethodGet, missing, key, nil), 404, "NOT_FOUND")
			expect(t, g.call(http.MethodPost, "/v1/customers/not-a-uuid/cards", key, cardBody("4242424242424242")), 404, "NOT_FOUND")
			// The customer of another mode or merchant is invisible.
			for _, k := range []string{m.LiveSecretKey, other.TestSecretKey} {
				expect(t, g.call(http.MethodGet, cards, k, nil), 404, "NOT_FOUND")
				expect(t, g.call(http.MethodPost, cards, k, cardBody("4242424242424242")), 404, "NOT_FOUND")
				expect(t, g.call(http.MethodDelete, cards+"/"+visa["id"].(string), k, nil), 404, "NOT_FOUND")
			}
			// A card of another customer of the same merchant.
			cust2 := newCustomer(t, g, key, "cust-vault-2")
			expect(t, g.call(http.MethodDelete, "/v1/customers/"+cust2+"/cards/"+visa["id"].(string), key, nil), 404, "NOT_FOUND")
			if ids := listCards(t, g, key, cust2); len(ids) != 0 {
				t.Fatalf("another customer lists %v", ids)
			}
			// Methods.
			r := g.call(http.MethodGet, cards+"/"+visa["id"].(string), key, nil)
			expect(t, r, 405, "METHOD_NOT_ALLOWED")
			if r.Header.Get("Allow") != "DELETE" {
				t.Errorf("Allow %q, want DELETE", r.Header.Get("Allow"))
			}
			r = g.call(http.MethodDelete, cards, key, nil)
			expect(t, r, 405, "METHOD_NOT_ALLOWED")
			if r.Header.Get("Allow") != "GET, POST" {
				t.Errorf("Allow %q, want GET, POST", r.Header.Get("Allow"))
			}
			expect(t, g.call(http.MethodDelete, cards+"/not-a-uuid", key, nil), 404, "NOT_FOUND")
			// Without a key, 401 first.
			expect(t, g.call(http.MethodGet, cards, "", nil), 401, "UNAUTHORIZED")
		})

		t.Run("Pay", func(t *testing.T) {
			r := g.call(http.MethodPost, "/v1/payments", key, storedCardPayment("cust-vault", visa["id"].(string)), "Idempotency-Key", "pay-stored")
			expect(t, r, http.StatusCreated)
			d := r.Data()
			if d["status"] != "captured" || d["storedCardId"] != visa["id"] || d["provider"] != "sandbox-eu" {
				t.Fatalf("stored card payment: %s", r.Raw)
			}
			again := g.call(http.MethodPost, "/v1/payments", key, storedCardPayment("cust-vault", visa["id"].(string)), "Idempotency-Key", "pay-stored")
			if !bytes.Equal(again.Raw, r.Raw) || again.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("replay: %s", again.Raw)
			}
			rec := g.call(http.MethodGet, "/v1/payments/"+d["id"].(string), key, nil)
			expect(t, rec, http.StatusOK)
			if rec.Data()["paymentMethod"] != "stored_card" || rec.Data()["storedCardId"] != visa["id"] || rec.Data()["customerId"] != cust {
				t.Fatalf("payment record: %s", rec.Raw)
			}
			// The test-card table applies to the stored number.
			for _, c := range []struct {
				number, status, name, decline string
				code                          int
			}{
				{"4000000000000077", "authorized", "", "", 201},
				{"4000000000000002", "", "CARD_DECLINED", "generic_decline", 400},
				{"4000000000009995", "", "CARD_DECLINED", "insufficient_funds", 400},
				{"4000000000000119", "", "PROVIDER_ERROR", "", 502},
				{"4000000000000259", "captured", "", "", 201},
			} {
				sc := saveStoredCard(t, g, key, cust, c.number)
				r := g.call(http.MethodPost, "/v1/payments", key, storedCardPayment("cust-vault", sc["id"].(string)))
				if c.code != 201 {
					expect(t, r, c.code, c.name)
					if c.decline != "" && r.Err()["declineCode"] != c.decline {
						t.Errorf("%s: decline code %v, want %s", c.number, r.Err()["declineCode"], c.decline)
					}
					continue
				}
				expect(t, r, c.code)
				if r.Data()["status"] != c.status {
					t.Errorf("%s: status %v, want %s", c.number, r.Data()["status"], c.status)
				}
			}
		})

		t.Run("PayRefusals", func(t *testing.T) {
			id := visa["id"].(string)
			withCard := storedCardPayment("cust-vault", id)
			withCard["card"] = paymentBody("4242424242424242", "1.00", "EUR")["card"]
			withSave := storedCardPayment("cust-vault", id)
			withSave["saveCard"] = true
			noID := storedCardPayment("cust-vault", id)
			delete(noID, "storedCardId")
			cardWithID := paymentBody("4242424242424242", "10.00", "EUR")
			cardWithID["storedCardId"] = id
			otherCust := storedCardPayment("cust-vault", visa["id"].(string))
			otherCust["customerId"] = "someone-else"
			for _, c := range []struct {
				name  string
				key   string
				body  map[string]any
				param string
			}{
				{"NoStoredCardID", key, noID, "storedCardId"},
				{"WithCard", key, withCard, "card"},
				{"SaveCard", key, withSave, "saveCard"},
				{"NotUUID", key, storedCardPayment("cust-vault", "card-1"), "storedCardId"},
				{"Unknown", key, storedCardPayment("cust-vault", "00000000-0000-4000-8000-000000000000"), "storedCardId"},
				{"OtherCustomer", key, otherCust, "storedCardId"},
				{"NoSuchCustomer", key, storedCardPayment("nobody-at-all", id), "storedCardId"},
				{"OtherMode", m.LiveSecretKey, storedCardPayment("cust-vault", id), "storedCardId"},
				{"OtherMerchant", other.TestSecretKey, storedCardPayment("cust-vault", id), "storedCardId"},
				{"CardPaymentWithStoredCardID", key, cardWithID, "storedCardId"},
			} {
				t.Run(c.name, func(t *testing.T) {
					expect(t, g.call(http.MethodPost, "/v1/payments", c.key, c.body), 400, "INVALID_REQUEST", c.param)
				})
			}
		})

		t.Run("SaveCardOnPayment", func(t *testing.T) {
			body := paymentBody("6011111111111117", "20.00", "EUR")
			body["customerId"] = "cust-vault"
			body["saveCard"] = true
			r := g.call(http.MethodPost, "/v1/payments", key, body)
			expect(t, r, http.StatusCreated)
			sid, _ := r.Data()["storedCardId"].(string)
			if r.Data()["status"] != "captured" || sid == "" {
				t.Fatalf("saveCard payment: %s", r.Raw)
			}
			rec := g.call(http.MethodGet, "/v1/payments/"+r.Data()["id"].(string), key, nil)
			if rec.Data()["storedCardId"] != sid || rec.Data()["paymentMethod"] != "card" {
				t.Fatalf("payment record: %s", rec.Raw)
			}
			if ids := listCards(t, g, key, cust); ids[0] != sid {
				t.Fatalf("the saved card is not listed first: %v", ids)
			}
			// The card now pays without its number.
			expect(t, g.call(http.MethodPost, "/v1/payments", key, storedCardPayment("cust-vault", sid)), 201)

			// An authorized payment saves too; a number already stored is
			// that card.
			body = paymentBody("4242424242424242", "20.00", "EUR")
			body["customerId"], body["saveCard"] = "cust-vault", true
			r = g.call(http.MethodPost, "/v1/payments", key, body)
			expect(t, r, http.StatusCreated)
			if r.Data()["storedCardId"] != visa["id"] {
				t.Fatalf("saveCard of a stored number: %s (want %s)", r.Raw, visa["id"])
			}
			body = paymentBody("4000000000000077", "20.00", "EUR")
			body["customerId"], body["saveCard"] = "cust-new-saver", true
			r = g.call(http.MethodPost, "/v1/payments", key, body)
			expect(t, r, http.StatusCreated)
			if r.Data()["status"] != "authorized" || r.Data()["storedCardId"] == nil {
				t.Fatalf("authorized saveCard: %s", r.Raw)
			}

			// A declined or failed payment stores nothing.
			var decliner string
			for _, n := range []string{"4000000000000002", "4000000000000119"} {
				body := paymentBody(n, "20.00", "EUR")
				body["customerId"], body["saveCard"] = "cust-decliner", true
				r := g.call(http.MethodPost, "/v1/payments", key, body)
				if r.Status == http.StatusCreated || bytes.Contains(r.Raw, []byte("storedCardId")) {
					t.Fatalf("%s: %s", n, r.Raw)
				}
				rec := g.call(http.MethodGet, "/v1/payments/"+r.Err()["transactionId"].(string), key, nil)
				if _, ok := rec.Data()["storedCardId"]; ok {
					t.Fatalf("failed payment links a card: %s", rec.Raw)
				}
				decliner = rec.Data()["customerId"].(string)
			}
			if ids := listCards(t, g, key, decliner); len(ids) != 0 {
				t.Fatalf("a declined card was stored: %v", ids)
			}
		})

		t.Run("Delete", func(t *testing.T) {
			sc := saveStoredCard(t, g, key, cust, "3530111333300000")
			path := cards + "/" + sc["id"].(string)
			// No Idempotency-Key needed (decisions §5 asks it of POSTs).
			r := g.call(http.MethodDelete, path, key, nil)
			expect(t, r, http.StatusOK)
			if string(r.Raw) != `{"data":{"id":"`+sc["id"].(string)+`","deleted":true}}` {
				t.Fatalf("delete answer: %s", r.Raw)
			}
			expect(t, g.call(http.MethodDelete, path, key, nil), 404, "NOT_FOUND")
			if slices.Contains(listCards(t, g, key, cust), sc["id"].(string)) {
				t.Fatal("a deleted card is listed")
			}
			expect(t, g.call(http.MethodPost, "/v1/payments", key, storedCardPayment("cust-vault", sc["id"].(string))), 400, "INVALID_REQUEST", "storedCardId")
			// Saving the number again makes a new card.
			again := saveStoredCard(t, g, key, cust, "3530111333300000")
			if again["id"] == sc["id"] || again["brand"] != "jcb" {
				t.Fatalf("re-saved deleted card: %v", again)
			}
		})
	})
}

// TestStoredCardAfterThreeDS saves the card of a 3-D Secure payment once the
// challenge succeeds, and not when it fails.
func TestStoredCardAfterThreeDS(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		_, m, g := startWithMerchant(t, e, "3DS Saver")
		key := m.TestSecretKey
		for _, c := range []struct {
			form  string
			saved bool
		}{{"threeds-complete", true}, {"threeds-fail", false}} {
			t.Run(c.form, func(t *testing.T) {
				ext := "cust-" + c.form
				body := paymentBody(card3DS, "10.50", "EUR")
				body["customerId"], body["saveCard"] = ext, true
				r := g.call(http.MethodPost, "/v1/payments", key, body)
				expect(t, r, http.StatusCreated)
				if r.Data()["status"] != "pending_3ds" || r.Data()["storedCardId"] != nil {
					t.Fatalf("creation answer: %s", r.Raw)
				}
				pid := r.Data()["id"].(string)
				rec := getPayment(t, g, key, pid)
				custID := rec["customerId"].(string)
				if ids := listCards(t, g, key, custID); len(ids) != 0 {
					t.Fatalf("card listed before 3-D Secure: %v", ids)
				}
				raw := r.Data()["threeDsData"].(map[string]any)
				tds := threeDS{RedirectURL: raw["redirectUrl"].(string), Method: "POST", Parameters: map[string]string{}}
				for k, v := range raw["parameters"].(map[string]any) {
					tds.Parameters[k] = v.(string)
				}
				submit(t, challengeForms(t, openChallenge(t, tds).Body)[c.form])
				rec = getPayment(t, g, key, pid)
				ids := listCards(t, g, key, custID)
				if !c.saved {
					if rec["status"] != "failed" || rec["storedCardId"] != nil || len(ids) != 0 {
						t.Fatalf("failed challenge: record %v, cards %v", rec, ids)
					}
					return
				}
				if rec["status"] != "captured" || len(ids) != 1 || rec["storedCardId"] != ids[0] {
					t.Fatalf("completed challenge: record %v, cards %v", rec, ids)
				}
				// The saved card pays (the same 3-D Secure card asks again).
				p := g.call(http.MethodPost, "/v1/payments", key, storedCardPayment(ext, ids[0]))
				expect(t, p, http.StatusCreated)
				if p.Data()["status"] != "pending_3ds" {
					t.Fatalf("stored 3-D Secure card: %s", p.Raw)
				}
			})
		}
	})
}

// TestStoredCardAfterRecovery saves the card of a payment whose outcome was
// unknown (the provider timed out) once recovery finds it captured.
func TestStoredCardAfterRecovery(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		_, m, g := startWithMerchant(t, e, "Recovery Saver", "--recovery-interval", "1s")
		key := m.TestSecretKey
		body := paymentBody("4000000000000705", "10.50", "EUR")
		body["customerId"], body["saveCard"] = "cust-timeout", true
		r := g.call(http.MethodPost, "/v1/payments", key, body, "Idempotency-Key", "timeout-save")
		expect(t, r, http.StatusAccepted)
		if r.Data()["storedCardId"] != nil {
			t.Fatalf("creation answer: %s", r.Raw)
		}
		pid := r.Data()["id"].(string)
		var rec map[string]any
		eventually(t, 30*time.Second, "recovery to capture the payment", func() bool {
			rec = getPayment(t, g, key, pid)
			return rec["status"] == "captured"
		})
		ids := listCards(t, g, key, rec["customerId"].(string))
		if len(ids) != 1 || rec["storedCardId"] != ids[0] {
			t.Fatalf("after recovery: record %v, cards %v", rec, ids)
		}
		// The key keeps the 202 the client was given (decisions §15); the
		// record above is where the card shows.
		again := g.call(http.MethodPost, "/v1/payments", key, body, "Idempotency-Key", "timeout-save")
		expect(t, again, http.StatusAccepted)
		if !bytes.Equal(again.Raw, r.Raw) {
			t.Fatalf("replayed answer: %s, want %s", again.Raw, r.Raw)
		}
	})
}

// rawDB opens the gateway's database directly, as an attacker with access
// to the database (or its backup) would.
func rawDB(t *testing.T, e engine, dbURL string) (*sql.DB, func(string) string) {
	t.Helper()
	var db *sql.DB
	var err error
	placeholders := func(q string) string { return q }
	if e.name == "sqlite" {
		db, err = sql.Open("sqlite", strings.TrimPrefix(dbURL, "sqlite:")+"?_pragma=busy_timeout(10000)")
		placeholders = func(q string) string { return strings.ReplaceAll(q, "$", "?") }
	} else {
		db, err = sql.Open("pgx", dbURL)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, placeholders
}

// TestVaultTampering alters the vault's rows under a running gateway: every
// payment with an altered card fails closed with a 500 that says nothing, and
// the error log names the card, never its number.
func TestVaultTampering(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		dbURL := e.url(t)
		m := createMerchant(t, dbURL, "Tamper Ltd")
		vk := vaultKey(t)
		g := startGateway(t, dbURL, "--vault-key", vk, "--rate-limit-test", "1000")
		key := m.TestSecretKey
		cust := newCustomer(t, g, key, "cust-t")
		a := saveStoredCard(t, g, key, cust, "4242424242424242")["id"].(string)
		b := saveStoredCard(t, g, key, cust, "5555555555554444")["id"].(string)
		db, ph := rawDB(t, e, dbURL)
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := db.Exec(ph(q), args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		column := func(col, id string) []byte {
			t.Helper()
			var v []byte
			if err := db.QueryRow(ph("SELECT "+col+" FROM stored_cards WHERE id = $1"), id).Scan(&v); err != nil {
				t.Fatal(err)
			}
			return v
		}
		pay := func(cardID, idemKey string) response {
			t.Helper()
			return g.call(http.MethodPost, "/v1/payments", key, storedCardPayment("cust-t", cardID), "Idempotency-Key", idemKey)
		}
		failsClosed := func(name, cardID, idemKey string) {
			t.Helper()
			before := strings.Count(g.Logs(), "stored card could not be decrypted")
			r := pay(cardID, idemKey)
			expect(t, r, http.StatusInternalServerError, "INTERNAL_ERROR")
			if r.Err()["message"] != "an internal error occurred" {
				t.Errorf("%s: message %q leaks", name, r.Err()["message"])
			}
			// The log line may reach the harness just after the answer.
			eventually(t, 5*time.Second, name+": an error log line about the card", func() bool {
				return strings.Count(g.Logs(), "stored card could not be decrypted") == before+1
			})
		}

		ctA, ctB := column("ciphertext", a), column("ciphertext", b)
		wkA, wkB := column("wrapped_key", a), column("wrapped_key", b)
		restore := func() {
			exec("UPDATE stored_cards SET ciphertext = $1, wrapped_key = $2 WHERE id = $3", ctA, wkA, a)
			exec("UPDATE stored_cards SET ciphertext = $1, wrapped_key = $2 WHERE id = $3", ctB, wkB, b)
		}

		// Ciphertexts swapped between the two rows.
		exec("UPDATE stored_cards SET ciphertext = $1 WHERE id = $2", ctB, a)
		exec("UPDATE stored_cards SET ciphertext = $1 WHERE id = $2", ctA, b)
		failsClosed("swapped ciphertexts", a, "tamper-1")
		failsClosed("swapped ciphertexts", b, "tamper-2")
		restore()
		// Whole seals (wrapped key and ciphertext) swapped.
		exec("UPDATE stored_cards SET ciphertext = $1, wrapped_key = $2 WHERE id = $3", ctB, wkB, a)
		failsClosed("swapped seals", a, "tamper-3")
		restore()
		// One flipped byte in the ciphertext, then in the wrapped key.
		flipped := bytes.Clone(ctA)
		flipped[len(flipped)-5] ^= 0x20
		exec("UPDATE stored_cards SET ciphertext = $1 WHERE id = $2", flipped, a)
		failsClosed("flipped ciphertext byte", a, "tamper-4")
		restore()
		flipped = bytes.Clone(wkA)
		flipped[3] ^= 0x01
		exec("UPDATE stored_cards SET wrapped_key = $1 WHERE id = $2", flipped, a)
		failsClosed("flipped wrapped key byte", a, "tamper-5")
		restore()
		// A card moved to another customer of the merchant.
		cust2 := newCustomer(t, g, key, "cust-t2")
		exec("UPDATE stored_cards SET customer_id = $1 WHERE id = $2", cust2, a)
		r := g.call(http.MethodPost, "/v1/payments", key, storedCardPayment("cust-t2", a), "Idempotency-Key", "tamper-6")
		expect(t, r, http.StatusInternalServerError, "INTERNAL_ERROR")
		exec("UPDATE stored_cards SET customer_id = $1 WHERE id = $2", cust, a)

		// A 500 is not stored: once the row is repaired, the same key pays.
		ok := pay(a, "tamper-1")
		expect(t, ok, http.StatusCreated)
		if ok.Data()["status"] != "captured" {
			t.Fatalf("after repair: %s", ok.Raw)
		}
		if strings.Contains(g.Logs(), "4242424242424242") || strings.Contains(g.Logs(), "5555555555554444") {
			t.Fatal("the logs show a card number")
		}
		if err := g.Stop(); err != nil {
			t.Fatal(err)
		}

		// The wrong master key: the cards are unknown to it.
		g2 := startGateway(t, dbURL, "--vault-key", vaultKey(t))
		if !strings.Contains(g2.Logs(), "not configured") {
			t.Errorf("no warning about cards under a key that is not configured:\n%s", g2.Logs())
		}
		r = g2.call(http.MethodPost, "/v1/payments", key, storedCardPayment("cust-t", a))
		expect(t, r, http.StatusInternalServerError, "INTERNAL_ERROR")
		eventually(t, 5*time.Second, "an error log line for the unknown key", func() bool {
			return strings.Contains(g2.Logs(), "stored card could not be decrypted")
		})
	})
}

// TestVaultRotation rotates the master key: add a key, rewrap, drop the old
// key; every card still pays and is still recognised when saved again.
func TestVaultRotation(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		dbURL := e.url(t)
		m := createMerchant(t, dbURL, "Rotate Ltd")
		key := m.TestSecretKey
		oldKey, newKey := vaultKey(t), vaultKey(t)

		g := startGateway(t, dbURL, "--vault-key", oldKey)
		cust := newCustomer(t, g, key, "cust-r")
		numbers := []string{"4242424242424242", "5555555555554444", "378282246310005"}
		ids := map[string]string{}
		for _, n := range numbers {
			ids[n] = saveStoredCard(t, g, key, cust, n)["id"].(string)
		}
		deleted := saveStoredCard(t, g, key, cust, "6011111111111117")["id"].(string)
		expect(t, g.call(http.MethodDelete, "/v1/customers/"+cust+"/cards/"+deleted, key, nil), 200)
		if err := g.Stop(); err != nil {
			t.Fatal(err)
		}

		// Add the new key in front: old cards pay, new ones seal under it,
		// and a number stored under the old key is still recognised.
		g = startGateway(t, dbURL, "--vault-key", newKey+","+oldKey)
		if !strings.Contains(g.Logs(), "vault rewrap") {
			t.Errorf("no hint to rewrap:\n%s", g.Logs())
		}
		expect(t, g.call(http.MethodPost, "/v1/payments", key, storedCardPayment("cust-r", ids[numbers[0]])), 201)
		if again := saveStoredCard(t, g, key, cust, numbers[1]); again["id"] != ids[numbers[1]] {
			t.Fatalf("a number stored under the old key was stored again: %v", again)
		}
		ids["6011000990139424"] = saveStoredCard(t, g, key, cust, "6011000990139424")["id"].(string)

		// Rewrap while the gateway runs.
		out, errOut, code := cli(t, nil, "vault", "rewrap", "--database-url", dbURL, "--vault-key", newKey+","+oldKey, "--json")
		if code != 0 {
			t.Fatalf("vault rewrap: exit %d: %s", code, errOut)
		}
		var res struct {
			KeyID     string `json:"keyId"`
			Rewrapped int    `json:"rewrapped"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Rewrapped != 3 || len(res.KeyID) != 16 {
			t.Fatalf("vault rewrap printed %q (%v); want 3 cards moved", out, err)
		}
		if strings.Contains(out, newKey) || strings.Contains(errOut, newKey) {
			t.Fatal("rewrap printed the key")
		}
		// A second run has nothing to do.
		out, errOut, code = cli(t, nil, "vault", "rewrap", "--database-url", dbURL, "--vault-key", newKey+","+oldKey)
		if code != 0 || !strings.Contains(out, "Rewrapped 0 stored cards") {
			t.Fatalf("second rewrap: exit %d, %q %q", code, out, errOut)
		}
		if err := g.Stop(); err != nil {
			t.Fatal(err)
		}

		// Drop the old key: every card still pays and is still recognised.
		g = startGateway(t, dbURL, "--vault-key", newKey)
		if strings.Contains(g.Logs(), "not configured") {
			t.Errorf("cards left under the dropped key:\n%s", g.Logs())
		}
		for n, id := range ids {
			r := g.call(http.MethodPost, "/v1/payments", key, storedCardPayment("cust-r", id))
			expect(t, r, http.StatusCreated)
			if r.Data()["status"] != "captured" {
				t.Errorf("%s after rotation: %s", n[:4], r.Raw)
			}
			if again := saveStoredCard(t, g, key, cust, n); again["id"] != id {
				t.Errorf("%s is not recognised after rotation", n[:4])
			}
		}
		// Rewrap without the key a card needs stops and says why.
		_, errOut, code = cli(t, nil, "vault", "rewrap", "--database-url", dbURL, "--vault-key", vaultKey(t))
		if code != 1 || !strings.Contains(errOut, "not configured") || strings.Count(errOut, "\n") != 1 {
			t.Fatalf("rewrap without the key: exit %d: %q", code, errOut)
		}
	})
}

// TestVaultKeyFile starts serve on SQLite without a key: a key file is made
// beside the database (mode 0600), reused on the next start, and stored cards
// survive the restart.
func TestVaultKeyFile(t *testing.T) {
	dir := t.TempDir()
	dbURL := "sqlite:" + filepath.Join(dir, "paygate.db")
	m := createMerchant(t, dbURL, "Key file Ltd")
	g := startGateway(t, dbURL)
	keyFile := filepath.Join(dir, "paygate.db.vault-key")
	info, err := os.Stat(keyFile)
	if err != nil {
		t.Fatalf("no key file: %v\n%s", err, g.Logs())
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %04o, want 0600", info.Mode().Perm())
	}
	if !regexp.MustCompile(`Generated the card vault master key into [^"]*paygate\.db\.vault-key`).MatchString(g.Logs()) {
		t.Errorf("the log does not say that a key was generated:\n%s", g.Logs())
	}
	raw, _ := os.ReadFile(keyFile)
	if strings.Contains(g.Logs(), strings.TrimSpace(string(raw))) {
		t.Error("the log shows the key")
	}
	cust := newCustomer(t, g, m.TestSecretKey, "cust-f")
	id := saveStoredCard(t, g, m.TestSecretKey, cust, "4242424242424242")["id"].(string)
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	g = startGateway(t, dbURL)
	if !strings.Contains(g.Logs(), "Using the card vault master key in") {
		t.Errorf("second start:\n%s", g.Logs())
	}
	expect(t, g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, storedCardPayment("cust-f", id)), 201)
	after, _ := os.ReadFile(keyFile)
	if !bytes.Equal(raw, after) {
		t.Fatal("the key file changed")
	}
}

// TestVaultPostgresNeedsKey: serve on PostgreSQL without a key refuses to
// start, with one line.
func TestVaultPostgresNeedsKey(t *testing.T) {
	dbURL := postgresEngine().url(t)
	out, errOut, code := cli(t, []string{"PAYGATE_VAULT_KEY="}, "serve", "--addr", "127.0.0.1:0", "--database-url", dbURL)
	if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "vault") || !strings.Contains(errOut, "--vault-key") {
		t.Fatalf("serve on PostgreSQL without a key: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// wantKeys fails unless data has exactly the keys, in this order.
func wantKeys(t *testing.T, r response, keys ...string) {
	t.Helper()
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(r.Raw, &env); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(env.Data))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for dec.More() {
		tok, _ := dec.Token()
		got = append(got, tok.(string))
		var skip json.RawMessage
		_ = dec.Decode(&skip)
	}
	if !slices.Equal(got, keys) {
		t.Errorf("keys %v, want %v: %s", got, keys, r.Raw)
	}
}
