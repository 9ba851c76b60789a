package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
	"github.com/paygate/paygate/internal/testenv"
	"github.com/paygate/paygate/internal/webhook"
)

// result is what one command line produced.
type result struct {
	code   int
	stdout string
	stderr string
}

// cliRun runs the program in-process with the given environment.
func cliRun(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	return cliRunServe(t, env, nil, args...)
}

// cliRunServe runs the program with srv in place of the real server (nil:
// a server that must not be started).
func cliRunServe(t *testing.T, env map[string]string, srv serveFunc, args ...string) result {
	t.Helper()
	if srv == nil {
		srv = func(context.Context, serveConfig, io.Writer, io.Writer) error {
			t.Errorf("paygate %s: serve must not be called", strings.Join(args, " "))
			return nil
		}
	}
	var stdout, stderr bytes.Buffer
	getenv := func(k string) string { return env[k] }
	code := runWith(context.Background(), args, getenv, &stdout, &stderr, srv)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// mustSucceed fails the test unless the command exited 0 with nothing on
// stderr.
func (r result) mustSucceed(t *testing.T) result {
	t.Helper()
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q, stdout %q; want success", r.code, r.stderr, r.stdout)
	}
	return r
}

// mustFail checks the exit status, that stdout is empty and that stderr is
// exactly one line starting "paygate: " and containing want.
func (r result) mustFail(t *testing.T, code int, want string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d (stderr %q)", r.code, code, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout %q, want nothing", r.stdout)
	}
	if !strings.HasPrefix(r.stderr, "paygate: ") || !strings.HasSuffix(r.stderr, "\n") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("stderr %q, want one line starting \"paygate: \"", r.stderr)
	}
	if !strings.Contains(r.stderr, want) {
		t.Errorf("stderr %q does not contain %q", r.stderr, want)
	}
}

// jsonLine checks that stdout is exactly one line of JSON and decodes it.
func jsonLine(t *testing.T, r result, v any) {
	t.Helper()
	r.mustSucceed(t)
	if !strings.HasSuffix(r.stdout, "\n") || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("stdout %q is not exactly one line", r.stdout)
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %q: %v", r.stdout, err)
	}
}

// objectKeys returns the keys of a JSON object in document order.
func objectKeys(t *testing.T, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s is not a JSON object", raw)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("read key of %s: %v", raw, err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("read value of %s: %v", raw, err)
		}
	}
	return keys
}

// wantKeys checks the keys and their order in a JSON object.
func wantKeys(t *testing.T, raw string, want ...string) {
	t.Helper()
	if got := objectKeys(t, []byte(raw)); !slices.Equal(got, want) {
		t.Errorf("keys %v, want %v in %s", got, want, raw)
	}
}

// sqliteURL returns a fresh SQLite database URL in the test's directory.
func sqliteURL(t *testing.T) string {
	t.Helper()
	return "sqlite:" + filepath.Join(t.TempDir(), "x.db")
}

// engines lists the databases the store-backed tests run against.
var engines = []struct {
	name string
	url  func(t *testing.T) string
}{
	{"SQLite", sqliteURL},
	{"PostgreSQL", func(t *testing.T) string { return testenv.PostgresSchema(t) }},
}

// forEachEngine runs f on a fresh database of every engine.
func forEachEngine(t *testing.T, f func(t *testing.T, db string)) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			f(t, e.url(t))
		})
	}
}

var (
	timeRE     = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)
	secretRE   = regexp.MustCompile(`^smtgw_(sk|pk)_(test|live)_[0-9A-Za-z]{32,}$`)
	webhookRE  = regexp.MustCompile(`^whsec_[A-Za-z0-9+/]+=*$`)
	listedKeys = []string{"id", "mode", "type", "hint", "createdAt", "expiresAt", "revokedAt"}
)

// newMerchant creates a merchant and returns the JSON output.
func newMerchant(t *testing.T, db, name string) merchantCreated {
	t.Helper()
	var m merchantCreated
	jsonLine(t, cliRun(t, nil, "merchant", "create", "--name", name, "--database-url", db, "--json"), &m)
	return m
}

// listKeys runs key list --json and returns the raw elements.
func listKeys(t *testing.T, db, merchantID string) []json.RawMessage {
	t.Helper()
	var raw []json.RawMessage
	jsonLine(t, cliRun(t, nil, "key", "list", "--merchant", merchantID, "--database-url", db, "--json"), &raw)
	return raw
}

// listedKey finds a key by id in key list output.
func listedKey(t *testing.T, raw []json.RawMessage, keyID string) keyListed {
	t.Helper()
	for _, r := range raw {
		var k keyListed
		if err := json.Unmarshal(r, &k); err != nil {
			t.Fatal(err)
		}
		if k.ID == keyID {
			return k
		}
	}
	t.Fatalf("key %s not listed", keyID)
	return keyListed{}
}

