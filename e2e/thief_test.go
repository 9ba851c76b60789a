package e2e

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/idempotency"
)

// This file plays the thief of decisions §15: someone who has a copy of the
// whole database (every table, every column) and paygate's source code, but
// not the vault key, and who wants the card numbers and CVVs of recent
// payments. Every stored value that could be a key is tried as one, as it is
// and through every derivation the code uses, over each card's number, CVV
// and the requests that carried them; an output found anywhere in the
// database means the database leads back to the card.

// loot is what the thief is after: a card and the requests that carried it.
type loot struct {
	pan, cvv string
	requests []lootRequest
}

// lootRequest is one request that carried a card, as sent.
type lootRequest struct {
	method, path string
	body         []byte
}

// thiefLabels are the HKDF labels found in paygate's source (today's and
// earlier releases'): a thief who read the code derives keys with them.
var thiefLabels = []string{
	"paygate/idempotency/fingerprint-key/v1",
	"paygate/vault/v1/fingerprint-key",
	"paygate/vault/v1/request-fingerprint-key",
	"paygate/vault/v1/wrap-key",
	"paygate/vault/v1/key-id",
}

// dbCells returns every value of every row of every table, as bytes.
func dbCells(t *testing.T, e engine, dbURL string) [][]byte {
	t.Helper()
	db, _ := rawDB(t, e, dbURL)
	tables := tableNames(t, e, db)
	if len(tables) < 10 {
		t.Fatalf("found only tables %v", tables)
	}
	var cells [][]byte
	for _, table := range tables {
		cells = append(cells, tableCells(t, db, table)...)
	}
	return cells
}

// tableNames lists the database's tables (on PostgreSQL, the test
// schema's).
func tableNames(t *testing.T, e engine, db *sql.DB) []string {
	t.Helper()
	list := `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`
	if e.name == "sqlite" {
		list = `SELECT name FROM sqlite_master WHERE type = 'table'`
	}
	rows, err := db.Query(list)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return tables
}

