package e2e

import (
	"context"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// The 3-D Secure flow over HTTP, as a customer's browser drives it: the
// merchant's page posts threeDsData.parameters to redirectUrl, the challenge
// page posts one of its forms to TermUrl, and the callback sends the browser
// back to the merchant. browser_test.go does the same in a real browser.

const (
	card3DS                = "4000000000003220"
	card3DSCaptureDeclined = "4000008400001629"
)

// threeDS is a creation answer's threeDsData.
type threeDS struct {
	RedirectURL string
	Method      string
	Parameters  map[string]string
}

// create3DS creates a payment with a 3-D Secure card and returns its id and
// threeDsData, checking the creation answer's shape.
func create3DS(t *testing.T, g *gateway, key, number, returnURL string) (string, threeDS) {
	t.Helper()
	body := paymentBody(number, "10.50", "EUR")
	if returnURL != "" {
		body["returnUrl"] = returnURL
	}
	r := g.call(http.MethodPost, "/v1/payments", key, body)
	expect(t, r, http.StatusCreated)
	d := r.Data()
	if d["status"] != "pending_3ds" || d["threeDsRequired"] != true {
		t.Fatalf("creation answer: %s", r.Raw)
	}
	raw, _ := d["threeDsData"].(map[string]any)
	tds := threeDS{Parameters: map[string]string{}}
	tds.RedirectURL, _ = raw["redirectUrl"].(string)
	tds.Method, _ = raw["method"].(string)
	params, _ := raw["parameters"].(map[string]any)
	for k, v := range params {
		tds.Parameters[k], _ = v.(string)
	}
	if tds.Method != "POST" || tds.Parameters["creq"] == "" || tds.Parameters["threeDSSessionData"] == "" || tds.Parameters["TermUrl"] == "" {
		t.Fatalf("threeDsData: %s", r.Raw)
	}
	return d["id"].(string), tds
}

// browserClient is a client that does not follow redirects, as a test of
// what the browser is told.
var browserClient = &http.Client{
	Transport:     conformingTransport{next: http.DefaultTransport},
	Timeout:       60 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// page is an HTML answer.
type page struct {
	Status int
	Header http.Header
	Body   string
}

// postForm posts the fields as a browser form does.
func postForm(t *testing.T, target string, fields map[string]string) page {
	t.Helper()
	v := url.Values{}
	for k, f := range fields {
		v.Set(k, f)
	}
	resp, err := browserClient.PostForm(target, v)
	if err != nil {
		t.Fatalf("POST %s: %v", target, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: read the answer: %v", target, err)
	}
	return page{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

var (
	formRE  = regexp.MustCompile(`(?s)<form id="(threeds-[a-z]+)" method="post" action="([^"]+)">(.*?)</form>`)
	inputRE = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

// challengeForms returns the action and hidden fields of each form of a
// challenge page.
func challengeForms(t *testing.T, body string) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, m := range formRE.FindAllStringSubmatch(body, -1) {
		fields := map[string]string{"action": html.UnescapeString(m[2])}
		for _, in := range inputRE.FindAllStringSubmatch(m[3], -1) {
			fields[in[1]] = html.UnescapeString(in[2])
		}
		out[m[1]] = fields
	}
	if out["threeds-complete"] == nil || out["threeds-fail"] == nil {
		t.Fatalf("challenge page without its two forms:\n%s", body)
	}
	return out
}

// submit posts a form of a challenge page (its fields but action) to its
// action.
func submit(t *testing.T, form map[string]string) page {
	t.Helper()
	fields := map[string]string{}
	for k, v := range form {
		if k != "action" {
			fields[k] = v
		}
	}
	return postForm(t, form["action"], fields)
}

// openChallenge posts the threeDsData to redirectUrl and returns the page.
func openChallenge(t *testing.T, tds threeDS) page {
	t.Helper()
	p := postForm(t, tds.RedirectURL, tds.Parameters)
	if p.Status != http.StatusOK {
		t.Fatalf("challenge page: %d\n%s", p.Status, p.Body)
	}
	return p
}

// csp parses a Content-Security-Policy into its directives.
func csp(t *testing.T, h http.Header) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, d := range strings.Split(h.Get("Content-Security-Policy"), ";") {
		f := strings.Fields(d)
		if len(f) > 0 {
			out[f[0]] = f[1:]
		}
	}
	if len(out) == 0 {
		t.Fatal("no Content-Security-Policy")
	}
	return out
}

// wantBrowserHeaders checks the headers every browser page carries.
func wantBrowserHeaders(t *testing.T, what string, p page, frameAncestors ...string) {
	t.Helper()
	if p.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("%s: Referrer-Policy %q", what, p.Header.Get("Referrer-Policy"))
	}
	if p.Header.Get("X-Content-Type-Options") != "nosniff" || p.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("%s: nosniff/no-store missing: %v", what, p.Header)
	}
	if p.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("%s: X-Frame-Options %q", what, p.Header.Get("X-Frame-Options"))
	}
	c := csp(t, p.Header)
	if strings.Join(c["default-src"], " ") != "'none'" || strings.Join(c["base-uri"], " ") != "'none'" {
		t.Errorf("%s: CSP %q", what, p.Header.Get("Content-Security-Policy"))
	}
	if s := c["style-src"]; len(s) != 1 || !strings.HasPrefix(s[0], "'sha256-") {
		t.Errorf("%s: style-src %v, want one hash", what, s)
	}
	if _, ok := c["script-src"]; ok {
		t.Errorf("%s: script-src present: %v", what, c["script-src"])
	}
	want := "'none'"
	if len(frameAncestors) > 0 {
		want = strings.Join(frameAncestors, " ")
	}
	if got := strings.Join(c["frame-ancestors"], " "); got != want {
		t.Errorf("%s: frame-ancestors %q, want %q", what, got, want)
	}
	if p.Status != http.StatusSeeOther && !strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") {
		t.Errorf("%s: Content-Type %q", what, p.Header.Get("Content-Type"))
	}
	if strings.Contains(p.Body, "<script") {
		t.Errorf("%s: the page has a script", what)
	}
}