func parseTime(t *testing.T, s string) time.Time {
	t.Helper()
	if !timeRE.MatchString(s) {
		t.Fatalf("time %q is not RFC 3339 UTC with milliseconds", s)
	}
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// near checks that got is within a millisecond of [lo, hi], allowing for
// the millisecond truncation of the output.
func near(t *testing.T, what string, got, lo, hi time.Time) {
	t.Helper()
	if got.Before(lo.Add(-time.Millisecond)) || got.After(hi.Add(time.Millisecond)) {
		t.Errorf("%s = %s, want between %s and %s", what, got, lo, hi)
	}
}

func TestMerchantCreate(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, db string) {
		before := time.Now()
		r := cliRun(t, nil, "merchant", "create", "--name", "Acme & Söhne <GmbH>", "--database-url", db, "--json")
		var m merchantCreated
		jsonLine(t, r, &m)
		wantKeys(t, r.stdout, "merchantId", "name", "testSecretKeyId", "testSecretKey", "liveSecretKeyId",
			"liveSecretKey", "testPublicKey", "livePublicKey")
		if !strings.Contains(r.stdout, `"Acme & Söhne <GmbH>"`) {
			t.Errorf("name not printed as given: %s", r.stdout)
		}
		if !id.Valid(m.MerchantID) || !id.Valid(m.TestSecretKeyID) || !id.Valid(m.LiveSecretKeyID) {
			t.Errorf("ids are not UUIDs: %+v", m)
		}
		for key, prefix := range map[string]string{
			m.TestSecretKey: "smtgw_sk_test_", m.LiveSecretKey: "smtgw_sk_live_",
			m.TestPublicKey: "smtgw_pk_test_", m.LivePublicKey: "smtgw_pk_live_",
		} {
			if !strings.HasPrefix(key, prefix) || !secretRE.MatchString(key) {
				t.Errorf("key %q, want %s and 32+ base62 characters", key, prefix)
			}
		}

		raw := listKeys(t, db, m.MerchantID)
		if len(raw) != 4 {
			t.Fatalf("listed %d keys, want 4 (secret and public, test and live)", len(raw))
		}
		type kind struct{ mode, typ string }
		seen := map[kind]keyListed{}
		for _, r := range raw {
			wantKeys(t, string(r), listedKeys...)
			var k keyListed
			if err := json.Unmarshal(r, &k); err != nil {
				t.Fatal(err)
			}
			near(t, "createdAt", parseTime(t, k.CreatedAt), before.Add(-time.Second), time.Now())
			if k.ExpiresAt != nil || k.RevokedAt != nil {
				t.Errorf("new key %s: expiresAt %v revokedAt %v, want null", k.ID, k.ExpiresAt, k.RevokedAt)
			}
			if !strings.Contains(string(r), `"expiresAt":null`) || !strings.Contains(string(r), `"revokedAt":null`) {
				t.Errorf("unset times are not null: %s", r)
			}
			seen[kind{k.Mode, k.Type}] = k
		}
		wantHint := func(kd kind, secret string) {
			t.Helper()
			k, ok := seen[kd]
			if !ok {
				t.Errorf("no %s %s key listed", kd.mode, kd.typ)
				return
			}
			want := secret[:len("smtgw_sk_test_")] + "…" + secret[len(secret)-4:]
			if k.Hint != want {
				t.Errorf("hint %q, want %q", k.Hint, want)
			}
		}
		wantHint(kind{"test", "secret"}, m.TestSecretKey)
		wantHint(kind{"live", "secret"}, m.LiveSecretKey)
		wantHint(kind{"test", "public"}, m.TestPublicKey)
		wantHint(kind{"live", "public"}, m.LivePublicKey)
		if k := seen[kind{"test", "secret"}]; k.ID != m.TestSecretKeyID {
			t.Errorf("test secret key id %s, listed %s", m.TestSecretKeyID, k.ID)
		}
		if !regexp.MustCompile(`^smtgw_sk_test_…[0-9A-Za-z]{4}$`).MatchString(seen[kind{"test", "secret"}].Hint) {
			t.Errorf("hint %q is not smtgw_sk_test_…XXXX", seen[kind{"test", "secret"}].Hint)
		}

		// Without --json: a human summary that still shows the secrets.
		r = cliRun(t, nil, "merchant", "create", "--name", "Plain", "--database-url", db).mustSucceed(t)
		if !strings.Contains(r.stdout, "smtgw_sk_test_") || !strings.Contains(r.stdout, "smtgw_pk_live_") {
			t.Errorf("plain output lacks the keys:\n%s", r.stdout)
		}
	})
}

func TestKeyCreate(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, db string) {
		m := newMerchant(t, db, "Keys")
		for _, mode := range []string{"test", "live"} {
			r := cliRun(t, nil, "key", "create", "--merchant", m.MerchantID, "--mode", mode, "--database-url", db, "--json")
			var k keyCreated
			jsonLine(t, r, &k)
			wantKeys(t, r.stdout, "id", "mode", "key")
			if k.Mode != mode || !strings.HasPrefix(k.Key, "smtgw_sk_"+mode+"_") || !id.Valid(k.ID) {
				t.Errorf("created %+v, want a %s secret key", k, mode)
			}
			lk := listedKey(t, listKeys(t, db, m.MerchantID), k.ID)
			if lk.Type != "secret" || lk.Mode != mode || !strings.HasSuffix(lk.Hint, k.Key[len(k.Key)-4:]) {
				t.Errorf("listed %+v for created %+v", lk, k)
			}
		}
		cliRun(t, nil, "key", "create", "--merchant", id.New(), "--mode", "test", "--database-url", db, "--json").
			mustFail(t, 1, "merchant not found")
		cliRun(t, nil, "key", "create", "--merchant", "not-a-uuid", "--mode", "test", "--database-url", db).
			mustFail(t, 1, "merchant not found")
		cliRun(t, nil, "key", "list", "--merchant", id.New(), "--database-url", db, "--json").
			mustFail(t, 1, "merchant not found")
	})
}

