package cardfields

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/ratelimit"
)

// fakeKeys is a store of keys and allowed origins.
type fakeKeys struct {
	keys    []paygate.APIKey
	origins map[paygate.Mode][]string
	err     error
}

func (f *fakeKeys) APIKeys(_ context.Context, q paygate.APIKeyQuery) ([]paygate.APIKey, error) {
	if f.err != nil {
		return nil, f.err
	}
	for _, k := range f.keys {
		if bytes.Equal(k.Hash, q.Hash) {
			return []paygate.APIKey{k}, nil
		}
	}
	return nil, nil
}

func (f *fakeKeys) AllowedOrigins(_ context.Context, _ string, mode paygate.Mode) ([]string, error) {
	return append([]string{}, f.origins[mode]...), nil
}

type fixture struct {
	h                          *Handler
	test, live, secret, revoke string
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	now := time.Now()
	store := &fakeKeys{origins: map[paygate.Mode][]string{
		paygate.ModeLive: {"https://shop.example", "https://www.shop.example:8443"},
		paygate.ModeTest: {"https://staging.shop.example"},
	}}
	var f fixture
	for _, k := range []struct {
		out  *string
		mode paygate.Mode
		typ  paygate.KeyType
	}{
		{&f.test, paygate.ModeTest, paygate.KeyPublic},
		{&f.live, paygate.ModeLive, paygate.KeyPublic},
		{&f.secret, paygate.ModeTest, paygate.KeySecret},
		{&f.revoke, paygate.ModeLive, paygate.KeyPublic},
	} {
		secret, key, err := auth.NewKey("key-"+string(k.mode)+string(k.typ), "m1", k.mode, k.typ, now.Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if k.out == &f.revoke {
			at := now.Add(-time.Minute)
			key.RevokedAt = &at
		}
		*k.out = secret
		store.keys = append(store.keys, key)
	}
	f.h = New(Config{Store: store})
	return f
}

func get(h http.Handler, path string, header http.Header) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func framePath(key, origin string) string {
	return FramePath + "?key=" + url.QueryEscape(key) + "&origin=" + url.QueryEscape(origin)
}

func TestFrameHeaders(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, c := range []struct {
		name, key, origin, ancestors string
	}{
		{"Live", f.live, "https://shop.example", "frame-ancestors https://shop.example https://www.shop.example:8443"},
		{"LiveDefaultPort", f.live, "https://SHOP.example:443", "frame-ancestors https://shop.example https://www.shop.example:8443"},
		{"TestLoopback", f.test, "http://127.0.0.1:41234", "frame-ancestors https://staging.shop.example http://localhost:* http://127.0.0.1:*"},
		{"TestListed", f.test, "https://staging.shop.example", "frame-ancestors https://staging.shop.example http://localhost:* http://127.0.0.1:*"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := get(f.h, framePath(c.key, c.origin), nil)
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			h := w.Header()
			csp := h.Get("Content-Security-Policy")
			if !strings.HasSuffix(csp, "; "+c.ancestors) {
				t.Errorf("CSP %q, want it to end with %q", csp, c.ancestors)
			}
			for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "base-uri 'none'", "form-action 'none'"} {
				if !strings.Contains(csp, want+";") {
					t.Errorf("CSP %q lacks %q", csp, want)
				}
			}
			if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
				t.Errorf("CSP %q allows inline code", csp)
			}
			if v := h.Get("X-Frame-Options"); v != "" {
				t.Errorf("X-Frame-Options %q on the frame: it could not be embedded at all", v)
			}
			if h.Get("Referrer-Policy") != "no-referrer" || h.Get("Cache-Control") != "no-store" ||
				h.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
				t.Errorf("headers %v", h)
			}
			body := w.Body.String()
			norm, _ := paygate.NormalizeOrigin(paygate.ModeTest, c.origin)
			if !strings.Contains(body, `data-parent="`+norm+`"`) {
				t.Errorf("the frame does not name its parent %q:\n%s", norm, body)
			}
			// No inline script or style: the CSP would block them.
			if strings.Contains(body, "<script>") || strings.Contains(body, "style=") || strings.Contains(body, "<style") {
				t.Errorf("inline script or style in the frame:\n%s", body)
			}
			for _, want := range []string{`autocomplete="cc-number"`, `autocomplete="cc-exp"`, `autocomplete="cc-csc"`, `autocomplete="cc-name"`,
				`inputmode="numeric"`, `<label for="number">`, `aria-describedby="cvc-error"`} {
				if !strings.Contains(body, want) {
					t.Errorf("the frame lacks %s", want)
				}
			}
		})
	}
}

func TestFrameRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, c := range []struct {
		name, key, origin string
		status            int
	}{
		{"NoKey", "", "https://shop.example", http.StatusUnauthorized},
		{"Malformed", "smtgw_pk_live_short", "https://shop.example", http.StatusUnauthorized},
		{"Unknown", "smtgw_pk_live_" + strings.Repeat("a", 40), "https://shop.example", http.StatusUnauthorized},
		{"Secret", f.secret, "http://127.0.0.1:3000", http.StatusUnauthorized},
		{"Revoked", f.revoke, "https://shop.example", http.StatusUnauthorized},
		{"NoOrigin", f.live, "", http.StatusForbidden},
		{"OtherOrigin", f.live, "https://evil.example", http.StatusForbidden},
		{"LiveLoopback", f.live, "http://127.0.0.1:3000", http.StatusForbidden},
		{"HTTPOfHTTPS", f.live, "http://shop.example", http.StatusForbidden},
		{"TestOther", f.test, "https://shop.example", http.StatusForbidden},
		{"NullOrigin", f.test, "null", http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := get(f.h, framePath(c.key, c.origin), nil)
			if w.Code != c.status {
				t.Fatalf("status %d, want %d: %s", w.Code, c.status, w.Body)
			}
			// An error page may be framed by no one, and never shows the key.
			csp := w.Header().Get("Content-Security-Policy")
			if !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(w.Body.String(), "data-key") {
				t.Errorf("error page: CSP %q, body %s", csp, w.Body)
			}
			if c.key != "" && strings.Contains(w.Body.String(), c.key) {
				t.Error("the error page shows the key")
			}
		})
	}
	// A store that cannot be reached: 503, not 401.
	down := New(Config{Store: &fakeKeys{err: paygate.Errorf(paygate.CodeServiceUnavailable, "", "down")}})
	if w := get(down, framePath(f.live, "https://shop.example"), nil); w.Code != http.StatusServiceUnavailable {
		t.Errorf("store down: status %d, want 503", w.Code)
	}
}

func TestAssets(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, c := range []struct{ path, ctype, marker string }{
		{ScriptPath, "text/javascript; charset=utf-8", "Paygate.prototype.mountCard"},
		{FrameScriptPath, "text/javascript; charset=utf-8", "function luhn"},
		{FrameStylePath, "text/css; charset=utf-8", "--pg-font-family"},
	} {
		w := get(f.h, c.path, nil)
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != c.ctype || !strings.Contains(w.Body.String(), c.marker) {
			t.Errorf("%s: %d %q", c.path, w.Code, w.Header().Get("Content-Type"))
			continue
		}
		etag := w.Header().Get("ETag")
		if etag == "" || w.Header().Get("Cache-Control") != "public, max-age=300" || w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", c.path, w.Header())
		}
		again := get(f.h, c.path, http.Header{"If-None-Match": {etag}})
		if again.Code != http.StatusNotModified || again.Body.Len() != 0 {
			t.Errorf("%s with If-None-Match: %d, %d bytes; want 304 and none", c.path, again.Code, again.Body.Len())
		}
		if stale := get(f.h, c.path, http.Header{"If-None-Match": {`"other"`}}); stale.Code != http.StatusOK {
			t.Errorf("%s with another ETag: %d", c.path, stale.Code)
		}
	}
	r := httptest.NewRequest(http.MethodPost, ScriptPath, nil)
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST %s: %d", ScriptPath, w.Code)
	}
}

// TestScriptsPostToNamedOrigins keeps '*' out of every postMessage: the
// frame posts to its parent's origin and paygate.js to the gateway's.
func TestScriptsPostToNamedOrigins(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"static/paygate.js", "static/card-frame.js"} {
		b, err := staticFS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if strings.Contains(s, "'*'") || strings.Contains(s, `"*"`) {
			t.Errorf("%s names the origin '*'", name)
		}
		if !strings.Contains(s, "e.origin !==") || !strings.Contains(s, "e.source !==") {
			t.Errorf("%s does not check the origin and source of the messages it hears", name)
		}
	}
}

