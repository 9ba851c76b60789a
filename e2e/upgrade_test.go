package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// fixtureRelease names the release whose databases the upgrade fixtures
// hold (testdata/upgrade, made by make-fixture.sh there).
const fixtureRelease = "0620bb3"

// fixtureManifest is what make-fixture.sh recorded of the traffic.
type fixtureManifest struct {
	MerchantID    string `json:"merchantId"`
	TestSecretKey string `json:"testSecretKey"`
	Requests      []struct {
		Kind           string `json:"kind"`
		Method         string `json:"method"`
		Path           string `json:"path"`
		Body           string `json:"body"`
		IdempotencyKey string `json:"idempotencyKey"`
		PAN            string `json:"pan"`
		CVV            string `json:"cvv"`
		ReplayStatus   int    `json:"replayStatus"`
		ReplayAnswer   string `json:"replayAnswer"`
	} `json:"requests"`
}

// loot returns the cards of the manifest and the requests that carried them.
func (m fixtureManifest) loot() []loot {
	byPAN := map[string]*loot{}
	var order []string
	for _, r := range m.Requests {
		if r.PAN == "" {
			continue
		}
		l, ok := byPAN[r.PAN]
		if !ok {
			l = &loot{pan: r.PAN, cvv: r.CVV}
			byPAN[r.PAN] = l
			order = append(order, r.PAN)
		}
		l.requests = append(l.requests, lootRequest{r.Method, r.Path, []byte(r.Body)})
	}
	out := make([]loot, 0, len(order))
	for _, pan := range order {
		out = append(out, *byPAN[pan])
	}
	return out
}

// TestUpgradeDropsCardFingerprints opens a database written by release
// 0620bb3 with real traffic (its card fingerprints were keyed by a key
// stored in the database itself) and checks decisions §15's conversion:
// before the upgrade the thief recovers the cards from the database alone;
// after it nothing leads back to them, the key is gone, and every stored
// answer still replays byte for byte, for its body or any other.
func TestUpgradeDropsCardFingerprints(t *testing.T) {
	vaultKeyRaw, err := os.ReadFile(filepath.Join("testdata", "upgrade", "vault-key"))
	if err != nil {
		t.Fatal(err)
	}
	vaultKey := strings.TrimSpace(string(vaultKeyRaw))
	forEachEngine(t, func(t *testing.T, e engine) {
		var m fixtureManifest
		raw, err := os.ReadFile(filepath.Join("testdata", "upgrade", fixtureRelease+"."+e.name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		dbURL := loadFixture(t, e)
		cards := m.loot()
		if len(cards) < 8 {
			t.Fatalf("the manifest has %d cards", len(cards))
		}

		// The old release's database gives the cards away: the thief works.
		if found := steal(dbCells(t, e, dbURL), cards); len(found) == 0 {
			t.Fatal("the thief found nothing in the old release's database, which keyed card fingerprints with a key it stored")
		}
		// What must be gone from the files too, not only from the rows.
		old := legacySecrets(t, e, dbURL)

		g := startGateway(t, dbURL, "--vault-key", vaultKey, "--rate-limit-test", "1000")
		for _, r := range m.Requests {
			got := g.call(r.Method, r.Path, m.TestSecretKey, r.Body, "Idempotency-Key", r.IdempotencyKey)
			if got.Status != r.ReplayStatus || string(got.Raw) != r.ReplayAnswer || got.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("%s %s (%s) after the upgrade: %d %s (replayed %q), want the stored %d %s",
					r.Method, r.Path, r.IdempotencyKey, got.Status, got.Raw, got.Header.Get("Idempotent-Replayed"), r.ReplayStatus, r.ReplayAnswer)
			}
		}
		// A record whose fingerprint was dropped replays for any body.
		first := m.Requests[1]
		other := strings.Replace(first.Body, `"amount": "10.50"`, `"amount": "99.00"`, 1)
		if other == first.Body {
			t.Fatalf("cannot alter the body %s", first.Body)
		}
		got := g.call(first.Method, first.Path, m.TestSecretKey, other, "Idempotency-Key", first.IdempotencyKey)
		if got.Status != first.ReplayStatus || string(got.Raw) != first.ReplayAnswer {
			t.Errorf("another body under an upgraded key: %d %s, want the stored answer", got.Status, got.Raw)
		}
		// New traffic on the upgraded database: the same cards again, one
		// of them under an old key's neighbour.
		for i, c := range cards[:3] {
			b := paymentBody(c.pan, "3.00", "EUR")
			b["card"].(map[string]any)["cvv"] = c.cvv
			body := mustJSON(t, b)
			r := g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, body, "Idempotency-Key", "after-upgrade-"+string(rune('a'+i)))
			expect(t, r, http.StatusCreated)
			cards[i].requests = append(cards[i].requests, lootRequest{http.MethodPost, "/v1/payments", body})
		}
		if err := g.Stop(); err != nil {
			t.Fatal(err)
		}

		if found := steal(dbCells(t, e, dbURL), cards); len(found) > 0 {
			t.Errorf("after the upgrade the database still leads back to card data (%d findings):\n%s", len(found), strings.Join(found, "\n"))
		}
		db, ph := rawDB(t, e, dbURL)
		var n int
		if err := db.QueryRow(ph(`SELECT count(*) FROM instance_secrets WHERE name = 'card-fingerprint-key'`)).Scan(&n); err != nil || n != 0 {
			t.Errorf("the old fingerprint key is still stored (%d rows, %v)", n, err)
		}
		if e.name == "sqlite" {
			// A byte scan of the files (free pages, the WAL) finds nothing
			// of the old key or fingerprints either.
			assertNotInFiles(t, strings.TrimPrefix(dbURL, "sqlite:"), old)
		}

		// An old node still running would store its key again: the next
		// start of this release deletes it, and on SQLite erases it from
		// the files.
		if _, err := db.Exec(ph(`INSERT INTO instance_secrets (name, value) VALUES ('card-fingerprint-key', $1)`), old[0]); err != nil {
			t.Fatal(err)
		}
		db.Close()
		mustCLI(t, nil, "key", "list", "--merchant", m.MerchantID, "--json", "--database-url", dbURL)
		db, ph = rawDB(t, e, dbURL)
		if err := db.QueryRow(ph(`SELECT count(*) FROM instance_secrets WHERE name = 'card-fingerprint-key'`)).Scan(&n); err != nil || n != 0 {
			t.Errorf("a key stored again by an old node survives a start (%d rows, %v)", n, err)
		}
		if e.name == "sqlite" {
			assertNotInFiles(t, strings.TrimPrefix(dbURL, "sqlite:"), old[:1])
		}
	})
}