func TestKeyRotate(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, db string) {
		m := newMerchant(t, db, "Rotation")

		t.Run("OK", func(t *testing.T) {
			before := time.Now()
			r := cliRun(t, nil, "key", "rotate", "--key", m.TestSecretKeyID, "--grace", "1h", "--database-url", db, "--json")
			after := time.Now()
			var k keyRotated
			jsonLine(t, r, &k)
			wantKeys(t, r.stdout, "id", "mode", "key", "oldKeyExpiresAt")
			if k.ID == m.TestSecretKeyID || !id.Valid(k.ID) || k.Mode != "test" || !strings.HasPrefix(k.Key, "smtgw_sk_test_") || k.Key == m.TestSecretKey {
				t.Errorf("rotated %+v, want a new test secret key", k)
			}
			exp := parseTime(t, k.OldKeyExpiresAt)
			near(t, "oldKeyExpiresAt", exp, before.Add(time.Hour), after.Add(time.Hour))
			keys := listKeys(t, db, m.MerchantID)
			old := listedKey(t, keys, m.TestSecretKeyID)
			if old.ExpiresAt == nil || *old.ExpiresAt != k.OldKeyExpiresAt || old.RevokedAt != nil {
				t.Errorf("old key listed %+v, want expiresAt %s", old, k.OldKeyExpiresAt)
			}
			if nk := listedKey(t, keys, k.ID); nk.Type != "secret" || nk.Mode != "test" || nk.ExpiresAt != nil {
				t.Errorf("new key listed %+v", nk)
			}

			// A key that already has a successor cannot be rotated again,
			// even within its grace period: the refusal names the successor.
			cliRun(t, nil, "key", "rotate", "--key", m.TestSecretKeyID, "--grace", "48h", "--database-url", db, "--json").
				mustFail(t, 1, "its successor is key "+k.ID)
			if again := listedKey(t, listKeys(t, db, m.MerchantID), m.TestSecretKeyID); again.ExpiresAt == nil || *again.ExpiresAt != k.OldKeyExpiresAt {
				t.Errorf("a refused rotation changed the old key: %+v", again)
			}
			if n := len(listKeys(t, db, m.MerchantID)); n != 5 {
				t.Errorf("%d keys after one rotation and one refusal, want 5", n)
			}
			// The successor itself can be rotated; the plain output of a
			// secret key says to keep it secret.
			r = cliRun(t, nil, "key", "rotate", "--key", k.ID, "--database-url", db).mustSucceed(t)
			if !strings.Contains(r.stdout, "keep it secret") {
				t.Errorf("rotating a secret key printed %q, want the warning to keep it secret", r.stdout)
			}
		})

		t.Run("GraceAtMost720h", func(t *testing.T) {
			fresh := newMerchant(t, db, "Grace")
			for _, g := range []string{"800h", "720h1s"} {
				cliRun(t, nil, "key", "rotate", "--key", fresh.TestSecretKeyID, "--grace", g, "--database-url", db).mustFail(t, 2, "720h")
			}
			if old := listedKey(t, listKeys(t, db, fresh.MerchantID), fresh.TestSecretKeyID); old.ExpiresAt != nil {
				t.Errorf("a refused grace changed the key: %+v", old)
			}
			before := time.Now()
			var k keyRotated
			jsonLine(t, cliRun(t, nil, "key", "rotate", "--key", fresh.TestSecretKeyID, "--grace", "720h", "--database-url", db, "--json"), &k)
			near(t, "oldKeyExpiresAt", parseTime(t, k.OldKeyExpiresAt), before.Add(720*time.Hour), time.Now().Add(720*time.Hour))
		})

		t.Run("DefaultGraceAndPublicKey", func(t *testing.T) {
			raw := listKeys(t, db, m.MerchantID)
			var pub keyListed
			for _, r := range raw {
				var k keyListed
				_ = json.Unmarshal(r, &k)
				if k.Type == "public" && k.Mode == "live" {
					pub = k
				}
			}
			before := time.Now()
			var k keyRotated
			jsonLine(t, cliRun(t, nil, "key", "rotate", "--key", pub.ID, "--database-url", db, "--json"), &k)
			if !strings.HasPrefix(k.Key, "smtgw_pk_live_") || k.Mode != "live" {
				t.Errorf("rotated public key to %+v, want a live public key", k)
			}
			near(t, "oldKeyExpiresAt", parseTime(t, k.OldKeyExpiresAt), before.Add(24*time.Hour), time.Now().Add(24*time.Hour))

			// A public key is no secret: its plain output says nothing of
			// keeping it secret, but still shows the key.
			var newPub keyListed
			for _, r := range listKeys(t, db, m.MerchantID) {
				var lk keyListed
				_ = json.Unmarshal(r, &lk)
				if lk.Type == "public" && lk.Mode == "test" {
					newPub = lk
				}
			}
			r := cliRun(t, nil, "key", "rotate", "--key", newPub.ID, "--database-url", db).mustSucceed(t)
			if strings.Contains(r.stdout, "keep it secret") || !strings.Contains(r.stdout, "smtgw_pk_test_") {
				t.Errorf("rotating a public key printed %q: want the key and no \"keep it secret\"", r.stdout)
			}
		})

		t.Run("GraceZero", func(t *testing.T) {
			before := time.Now()
			var k keyRotated
			jsonLine(t, cliRun(t, nil, "key", "rotate", "--key", m.LiveSecretKeyID, "--grace", "0", "--database-url", db, "--json"), &k)
			near(t, "oldKeyExpiresAt", parseTime(t, k.OldKeyExpiresAt), before, time.Now())
			// The old key has stopped and has a successor: it cannot be
			// rotated again.
			cliRun(t, nil, "key", "rotate", "--key", m.LiveSecretKeyID, "--database-url", db, "--json").
				mustFail(t, 1, "its successor is key "+k.ID)
			// The new one can.
			cliRun(t, nil, "key", "rotate", "--key", k.ID, "--grace", "0s", "--database-url", db, "--json").mustSucceed(t)
		})

		t.Run("ErrNotFound", func(t *testing.T) {
			cliRun(t, nil, "key", "rotate", "--key", id.New(), "--database-url", db, "--json").mustFail(t, 1, "key not found")
			cliRun(t, nil, "key", "rotate", "--key", "nope", "--database-url", db).mustFail(t, 1, "key not found")
		})
	})
}

func TestKeyRevoke(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, db string) {
		m := newMerchant(t, db, "Revocation")
		before := time.Now()
		r := cliRun(t, nil, "key", "revoke", "--key", m.TestSecretKeyID, "--database-url", db, "--json")
		var k keyRevoked
		jsonLine(t, r, &k)
		wantKeys(t, r.stdout, "id", "revokedAt")
		if k.ID != m.TestSecretKeyID {
			t.Errorf("revoked %s, want %s", k.ID, m.TestSecretKeyID)
		}
		near(t, "revokedAt", parseTime(t, k.RevokedAt), before, time.Now())
		if lk := listedKey(t, listKeys(t, db, m.MerchantID), k.ID); lk.RevokedAt == nil || *lk.RevokedAt != k.RevokedAt {
			t.Errorf("listed %+v, want revokedAt %s", lk, k.RevokedAt)
		}

		// Revoking again keeps the first time; plain output confirms.
		r = cliRun(t, nil, "key", "revoke", "--key", m.TestSecretKeyID, "--database-url", db).mustSucceed(t)
		if !strings.HasPrefix(r.stdout, "Revoked ") || !strings.Contains(r.stdout, k.RevokedAt) || strings.Count(r.stdout, "\n") != 1 {
			t.Errorf("plain revoke printed %q, want one confirmation line with %s", r.stdout, k.RevokedAt)
		}
		cliRun(t, nil, "key", "rotate", "--key", m.TestSecretKeyID, "--database-url", db).mustFail(t, 1, "revoked")

		// A public key can be revoked too.
		for _, raw := range listKeys(t, db, m.MerchantID) {
			var lk keyListed
			_ = json.Unmarshal(raw, &lk)
			if lk.Type == "public" && lk.Mode == "test" {
				cliRun(t, nil, "key", "revoke", "--key", lk.ID, "--database-url", db, "--json").mustSucceed(t)
			}
		}
		cliRun(t, nil, "key", "revoke", "--key", id.New(), "--database-url", db, "--json").mustFail(t, 1, "key not found")
	})
}