// getPayment reads a payment through the API.
func getPayment(t *testing.T, g *gateway, key, id string) map[string]any {
	t.Helper()
	r := g.call(http.MethodGet, "/v1/payments/"+id, key, nil)
	expect(t, r, http.StatusOK)
	return r.Data()
}

func TestThreeDSOutcomes(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db, m, g := startWithMerchant(t, e, "Ada's Books & Co")
		key := m.TestSecretKey
		returnURL := "https://shop.example/checkout/return?order=42&lang=en#done"
		cases := []struct {
			name, card, form string
			status, code     string
			decline          any
			event            paygate.EventType
		}{
			{"Complete", card3DS, "threeds-complete", "captured", "", nil, paygate.EventPaymentCaptured},
			{"Fail", card3DS, "threeds-fail", "failed", "AUTHENTICATION_FAILED", nil, paygate.EventPaymentFailed},
			{"CaptureDeclined", card3DSCaptureDeclined, "threeds-complete", "failed", "CARD_DECLINED", "generic_decline", paygate.EventPaymentFailed},
			{"CaptureDeclinedFail", card3DSCaptureDeclined, "threeds-fail", "failed", "AUTHENTICATION_FAILED", nil, paygate.EventPaymentFailed},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				id, tds := create3DS(t, g, key, c.card, returnURL)
				if got := getPayment(t, g, key, id)["status"]; got != "pending_3ds" {
					t.Fatalf("status before the challenge: %v", got)
				}
				if tds.RedirectURL != g.url+"/v1/3ds/sandbox/challenge" {
					t.Fatalf("redirectUrl %q, want the sandbox page under %s", tds.RedirectURL, g.url)
				}
				token := strings.TrimPrefix(tds.Parameters["TermUrl"], g.url+"/v1/3ds/callback/")
				if token == tds.Parameters["TermUrl"] || len(token) < 22 {
					t.Fatalf("TermUrl %q", tds.Parameters["TermUrl"])
				}
				ch := openChallenge(t, tds)
				for _, want := range []string{"Ada&#39;s Books &amp; Co", "10.50 EUR"} {
					if !strings.Contains(ch.Body, want) {
						t.Errorf("challenge page lacks %q", want)
					}
				}
				forms := challengeForms(t, ch.Body)
				for _, f := range forms {
					if f["action"] != tds.Parameters["TermUrl"] {
						t.Fatalf("form posts to %q, want TermUrl", f["action"])
					}
				}

				res := submit(t, forms[c.form])
				if res.Status != http.StatusSeeOther {
					t.Fatalf("callback: %d\n%s", res.Status, res.Body)
				}
				wantLoc := fmt.Sprintf("https://shop.example/checkout/return?order=42&lang=en&status=%s&transactionId=%s#done", c.status, id)
				if loc := res.Header.Get("Location"); loc != wantLoc {
					t.Fatalf("Location %q, want %q", loc, wantLoc)
				}
				wantBrowserHeaders(t, "callback redirect", res, "https://shop.example")

				p := getPayment(t, g, key, id)
				if p["status"] != c.status || p["declineCode"] != c.decline {
					t.Fatalf("payment after the challenge: %v", p)
				}
				if c.code == "" && p["errorCode"] != nil || c.code != "" && p["errorCode"] != c.code {
					t.Fatalf("errorCode %v, want %q", p["errorCode"], c.code)
				}
				if c.status == "captured" && p["amountCaptured"] != "10.50" {
					t.Fatalf("amountCaptured %v", p["amountCaptured"])
				}
				evs := events(t, db, m.MerchantID, paygate.ModeTest)
				if countEvents(evs, c.event, id) != 1 || len(eventsOf(evs, id)) != 1 {
					t.Fatalf("events of the payment: %v, want one %s", eventsOf(evs, id), c.event)
				}

				// A replay of either form: 404 page, nothing changes.
				for _, f := range []string{"threeds-complete", "threeds-fail"} {
					again := submit(t, forms[f])
					if again.Status != http.StatusNotFound || !strings.Contains(again.Body, "no longer valid") {
						t.Fatalf("replay: %d\n%s", again.Status, again.Body)
					}
					wantBrowserHeaders(t, "404 page", again)
				}
				// The challenge page of a used token: 404 too.
				if p := postForm(t, tds.RedirectURL, tds.Parameters); p.Status != http.StatusNotFound {
					t.Fatalf("challenge page of a used token: %d", p.Status)
				}
				if after := getPayment(t, g, key, id); after["status"] != c.status || after["updatedAt"] != p["updatedAt"] {
					t.Fatalf("payment changed by a replay: %v", after)
				}
				if n := len(eventsOf(events(t, db, m.MerchantID, paygate.ModeTest), id)); n != 1 {
					t.Fatalf("%d events after replays", n)
				}
				if strings.Contains(g.Logs(), token) {
					t.Fatal("the token appears in the logs")
				}
			})
		}

		t.Run("NoReturnURL", func(t *testing.T) {
			id, tds := create3DS(t, g, key, card3DS, "")
			ch := openChallenge(t, tds)
			wantBrowserHeaders(t, "challenge page without returnUrl", ch)
			if got := csp(t, ch.Header)["form-action"]; strings.Join(got, " ") != g.url+"/v1/3ds/callback/" {
				t.Fatalf("form-action %v", got)
			}
			res := submit(t, challengeForms(t, ch.Body)["threeds-complete"])
			if res.Status != http.StatusOK || !strings.Contains(res.Body, "Payment confirmed") || !strings.Contains(res.Body, id) {
				t.Fatalf("result page: %d\n%s", res.Status, res.Body)
			}
			wantBrowserHeaders(t, "result page", res)
			if getPayment(t, g, key, id)["status"] != "captured" {
				t.Fatal("not captured")
			}
			_, tds = create3DS(t, g, key, card3DS, "")
			res = submit(t, challengeForms(t, openChallenge(t, tds).Body)["threeds-fail"])
			if res.Status != http.StatusOK || !strings.Contains(res.Body, "Payment not completed") {
				t.Fatalf("result page: %d\n%s", res.Status, res.Body)
			}
		})

		t.Run("CreationAnswerIsReplayedAsStored", func(t *testing.T) {
			body := paymentBody(card3DS, "10.50", "EUR")
			first := g.call(http.MethodPost, "/v1/payments", key, body, "Idempotency-Key", "tds-replay")
			expect(t, first, http.StatusCreated)
			id := first.Data()["id"].(string)
			tds := first.Data()["threeDsData"].(map[string]any)
			params := map[string]string{}
			for k, v := range tds["parameters"].(map[string]any) {
				params[k] = v.(string)
			}
			res := submit(t, challengeForms(t, openChallenge(t, threeDS{RedirectURL: tds["redirectUrl"].(string), Parameters: params}).Body)["threeds-complete"])
			if res.Status != http.StatusOK {
				t.Fatalf("callback: %d", res.Status)
			}
			again := g.call(http.MethodPost, "/v1/payments", key, body, "Idempotency-Key", "tds-replay")
			if again.Status != http.StatusCreated || string(again.Raw) != string(first.Raw) || again.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("replay: %d %s", again.Status, again.Raw)
			}
			if getPayment(t, g, key, id)["status"] != "captured" {
				t.Fatal("the record does not show the later status")
			}
		})
	})
}