// BenchmarkFrame serves the card frame (key lookup and origins from an
// in-memory store, the template, the headers): what the gateway adds to a
// checkout page's load besides the store's two reads.
func BenchmarkFrame(b *testing.B) {
	f := newFixture(b)
	path := framePath(f.live, "https://shop.example")
	b.ReportAllocs()
	for b.Loop() {
		if w := get(f.h, path, nil); w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}

// BenchmarkScript serves paygate.js from memory.
func BenchmarkScript(b *testing.B) {
	f := newFixture(b)
	b.ReportAllocs()
	for b.Loop() {
		if w := get(f.h, ScriptPath, nil); w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}

// TestFrameLocale: the locale option picks the labels (and, through
// <html lang>, the frame script's messages); an unknown one is English.
func TestFrameLocale(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, c := range []struct{ locale, lang, label, placeholder string }{
		{"fr-FR", "fr", "Numéro de carte", "MM / AA"},
		{"de", "de", "Kartennummer", "MM / JJ"},
		{"pt-BR", "en", "Card number", "MM / YY"},
		{"", "en", "Card number", "MM / YY"},
	} {
		w := get(f.h, framePath(f.live, "https://shop.example")+"&locale="+url.QueryEscape(c.locale), nil)
		body := w.Body.String()
		if w.Code != http.StatusOK || !strings.Contains(body, `<html lang="`+c.lang+`"`) || !strings.Contains(body, `<label for="number">`+c.label+`</label>`) ||
			!strings.Contains(body, `placeholder="`+c.placeholder+`"`) {
			t.Errorf("locale %q: %d\n%s", c.locale, w.Code, body)
		}
		// Every field is required, and says so to assistive technology.
		if n := strings.Count(body, `aria-required="true"`); n != 4 {
			t.Errorf("locale %q: %d fields say aria-required, want 4", c.locale, n)
		}
	}
	css, _ := staticFS.ReadFile("static/card-frame.css")
	if strings.Contains(string(css), "display: none") {
		t.Errorf("card-frame.css hides something with display: none; an empty aria-live region must stay rendered")
	}
	js, _ := staticFS.ReadFile("static/card-frame.js")
	for lang := range frameLanguages {
		if !strings.Contains(string(js), "\n    "+lang+": {") {
			t.Errorf("card-frame.js has no messages in %q", lang)
		}
	}
}

// TestFrameBadKeysLimited: every frame asked for with a key that is not an
// active public key is charged to the client address's budget of failed
// authentications; over it the answer is 429, while a good key from that
// address and a bad key from another address are answered as usual.
func TestFrameBadKeysLimited(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	store := f.h.store
	const limit = 5
	h := New(Config{Store: store, Limiter: ratelimit.NewMemory(), UnauthenticatedLimit: limit})
	from := func(addr, key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, framePath(key, "https://shop.example"), nil)
		r.RemoteAddr = addr + ":40000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for i := range limit {
		key := "smtgw_pk_live_" + strings.Repeat(string(rune('a'+i)), 40)
		if w := from("192.0.2.7", key); w.Code != http.StatusUnauthorized {
			t.Fatalf("bad key %d: %d, want 401", i+1, w.Code)
		}
	}
	for _, key := range []string{"smtgw_pk_live_" + strings.Repeat("z", 40), "not a key", f.secret} {
		w := from("192.0.2.7", key)
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
			t.Fatalf("bad key %q over the budget: %d (Retry-After %q), want 429", key, w.Code, w.Header().Get("Retry-After"))
		}
	}
	if w := from("192.0.2.7", f.live); w.Code != http.StatusOK {
		t.Fatalf("a good key from the limited address: %d", w.Code)
	}
	if w := from("192.0.2.8", "smtgw_pk_live_"+strings.Repeat("z", 40)); w.Code != http.StatusUnauthorized {
		t.Fatalf("a bad key from another address: %d, want 401", w.Code)
	}
}