func TestWebhookSet(t *testing.T) {
	t.Parallel()
	db := sqliteURL(t)
	m := newMerchant(t, db, "Hooks")
	set := func(args ...string) result {
		return cliRun(t, nil, append([]string{"webhook", "set", "--merchant", m.MerchantID, "--database-url", db}, args...)...)
	}
	secretOf := func(r result) string {
		t.Helper()
		var w webhookSet
		jsonLine(t, r, &w)
		wantKeys(t, r.stdout, "url", "secret")
		if !webhookRE.MatchString(w.Secret) {
			t.Fatalf("secret %q is not whsec_<base64>", w.Secret)
		}
		b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(w.Secret, "whsec_"))
		if err != nil || len(b) != 32 {
			t.Fatalf("secret %q does not carry 32 bytes of base64 (%v)", w.Secret, err)
		}
		return w.Secret
	}

	r := set("--mode", "test", "--url", "http://localhost:9999/hook?a=1&b=2", "--json")
	first := secretOf(r)
	if !strings.Contains(r.stdout, `"url":"http://localhost:9999/hook?a=1&b=2"`) {
		t.Errorf("url not printed as given: %s", r.stdout)
	}
	if again := secretOf(set("--mode", "test", "--url", "http://127.0.0.1:9999/other", "--events", "payment.captured,refund.failed", "--json")); again != first {
		t.Errorf("setting again changed the secret: %s then %s", first, again)
	}
	rotated := secretOf(set("--mode", "test", "--url", "http://127.0.0.1:9999/other", "--rotate-secret", "--json"))
	if rotated == first {
		t.Error("--rotate-secret kept the secret")
	}
	live := secretOf(set("--mode", "live", "--url", "https://hooks.example.com/paygate", "--json"))
	if live == rotated {
		t.Error("live and test endpoints share a secret")
	}
	r = set("--mode", "live", "--url", "https://93.184.215.14:8443/x").mustSucceed(t)
	if !strings.Contains(r.stdout, live) {
		t.Errorf("plain output lacks the kept secret:\n%s", r.stdout)
	}

	for _, u := range []string{
		"https://127.0.0.1/x", "https://10.0.0.1/x", "https://localhost/x", "http://example.com",
		"https://LOCALHOST./x", "https://api.localhost/x", "https://[::1]/x", "https://172.16.5.4/x",
		"https://192.168.1.1/x", "https://169.254.169.254/latest", "https://[fe80::1%25eth0]/x",
		"https://[fd00::1]/x", "https://0.0.0.0/x", "https://[::]/x", "https://224.0.0.1/x",
		"https://[::ffff:127.0.0.1]/x", "https://100.64.0.1/x", "https://2130706433/x", "https://127.1/x",
		"https://0x7f.0.0.1/x",
	} {
		set("--mode", "live", "--url", u, "--json").mustFail(t, 1, "--url refused")
	}
	for _, c := range []struct{ args []string }{
		{[]string{"--mode", "test", "--url", "ftp://example.com/x"}},
		{[]string{"--mode", "test", "--url", "/relative"}},
		{[]string{"--mode", "test", "--url", "https://"}},
		{[]string{"--mode", "test", "--url", "https://example.com", "--events", "payment.captured,nope"}},
		{[]string{"--mode", "test", "--url", "https://example.com", "--events", "ping"}},
		{[]string{"--mode", "staging", "--url", "https://example.com"}},
		{[]string{"--url", "https://example.com"}},
		{[]string{"--mode", "test"}},
	} {
		set(c.args...).mustFail(t, 2, "")
	}
	cliRun(t, nil, "webhook", "set", "--merchant", id.New(), "--mode", "test", "--url", "http://localhost/x", "--database-url", db).
		mustFail(t, 1, "merchant not found")
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	db := sqliteURL(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"NoCommand", nil, "missing command"},
		{"UnknownCommand", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"UserUnknownSubcommand", []string{"user", "delete"}, "unknown subcommand"},
		{"VaultUnknownSubcommand", []string{"vault", "unwrap"}, "unknown subcommand"},
		{"MissingSubcommand", []string{"key"}, "missing subcommand"},
		{"UnknownSubcommand", []string{"key", "delete"}, "unknown subcommand"},
		{"WebhookUnknownSubcommand", []string{"webhook", "delete"}, "unknown subcommand"},
		{"DeliveriesMissingMerchant", []string{"webhook", "deliveries"}, "missing required flag --merchant"},
		{"DeliveriesBadStatus", []string{"webhook", "deliveries", "--merchant", id.New(), "--status", "lost"}, "--status"},
		{"DeliveriesBadLimit", []string{"webhook", "deliveries", "--merchant", id.New(), "--limit", "-1"}, "--limit"},
		{"DeliveriesBadEvent", []string{"webhook", "deliveries", "--merchant", id.New(), "--event", "nope"}, "--event"},
		{"ResendMissingEvent", []string{"webhook", "resend"}, "missing required flag --event"},
		{"ResendBadWait", []string{"webhook", "resend", "--event", id.New(), "--wait", "soon"}, "--wait"},
		{"TestMissingMode", []string{"webhook", "test", "--merchant", id.New()}, "--mode"},
		{"TestBadMode", []string{"webhook", "test", "--merchant", id.New(), "--mode", "prod"}, "must be test or live"},
		{"UnknownFlag", []string{"merchant", "create", "--name", "x", "--bogus"}, "unknown flag --bogus"},
		{"MissingName", []string{"merchant", "create", "--json"}, "missing required flag --name"},
		{"MissingNameValue", []string{"merchant", "create", "--name"}, "--name needs a value"},
		{"EmptyName", []string{"merchant", "create", "--name", "  "}, "--name"},
		{"LongName", []string{"merchant", "create", "--name", strings.Repeat("é", 201)}, "at most 200"},
		{"ExtraArgument", []string{"merchant", "create", "--name", "x", "extra"}, `unexpected argument "extra"`},
		{"BadMode", []string{"key", "create", "--merchant", id.New(), "--mode", "prod"}, "must be test or live"},
		{"MissingMode", []string{"key", "create", "--merchant", id.New()}, "--mode"},
		{"MissingMerchant", []string{"key", "list"}, "--merchant"},
		{"EmptyMerchant", []string{"key", "list", "--merchant", ""}, "missing required flag --merchant"},
		{"MissingKey", []string{"key", "revoke"}, "--key"},
		{"BadGrace", []string{"key", "rotate", "--key", id.New(), "--grace", "soon"}, "--grace"},
		{"NegativeGrace", []string{"key", "rotate", "--key", id.New(), "--grace", "-1h"}, "--grace must not be negative"},
		{"BadBool", []string{"key", "list", "--merchant", id.New(), "--json=maybe"}, "--json"},
		{"ServeBadRateLimit", []string{"serve", "--rate-limit-test", "0"}, "--rate-limit-test"},
		{"ServeBadAddr", []string{"serve", "--addr", "nowhere"}, "--addr"},
		{"ServeBadDuration", []string{"serve", "--recovery-interval", "often"}, "--recovery-interval"},
		{"ServeBadSchedule", []string{"serve", "--webhook-retry-schedule", "0s,-5s"}, "--webhook-retry-schedule"},
		{"ServeBadVaultKey", []string{"serve", "--vault-key", "c2hvcnQ="}, "--vault-key"},
		{"ServeBadBaseURL", []string{"serve", "--base-url", "localhost:8080"}, "--base-url"},
		{"ServeBadRedisURL", []string{"serve", "--redis-url", "http://x"}, "--redis-url"},
		{"ServeBadLogLevel", []string{"serve", "--log-level", "loud"}, "--log-level"},
		{"DemoUnknownFlag", []string{"demo", "--bogus"}, "unknown flag"},
		{"VersionUnknownFlag", []string{"version", "--short"}, "unknown flag --short"},
		{"ServeTLSCertAlone", []string{"serve", "--tls-cert", "tls.crt"}, "--tls-cert and --tls-key go together"},
		{"ServeTLSKeyAlone", []string{"serve", "--tls-key", "tls.key"}, "--tls-cert and --tls-key go together"},
		{"ServeBadLogFormat", []string{"serve", "--log-format", "xml"}, "--log-format"},
		{"ServeNegativeDrainDelay", []string{"serve", "--drain-delay", "-1s"}, "--drain-delay"},
		{"ServeZeroShutdownTimeout", []string{"serve", "--shutdown-timeout", "0s"}, "--shutdown-timeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cliRun(t, map[string]string{"PAYGATE_DATABASE_URL": db}, c.args...).mustFail(t, 2, c.want)
		})
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"}, {"key", "--help"}, {"merchant", "create", "--help"},
		{"key", "rotate", "-h"}, {"serve", "--help"}, {"demo", "-help"}, {"webhook", "set", "--help"},
		{"version", "--help"},
	} {
		r := cliRun(t, nil, args...)
		if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, "Usage: paygate") {
			t.Errorf("paygate %s: exit %d, stderr %q, stdout %q; want usage on stdout, exit 0", strings.Join(args, " "), r.code, r.stderr, r.stdout)
		}
	}
	r := cliRun(t, nil, "serve", "--help")
	for _, flag := range []string{"--addr", "--base-url", "--redis-url", "--config", "--webhook-retry-schedule",
		"--rate-limit-test", "--rate-limit-live", "--rate-limit-unauthenticated", "--vault-key",
		"--rate-limit-tokens", "--rate-limit-tokens-per-address",
		"--3ds-challenge-ttl", "--recovery-interval", "--database-url",
		"--tls-cert", "--tls-key", "--log-format", "--log-level", "--drain-delay", "--shutdown-timeout"} {
		if !strings.Contains(r.stdout, flag+" ") {
			t.Errorf("serve --help does not document %s", flag)
		}
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"UnsupportedDatabase", []string{"merchant", "create", "--name", "x", "--database-url", "mysql://x", "--json"}, "open database"},
		{"UnsupportedDatabaseList", []string{"key", "list", "--merchant", id.New(), "--database-url", "mysql://x"}, "open database"},
		{"UnreachablePostgres", []string{"key", "revoke", "--key", id.New(), "--database-url", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cliRun(t, nil, c.args...).mustFail(t, 1, c.want)
		})
	}
}