// assertNotInFiles fails the test if the SQLite database at path or its
// WAL holds any of the values, byte for byte.
func assertNotInFiles(t *testing.T, path string, values [][]byte) {
	t.Helper()
	for _, f := range []string{path, path + "-wal"} {
		raw, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, v := range values {
			if bytes.Contains(raw, v) {
				t.Errorf("%s still holds %d bytes of the old release's key or fingerprints", filepath.Base(f), len(v))
			}
		}
	}
}

// legacySecrets returns, from a database of the old release, the values
// that lead back to its cards: the fingerprint key first, then every card
// and request fingerprint, as stored.
func legacySecrets(t *testing.T, e engine, dbURL string) [][]byte {
	t.Helper()
	db, ph := rawDB(t, e, dbURL)
	var out [][]byte
	var key []byte
	if err := db.QueryRow(ph(`SELECT value FROM instance_secrets WHERE name = 'card-fingerprint-key'`)).Scan(&key); err != nil {
		t.Fatalf("the fixture has no fingerprint key: %v", err)
	}
	out = append(out, key)
	for _, q := range []string{
		`SELECT CAST(card_fingerprint AS BLOB) FROM payments WHERE card_fingerprint <> ''`,
		`SELECT fingerprint FROM idempotency_keys`,
	} {
		if e.name == "postgres" {
			q = strings.Replace(q, "CAST(card_fingerprint AS BLOB)", "convert_to(card_fingerprint, 'UTF8')", 1)
		}
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var v []byte
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		rows.Close()
	}
	if len(out) < 10 {
		t.Fatalf("the fixture holds only %d old fingerprints", len(out))
	}
	return out
}

// loadFixture returns the URL of a fresh database holding the fixture of
// the engine, its idempotency records made recent (they are replayable for
// 24 hours after they were written, and the fixture is older).
func loadFixture(t *testing.T, e engine) string {
	t.Helper()
	src := filepath.Join("testdata", "upgrade", fixtureRelease+"."+e.name)
	if e.name == "sqlite" {
		raw, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "paygate.db")
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		dbURL := "sqlite:" + path
		db, ph := rawDB(t, e, dbURL)
		if _, err := db.Exec(ph(`UPDATE idempotency_keys SET created_at = $1`), time.Now().Add(-time.Hour).UnixMicro()); err != nil {
			t.Fatal(err)
		}
		return dbURL
	}
	dbURL := e.url(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	dump, err := os.ReadFile(src + ".sql")
	if err != nil {
		t.Fatal(err)
	}
	var stmts []string
	for _, line := range strings.Split(string(dump), "\n") {
		if strings.HasPrefix(line, "CREATE SCHEMA ") {
			continue // the test's schema exists already
		}
		stmts = append(stmts, line)
	}
	sql := strings.ReplaceAll(strings.Join(stmts, "\n"), "paygate_fixture_"+fixtureRelease, schema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("load the fixture: %v", err)
	}
	if _, err := conn.Exec(ctx, `SET search_path = `+schema+`; UPDATE idempotency_keys SET created_at = now() - interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	return dbURL
}