func tableCells(t *testing.T, db *sql.DB, table string) [][]byte {
	t.Helper()
	rows, err := db.Query(`SELECT * FROM "` + strings.ReplaceAll(table, `"`, `""`) + `"`)
	if err != nil {
		t.Fatalf("read %s: %v", table, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var cells [][]byte
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("scan %s: %v", table, err)
		}
		for _, v := range vals {
			switch v := v.(type) {
			case nil:
			case []byte:
				cells = append(cells, append([]byte(nil), v...))
			case string:
				cells = append(cells, []byte(v))
			case time.Time:
			default:
				cells = append(cells, []byte(fmt.Sprint(v)))
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return cells
}

var (
	tokenRE  = regexp.MustCompile(`[A-Za-z0-9+/=_-]{22,}`)
	hexRunRE = regexp.MustCompile(`[0-9a-fA-F]{64,}`)
	b64RunRE = regexp.MustCompile(`[A-Za-z0-9+/_-]{43}=?`)
)

// candidateKeys returns every stored value of 16 to 128 bytes, raw and
// decoded from hex or base64 where it is text.
func candidateKeys(cells [][]byte) [][]byte {
	seen := map[string]bool{}
	var keys [][]byte
	add := func(k []byte) {
		if len(k) >= 16 && len(k) <= 128 && !seen[string(k)] {
			seen[string(k)] = true
			keys = append(keys, k)
		}
	}
	for _, c := range cells {
		add(c)
		for _, tok := range tokenRE.FindAll(c, -1) {
			add(tok)
			s := string(tok)
			if b, err := hex.DecodeString(s); err == nil {
				add(b)
			}
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
				if b, err := enc.DecodeString(s); err == nil {
					add(b)
				}
			}
			if i := strings.LastIndexByte(s, '_'); i >= 0 {
				if b, err := base64.StdEncoding.DecodeString(s[i+1:]); err == nil {
					add(b)
				}
			}
		}
	}
	return keys
}

// steal tries to recover the cards from the cells and returns what it
// found, one line per finding (empty when the database leads nowhere).
func steal(cells [][]byte, cards []loot) []string {
	var found []string
	// The plain values first: a number or its encodings anywhere.
	for _, c := range cards {
		for _, form := range []string{c.pan, hex.EncodeToString([]byte(c.pan)), base64.StdEncoding.EncodeToString([]byte(c.pan))} {
			for _, cell := range cells {
				if bytes.Contains(cell, []byte(form)) {
					found = append(found, fmt.Sprintf("card %s…%s stored as %q", c.pan[:6], c.pan[len(c.pan)-4:], form))
				}
			}
		}
	}
	// Every digest the thief can compute, by what it would reveal.
	digests := map[[32]byte]string{}
	note := func(sum []byte, what string) {
		var k [32]byte
		copy(k[:], sum)
		if _, dup := digests[k]; !dup {
			digests[k] = what
		}
	}
	for _, c := range cards {
		id := c.pan[:6] + "…" + c.pan[len(c.pan)-4:]
		s := sha256.Sum256([]byte(c.pan))
		note(s[:], "SHA-256 of card "+id)
		s = sha256.Sum256([]byte(c.cvv))
		note(s[:], "SHA-256 of the CVV of card "+id)
	}
	for _, key := range candidateKeys(cells) {
		derived := [][]byte{key}
		for _, label := range thiefLabels {
			k, err := hkdf.Key(sha256.New, key, nil, label, 32)
			if err != nil {
				panic(err)
			}
			derived = append(derived, k)
		}
		for _, k := range derived {
			for _, c := range cards {
				id := c.pan[:6] + "…" + c.pan[len(c.pan)-4:]
				note(hmacSHA256(k, c.pan), "HMAC of card "+id+" under a stored value")
				note(hmacSHA256(k, c.cvv), "HMAC of the CVV of card "+id+" under a stored value")
				for _, r := range c.requests {
					note(hmacSHA256(k, string(r.body)), "HMAC of a request body with card "+id+" under a stored value")
					fp, err := idempotency.Fingerprint(k, r.method, r.path, r.body)
					if err == nil {
						note(fp, "idempotency fingerprint of a request with card "+id+", recomputed under a stored value")
					}
				}
			}
		}
	}
	match := func(b []byte) {
		if len(b) != 32 {
			return
		}
		var k [32]byte
		copy(k[:], b)
		if what, ok := digests[k]; ok {
			found = append(found, what)
		}
	}
	for _, cell := range cells {
		match(cell)
		for _, run := range hexRunRE.FindAll(cell, -1) {
			for i := 0; i+64 <= len(run); i++ {
				if b, err := hex.DecodeString(string(run[i : i+64])); err == nil {
					match(b)
				}
			}
		}
		for _, run := range b64RunRE.FindAll(cell, -1) {
			s := strings.TrimSuffix(string(run), "=")
			for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
				if b, err := enc.DecodeString(s); err == nil {
					match(b)
				}
			}
		}
	}
	return found
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// TestThiefFindsNothing makes real payments, saved cards, card tokens and
// replays on each engine, then hands the whole database to the thief.
func TestThiefFindsNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		dbURL := e.url(t)
		m := createMerchant(t, dbURL, "Thief Target Ltd")
		g := startGateway(t, dbURL, "--rate-limit-test", "1000")
		cards := []loot{
			{pan: "4242424242424242", cvv: "314"}, {pan: "5555555555554444", cvv: "271"},
			{pan: "378282246310005", cvv: "1618"}, {pan: "4000000000000002", cvv: "577"},
			{pan: "4000000000000077", cvv: "662"}, {pan: "4000000000003220", cvv: "141"},
			{pan: "4000000000000119", cvv: "173"},
		}
		for i := range cards {
			c := &cards[i]
			b := paymentBody(c.pan, "12.34", "EUR")
			b["card"].(map[string]any)["cvv"] = c.cvv
			if i == 0 {
				b["saveCard"] = true
			}
			raw := mustJSON(t, b)
			key := fmt.Sprintf("thief-%d", i)
			first := g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, raw, "Idempotency-Key", key)
			if first.Status >= 500 && first.Status != http.StatusBadGateway {
				t.Fatalf("payment %d: %d %s", i, first.Status, first.Raw)
			}
			// A replay, so that the stored record has been read back.
			again := g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, raw, "Idempotency-Key", key)
			if again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Raw, first.Raw) {
				t.Fatalf("payment %d: replay %d %s, want the first answer", i, again.Status, again.Raw)
			}
			c.requests = append(c.requests, lootRequest{http.MethodPost, "/v1/payments", raw})
		}
		// A saved card, through its own idempotent request.
		cust := newCustomer(t, g, m.TestSecretKey, "thief-cust")
		saved := loot{pan: "6011111111111117"}
		body := mustJSON(t, map[string]any{"card": map[string]any{
			"number": saved.pan, "expiryMonth": "10", "expiryYear": futureYear(), "holderName": "Ada Lovelace"}})
		path := "/v1/customers/" + cust + "/cards"
		r := g.call(http.MethodPost, path, m.TestSecretKey, body, "Idempotency-Key", "thief-card")
		expect(t, r, http.StatusCreated)
		saved.requests = append(saved.requests, lootRequest{http.MethodPost, path, body})
		cards = append(cards, saved)

		// Card tokens (decisions §19): one paid with, one left unused, its
		// card (CVV included) still sealed in the database.
		for i, c := range []loot{{pan: "5105105105105100", cvv: "388"}, {pan: "4012888888881881", cvv: "929"}} {
			body := mustJSON(t, map[string]any{"card": map[string]any{
				"number": c.pan, "expiryMonth": "07", "expiryYear": futureYear(), "cvv": c.cvv, "holderName": "Ada Lovelace"}})
			r := g.call(http.MethodPost, "/v1/tokens", m.TestPublicKey, body, "Idempotency-Key", "")
			expect(t, r, http.StatusCreated)
			c.requests = append(c.requests, lootRequest{http.MethodPost, "/v1/tokens", body})
			if i == 0 {
				pay := paymentBody(c.pan, "5.00", "EUR")
				delete(pay, "card")
				pay["paymentMethod"], pay["token"] = "token", r.Data()["id"]
				expect(t, g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, pay, "Idempotency-Key", "thief-token"), http.StatusCreated)
			}
			cards = append(cards, c)
		}

		if found := steal(dbCells(t, e, dbURL), cards); len(found) > 0 {
			t.Errorf("the database alone leads back to card data (%d findings):\n%s", len(found), strings.Join(found, "\n"))
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