// eventsOf lists the events of a payment.
func eventsOf(evs []paygate.Event, paymentID string) []paygate.EventType {
	var out []paygate.EventType
	for _, e := range evs {
		if e.PaymentID == paymentID {
			out = append(out, e.Type)
		}
	}
	return out
}

func TestThreeDSPageSecurity(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		_, m, g := startWithMerchant(t, e, "Shop", "--rate-limit-unauthenticated", "2")
		key := m.TestSecretKey
		_, tds := create3DS(t, g, key, card3DS, "https://shop.example:8443/return")

		ch := openChallenge(t, tds)
		wantBrowserHeaders(t, "challenge page", ch, "https://shop.example:8443")
		fa := csp(t, ch.Header)["form-action"]
		if strings.Join(fa, " ") != g.url+"/v1/3ds/callback/ https://shop.example:8443" {
			t.Fatalf("form-action %v: want the callbacks and the returnUrl's origin (the redirect after the post)", fa)
		}
		for _, secret := range []string{key, card3DS, "Ada Lovelace"} {
			if strings.Contains(ch.Body, secret) || strings.Contains(fmt.Sprint(ch.Header), secret) {
				t.Errorf("challenge page contains %q", secret)
			}
		}
		for _, want := range []string{`lang="en"`, `name="viewport"`, `<main`, `<h1`, `form id="threeds-complete"`, `form id="threeds-fail"`} {
			if !strings.Contains(ch.Body, want) {
				t.Errorf("challenge page lacks %s", want)
			}
		}

		t.Run("NoKeyNoIdempotencyNoJSON", func(t *testing.T) {
			// Already shown: the posts above carry no key and no
			// Idempotency-Key. A key is ignored, not required.
			p := postForm(t, g.url+"/v1/3ds/callback/not-a-token", nil)
			if p.Status != http.StatusNotFound || !strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") {
				t.Fatalf("unknown token: %d %s", p.Status, p.Header.Get("Content-Type"))
			}
			wantBrowserHeaders(t, "unknown token", p)
		})
		t.Run("WrongMethod", func(t *testing.T) {
			for _, path := range []string{"/v1/3ds/sandbox/challenge", "/v1/3ds/callback/abc"} {
				resp, err := browserClient.Get(g.url + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
					t.Fatalf("GET %s: %d Allow %q", path, resp.StatusCode, resp.Header.Get("Allow"))
				}
			}
		})
		t.Run("ForeignTermURL", func(t *testing.T) {
			for _, term := range []string{"https://evil.example/v1/3ds/callback/x", tds.Parameters["TermUrl"] + "x", g.url + "/v1/payments"} {
				params := map[string]string{}
				for k, v := range tds.Parameters {
					params[k] = v
				}
				params["TermUrl"] = term
				if p := postForm(t, tds.RedirectURL, params); p.Status != http.StatusBadRequest && p.Status != http.StatusNotFound {
					t.Fatalf("TermUrl %q: %d", term, p.Status)
				}
			}
		})
		t.Run("NotCountedAsFailedAuthentication", func(t *testing.T) {
			// Budget: 2 failed authentications per minute per address.
			for range 6 {
				if p := postForm(t, g.url+"/v1/3ds/callback/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", nil); p.Status != http.StatusNotFound {
					t.Fatalf("callback: %d", p.Status)
				}
				if p := postForm(t, tds.RedirectURL, map[string]string{"creq": "x"}); p.Status != http.StatusBadRequest {
					t.Fatalf("challenge page: %d", p.Status)
				}
			}
			r := g.call(http.MethodGet, "/v1/payments/"+"00000000-0000-7000-8000-000000000000", "", nil)
			expect(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
		})
		t.Run("APIStillNeedsKey", func(t *testing.T) {
			r := g.call(http.MethodPost, "/v1/3ds/other", "smtgw_sk_test_wrong", map[string]any{})
			if r.Status != http.StatusUnauthorized && r.Status != http.StatusTooManyRequests {
				t.Fatalf("other /v1/3ds path without a valid key: %d", r.Status)
			}
		})
		if strings.Contains(g.Logs(), strings.TrimPrefix(tds.Parameters["TermUrl"], g.url+"/v1/3ds/callback/")) {
			t.Fatal("the token appears in the logs")
		}
	})
}