func TestDatabaseURLFromEnvironment(t *testing.T) {
	t.Parallel()
	envDB, flagDB := sqliteURL(t), sqliteURL(t)
	env := map[string]string{"PAYGATE_DATABASE_URL": envDB}

	var m merchantCreated
	jsonLine(t, cliRun(t, env, "merchant", "create", "--name", "From env", "--json"), &m)
	// The environment named the database: listing there finds it.
	if got := len(listKeys(t, envDB, m.MerchantID)); got != 4 {
		t.Errorf("env database has %d keys, want 4", got)
	}
	// An explicit flag wins over the environment.
	cliRun(t, env, "key", "list", "--merchant", m.MerchantID, "--database-url", flagDB).mustFail(t, 1, "merchant not found")
	bad := map[string]string{"PAYGATE_DATABASE_URL": "mysql://x"}
	cliRun(t, bad, "key", "list", "--merchant", m.MerchantID, "--database-url", envDB, "--json").mustSucceed(t)
	cliRun(t, bad, "key", "list", "--merchant", m.MerchantID, "--json").mustFail(t, 1, "open database")
}

// captureServe returns a serve stand-in that records the configuration.
func captureServe(got *serveConfig, called *bool) serveFunc {
	return func(_ context.Context, cfg serveConfig, _, _ io.Writer) error {
		*got, *called = cfg, true
		return nil
	}
}