func TestThreeDSConcurrentCallbacks(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db, m, g := startWithMerchant(t, e, "Shop")
		id, tds := create3DS(t, g, m.TestSecretKey, card3DS, "https://shop.example/return")
		form := challengeForms(t, openChallenge(t, tds).Body)["threeds-complete"]
		const n = 20
		pages := make([]page, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				pages[i] = submit(t, form)
			})
		}
		close(start)
		wg.Wait()
		redirects := 0
		want := "https://shop.example/return?status=captured&transactionId=" + id
		for i, p := range pages {
			switch p.Status {
			case http.StatusSeeOther:
				redirects++
				if p.Header.Get("Location") != want {
					t.Errorf("submission %d: Location %q", i, p.Header.Get("Location"))
				}
			case http.StatusNotFound:
			default:
				t.Errorf("submission %d: %d", i, p.Status)
			}
		}
		if redirects == 0 {
			t.Fatal("no submission completed the payment")
		}
		evs := events(t, db, m.MerchantID, paygate.ModeTest)
		if got := eventsOf(evs, id); len(got) != 1 || got[0] != paygate.EventPaymentCaptured {
			t.Fatalf("events %v, want one payment.captured", got)
		}
		if getPayment(t, g, m.TestSecretKey, id)["status"] != "captured" {
			t.Fatal("not captured")
		}
	})
}