func TestServeConfig(t *testing.T) {
	t.Parallel()
	vaultA := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	vaultB := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32))

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		var cfg serveConfig
		var called bool
		cliRunServe(t, nil, captureServe(&cfg, &called), "serve").mustSucceed(t)
		if !called {
			t.Fatal("serve was not called")
		}
		want := serveConfig{
			DatabaseURL: "sqlite:paygate.db", Addr: "127.0.0.1:8080", BaseURL: "http://127.0.0.1:8080",
			WebhookRetrySchedule: webhook.DefaultSchedule(), RateLimitTest: 100, RateLimitLive: 1000,
			RateLimitUnauthenticated: 60, RateLimitTokens: 300, RateLimitTokensPerAddr: 30,
			ThreeDSChallengeTTL: 30 * time.Minute, RecoveryInterval: 5 * time.Second,
			LogLevel: "info", DashboardSessionIdle: 15 * time.Minute, DashboardSessionMax: 12 * time.Hour,
			MaxConnections:           4096,
			AllowPrivateTestWebhooks: true,
			DrainDelay:               5 * time.Second,
			ShutdownTimeout:          30 * time.Second,
		}
		if cfg.String() != want.String() || len(cfg.VaultKeys) != 0 {
			t.Errorf("defaults\n got %s\nwant %s", cfg, want)
		}
		if got := cfg.WebhookRetrySchedule; len(got) != 10 || got[0] != 0 || got[1] != 5*time.Second || got[9] != 24*time.Hour {
			t.Errorf("retry schedule %v", got)
		}
	})

	t.Run("EnvironmentThenFlags", func(t *testing.T) {
		t.Parallel()
		env := map[string]string{
			"PAYGATE_DATABASE_URL":               "postgres://u:pw@db.internal/paygate",
			"PAYGATE_ADDR":                       "0.0.0.0:9000",
			"PAYGATE_BASE_URL":                   "https://pay.example.com/",
			"PAYGATE_REDIS_URL":                  "redis://:hunter2@redis:6379/0",
			"PAYGATE_CONFIG":                     "/etc/paygate.toml",
			"PAYGATE_WEBHOOK_RETRY_SCHEDULE":     "1s,2s",
			"PAYGATE_RATE_LIMIT_TEST":            "7",
			"PAYGATE_RATE_LIMIT_LIVE":            "8",
			"PAYGATE_RATE_LIMIT_UNAUTHENTICATED": "9",
			"PAYGATE_VAULT_KEY":                  vaultA + "," + vaultB,
			"PAYGATE_3DS_CHALLENGE_TTL":          "10m",
			"PAYGATE_RECOVERY_INTERVAL":          "2s",
			"PAYGATE_LOG_LEVEL":                  "DEBUG",
		}
		var cfg serveConfig
		var called bool
		cliRunServe(t, env, captureServe(&cfg, &called), "serve").mustSucceed(t)
		if cfg.DatabaseURL != env["PAYGATE_DATABASE_URL"] || cfg.Addr != "0.0.0.0:9000" || cfg.BaseURL != "https://pay.example.com" ||
			cfg.RedisURL != env["PAYGATE_REDIS_URL"] || cfg.ConfigFile != "/etc/paygate.toml" ||
			!slices.Equal(cfg.WebhookRetrySchedule, []time.Duration{time.Second, 2 * time.Second}) ||
			cfg.RateLimitTest != 7 || cfg.RateLimitLive != 8 || cfg.RateLimitUnauthenticated != 9 ||
			!slices.Equal(cfg.VaultKeys, []string{vaultA, vaultB}) || cfg.ThreeDSChallengeTTL != 10*time.Minute ||
			cfg.RecoveryInterval != 2*time.Second || cfg.LogLevel != "debug" {
			t.Errorf("from the environment: %+v", cfg)
		}

		// Flags win over the environment.
		cliRunServe(t, env, captureServe(&cfg, &called), "serve", "--addr", "127.0.0.1:0", "--rate-limit-test", "3",
			"--3ds-challenge-ttl", "1m", "--vault-key", vaultB, "--webhook-retry-schedule", "0s", "--base-url", "http://h:1",
			"--database-url", "sqlite:other.db").mustSucceed(t)
		if cfg.Addr != "127.0.0.1:0" || cfg.RateLimitTest != 3 || cfg.RateLimitLive != 8 || cfg.ThreeDSChallengeTTL != time.Minute ||
			!slices.Equal(cfg.VaultKeys, []string{vaultB}) || !slices.Equal(cfg.WebhookRetrySchedule, []time.Duration{0}) ||
			cfg.BaseURL != "http://h:1" || cfg.DatabaseURL != "sqlite:other.db" {
			t.Errorf("flags over the environment: %+v", cfg)
		}

		// Without --base-url or its variable, the base URL follows --addr.
		cliRunServe(t, map[string]string{"PAYGATE_ADDR": "127.0.0.1:8181"}, captureServe(&cfg, &called), "serve").mustSucceed(t)
		if cfg.BaseURL != "http://127.0.0.1:8181" {
			t.Errorf("base URL %q, want http://127.0.0.1:8181", cfg.BaseURL)
		}
	})

	t.Run("DashboardSessions", func(t *testing.T) {
		t.Parallel()
		var cfg serveConfig
		var called bool
		cliRunServe(t, map[string]string{"PAYGATE_DASHBOARD_SESSION_IDLE": "10m"}, captureServe(&cfg, &called),
			"serve", "--dashboard-session-max", "2h").mustSucceed(t)
		if cfg.DashboardSessionIdle != 10*time.Minute || cfg.DashboardSessionMax != 2*time.Hour {
			t.Errorf("dashboard sessions: idle %v max %v, want 10m and 2h", cfg.DashboardSessionIdle, cfg.DashboardSessionMax)
		}
		cliRun(t, nil, "serve", "--dashboard-session-idle", "13h").mustFail(t, 2, "--dashboard-session-idle")

		// The new name, and its variable; --require-mfa.
		cliRunServe(t, map[string]string{"PAYGATE_REQUIRE_MFA": "true"}, captureServe(&cfg, &called),
			"serve", "--session-idle-timeout", "5m").mustSucceed(t)
		if cfg.DashboardSessionIdle != 5*time.Minute || !cfg.RequireMFA {
			t.Errorf("--session-idle-timeout 5m, PAYGATE_REQUIRE_MFA: idle %v, require MFA %v", cfg.DashboardSessionIdle, cfg.RequireMFA)
		}
		cliRunServe(t, map[string]string{"PAYGATE_SESSION_IDLE_TIMEOUT": "7m"}, captureServe(&cfg, &called), "serve", "--require-mfa").mustSucceed(t)
		if cfg.DashboardSessionIdle != 7*time.Minute || !cfg.RequireMFA {
			t.Errorf("PAYGATE_SESSION_IDLE_TIMEOUT 7m, --require-mfa: idle %v, require MFA %v", cfg.DashboardSessionIdle, cfg.RequireMFA)
		}
	})

	t.Run("AllowPrivateTestWebhooks", func(t *testing.T) {
		t.Parallel()
		var cfg serveConfig
		var called bool
		cliRunServe(t, nil, captureServe(&cfg, &called), "serve", "--allow-private-test-webhooks=false").mustSucceed(t)
		if cfg.AllowPrivateTestWebhooks {
			t.Error("--allow-private-test-webhooks=false left private test webhooks allowed")
		}
		env := map[string]string{"PAYGATE_ALLOW_PRIVATE_TEST_WEBHOOKS": "false"}
		cliRunServe(t, env, captureServe(&cfg, &called), "serve").mustSucceed(t)
		if cfg.AllowPrivateTestWebhooks {
			t.Error("PAYGATE_ALLOW_PRIVATE_TEST_WEBHOOKS=false left private test webhooks allowed")
		}
		cliRunServe(t, env, captureServe(&cfg, &called), "serve", "--allow-private-test-webhooks").mustSucceed(t)
		if !cfg.AllowPrivateTestWebhooks {
			t.Error("the flag did not win over the environment")
		}
		cliRun(t, map[string]string{"PAYGATE_ALLOW_PRIVATE_TEST_WEBHOOKS": "maybe"}, "serve").mustFail(t, 2, "PAYGATE_ALLOW_PRIVATE_TEST_WEBHOOKS")
	})

	t.Run("ErrBadEnvironment", func(t *testing.T) {
		t.Parallel()
		cliRun(t, map[string]string{"PAYGATE_RATE_LIMIT_LIVE": "lots"}, "serve").mustFail(t, 2, "PAYGATE_RATE_LIMIT_LIVE")
		cliRun(t, map[string]string{"PAYGATE_3DS_CHALLENGE_TTL": "-1m"}, "serve").mustFail(t, 2, "--3ds-challenge-ttl")
		// A bad variable does not matter when the flag overrides it.
		var cfg serveConfig
		var called bool
		cliRunServe(t, map[string]string{"PAYGATE_RATE_LIMIT_LIVE": "lots"}, captureServe(&cfg, &called), "serve", "--rate-limit-live", "5").mustSucceed(t)
	})

	t.Run("ServeFails", func(t *testing.T) {
		t.Parallel()
		failing := func(context.Context, serveConfig, io.Writer, io.Writer) error {
			return errors.New("listen tcp: address in use")
		}
		cliRunServe(t, nil, failing, "serve").mustFail(t, 1, "paygate: serve: listen tcp: address in use")
	})

	t.Run("Panic", func(t *testing.T) {
		t.Parallel()
		boom := func(context.Context, serveConfig, io.Writer, io.Writer) error { panic("boom\nwith a second line") }
		cliRunServe(t, nil, boom, "serve").mustFail(t, 1, "paygate: serve: internal error: boom with a second line")
	})

	t.Run("LogValueMasksSecrets", func(t *testing.T) {
		t.Parallel()
		cfg := serveConfig{
			DatabaseURL: "postgres://paygate:dbsecret@db/paygate?password=dbsecret2", RedisURL: "redis://user:hunter2@redis:6379/0",
			VaultKeys: []string{vaultA}, Addr: "127.0.0.1:8080",
		}
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("config", "config", cfg)
		out := buf.String() + cfg.String()
		for _, secret := range []string{"dbsecret", "hunter2", vaultA} {
			if strings.Contains(out, secret) {
				t.Errorf("logged config leaks %q: %s", secret, out)
			}
		}
		if !strings.Contains(buf.String(), `"redisUrl":"redis://user:xxxxx@redis:6379/0"`) {
			t.Errorf("redis URL not shown masked: %s", buf.String())
		}
	})
}