func TestThreeDSExpiry(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db, m, g := startWithMerchant(t, e, "Shop", "--3ds-challenge-ttl", "1s")
		key := m.TestSecretKey
		id, tds := create3DS(t, g, key, card3DS, "https://shop.example/return")
		eventually(t, 20*time.Second, "the expired challenge's payment to fail", func() bool {
			return getPayment(t, g, key, id)["status"] == "failed"
		})
		p := getPayment(t, g, key, id)
		if p["errorCode"] != "AUTHENTICATION_EXPIRED" {
			t.Fatalf("payment %v", p)
		}
		evs := events(t, db, m.MerchantID, paygate.ModeTest)
		if got := eventsOf(evs, id); len(got) != 1 || got[0] != paygate.EventPaymentFailed {
			t.Fatalf("events %v", got)
		}
		if r := postForm(t, tds.RedirectURL, tds.Parameters); r.Status != http.StatusNotFound {
			t.Fatalf("challenge page after expiry: %d", r.Status)
		}
		if r := postForm(t, tds.Parameters["TermUrl"], map[string]string{"cres": "x"}); r.Status != http.StatusNotFound {
			t.Fatalf("callback after expiry: %d", r.Status)
		}
	})
}

// TestThreeDSBehindProxy runs the flow through a reverse proxy that
// publishes the gateway under a path: every URL the service hands out must
// be the configured --base-url, exactly.
func TestThreeDSBehindProxy(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db := e.url(t)
		m := createMerchant(t, db, "Shop")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		public := "http://" + ln.Addr().String() + "/pay"
		g := startGateway(t, db, "--base-url", public+"/")
		// The proxy publishes the gateway under /pay. It buffers each answer
		// and has its own connections, so that nothing but the gateway's
		// own links decides where the browser goes.
		upstream := &http.Client{
			Transport:     conformingTransport{next: &http.Transport{}},
			Timeout:       60 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		t.Cleanup(upstream.CloseIdleConnections)
		srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			path, ok := strings.CutPrefix(r.URL.Path, "/pay/")
			if !ok {
				http.NotFound(w, r)
				return
			}
			req, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, g.url+"/"+path, r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			req.Header = r.Header.Clone()
			resp, err := upstream.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			for k, v := range resp.Header {
				w.Header()[k] = v
			}
			w.WriteHeader(resp.StatusCode)
			_, _ = w.Write(body)
		})}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })

		id, tds := create3DS(t, g, m.TestSecretKey, card3DS, "https://shop.example/return")
		if tds.RedirectURL != public+"/v1/3ds/sandbox/challenge" {
			t.Fatalf("redirectUrl %q, want it under %s", tds.RedirectURL, public)
		}
		if !strings.HasPrefix(tds.Parameters["TermUrl"], public+"/v1/3ds/callback/") {
			t.Fatalf("TermUrl %q, want it under %s", tds.Parameters["TermUrl"], public)
		}
		ch := openChallenge(t, tds) // through the proxy
		if fa := csp(t, ch.Header)["form-action"]; len(fa) == 0 || fa[0] != public+"/v1/3ds/callback/" {
			t.Fatalf("form-action %v", fa)
		}
		res := submit(t, challengeForms(t, ch.Body)["threeds-complete"])
		if res.Status != http.StatusSeeOther || !strings.Contains(res.Header.Get("Location"), "status=captured") {
			t.Fatalf("callback through the proxy: %d %q", res.Status, res.Header.Get("Location"))
		}
		if getPayment(t, g, m.TestSecretKey, id)["status"] != "captured" {
			t.Fatal("not captured")
		}
	})
}