func TestDemo(t *testing.T) {
	t.Parallel()
	db := sqliteURL(t)
	var cfg serveConfig
	var called bool
	r := cliRunServe(t, nil, captureServe(&cfg, &called), "demo", "--database-url", db, "--addr", "127.0.0.1:8099").mustSucceed(t)
	if !called || cfg.DatabaseURL != db || cfg.BaseURL != "http://127.0.0.1:8099" || cfg.DrainDelay != 0 {
		t.Fatalf("demo served %+v (called %v)", cfg, called)
	}
	key := regexp.MustCompile(`smtgw_sk_test_[0-9A-Za-z]{32,}`).FindString(r.stdout)
	pub := regexp.MustCompile(`smtgw_pk_test_[0-9A-Za-z]{32,}`).FindString(r.stdout)
	mid := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}`).FindString(r.stdout)
	if key == "" || pub == "" || mid == "" {
		t.Fatalf("demo output lacks the merchant id, test secret or public key:\n%s", r.stdout)
	}
	yy := (time.Now().Year() + 3) % 100
	for _, want := range []string{
		"curl ", "'http://127.0.0.1:8099/v1/payments'", "'X-API-Key: " + key + "'", "'Idempotency-Key: demo-",
		"'Content-Type: application/json'", `"amount":"10.00"`, `"currency":"EUR"`, `"customerId":`,
		`"number":"4242424242424242"`, `"cvv":"123"`, `"holderName":`, `"expiryYear":"` + twoDigits(yy) + `"`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
	// The payment body in the curl is valid JSON.
	body := regexp.MustCompile(`-d '(\{.*\})'`).FindStringSubmatch(r.stdout)
	if body == nil || !json.Valid([]byte(body[1])) {
		t.Errorf("curl body is not JSON:\n%s", r.stdout)
	}
	// The merchant is a real one with its four keys.
	var listed []json.RawMessage
	jsonLine(t, cliRun(t, nil, "key", "list", "--merchant", mid, "--database-url", db, "--json"), &listed)
	if len(listed) != 4 {
		t.Errorf("demo merchant has %d keys, want 4", len(listed))
	}
	// The dashboard login it prints is real: the password checks against
	// the stored hash of demo@example.com, of this merchant.
	pw := regexp.MustCompile(`Password:\s+(\S+)`).FindStringSubmatch(r.stdout)
	if pw == nil || !strings.Contains(r.stdout, "http://127.0.0.1:8099/dashboard/") {
		t.Fatalf("demo output lacks the dashboard address or login:\n%s", r.stdout)
	}
	checkDemoLogin(t, db, mid, pw[1])

	// Second run: the merchant exists; its secret cannot be shown again.
	called = false
	r = cliRunServe(t, nil, captureServe(&cfg, &called), "demo", "--database-url", db).mustSucceed(t)
	if !called || strings.Contains(r.stdout, key) || !strings.Contains(r.stdout, mid) ||
		!strings.Contains(r.stdout, "paygate key create --merchant "+mid) || !strings.Contains(r.stdout, "--mode test") ||
		!strings.Contains(r.stdout, "X-API-Key: <") {
		t.Errorf("second demo run printed:\n%s", r.stdout)
	}

	// Demo fails cleanly on a database it cannot open.
	cliRunServe(t, nil, captureServe(&cfg, &called), "demo", "--database-url", "mysql://x").mustFail(t, 1, "open database")
}

// checkDemoLogin checks that demo's dashboard user belongs to the merchant
// and that the printed password matches its hash.
func checkDemoLogin(t *testing.T, db, merchantID, password string) {
	t.Helper()
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u, err := st.UserByEmail(context.Background(), demoEmail)
	if err != nil {
		t.Fatalf("demo user: %v", err)
	}
	ok, err := auth.CheckPassword(u.PasswordHash, password)
	if u.MerchantID != merchantID || !ok || err != nil {
		t.Errorf("demo user of merchant %s (want %s); password matches %v (%v)", u.MerchantID, merchantID, ok, err)
	}
}

func twoDigits(n int) string { return string(rune('0'+n/10)) + string(rune('0'+n%10)) }

func TestCheckWebhookTarget(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url  string
		mode paygate.Mode
		ok   bool
	}{
		{"http://localhost:3000/hook", paygate.ModeTest, true},
		{"http://10.0.0.1/hook", paygate.ModeTest, true},
		{"https://hooks.example.com/x", paygate.ModeLive, true},
		{"https://8.8.8.8/x", paygate.ModeLive, true},
		{"https://[2606:4700::1111]/x", paygate.ModeLive, true},
		{"https://example.123x/x", paygate.ModeLive, true},
		{"http://hooks.example.com/x", paygate.ModeLive, false},
		{"https://127.0.0.2/x", paygate.ModeLive, false},
		{"https://[fc00::1]/x", paygate.ModeLive, false},
		{"https://[ff02::1]/x", paygate.ModeLive, false},
		{"https://255.255.255.255/x", paygate.ModeLive, false},
		{"https://192.168.0.10./x", paygate.ModeLive, false},
		{"https://017700000001/x", paygate.ModeLive, false},
	} {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkWebhookTarget(u, c.mode, webhook.Policy{}); (err == nil) != c.ok {
			t.Errorf("%s in %s mode: error %v, want ok=%v", c.url, c.mode, err, c.ok)
		}
	}
}

// TestServeEndToEnd starts the real server through run on port 0, makes the
// payment demo suggests with a key from merchant create, and stops it with
// the context as SIGTERM would: run returns 0 after a graceful shutdown.
func TestServeEndToEnd(t *testing.T) {
	t.Parallel()
	db := sqliteURL(t)
	m := newMerchant(t, db, "End to end")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testenv.Buffer
	env := map[string]string{"PAYGATE_DATABASE_URL": db, "PAYGATE_LOG_LEVEL": "warn"}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--log-level", "info", "--drain-delay", "0s"}, func(k string) string { return env[k] }, &stdout, &stderr)
	}()

	addrRE := regexp.MustCompile(`"msg":"listening".*?"addr":"([^"]+)"`)
	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == ""; time.Sleep(20 * time.Millisecond) {
		select {
		case code := <-done:
			t.Fatalf("serve exited %d before listening; stderr:\n%s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not log that it listens; stderr:\n%s", stderr.String())
		}
		if sm := addrRE.FindStringSubmatch(stderr.String()); sm != nil {
			addr = sm[1]
		}
	}

	body := regexp.MustCompile(`-d '(\{.*\})'`).FindStringSubmatch(demoCurl("http://"+addr, m.TestSecretKey, time.Now().Year()))
	if body == nil {
		t.Fatal("no body in the demo curl")
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/payments", strings.NewReader(body[1]))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", m.TestSecretKey)
	req.Header.Set("Idempotency-Key", "e2e-"+id.New())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	respBody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || !strings.Contains(string(respBody), `"status":"captured"`) {
		t.Errorf("demo payment: %d %s", resp.StatusCode, respBody)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d after cancellation; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(40 * time.Second):
		t.Fatal("serve did not stop after cancellation")
	}
	if out := stdout.String(); out != "" {
		t.Errorf("serve wrote to stdout: %q", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("log line is not JSON: %q", line)
		}
	}
}
