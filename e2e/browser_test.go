package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/paygate/paygate/internal/paygate"
)

// The 3-D Secure flow in a real browser: Debian's Chromium, headless, driven
// through the DevTools protocol. A merchant's site on loopback creates the
// payment from its backend, its checkout page posts threeDsData to the
// challenge page, the test clicks a button there, and the browser lands on
// the merchant's return page.
//
// Without Chromium the test is skipped, or fails when
// PAYGATE_TEST_REQUIRE_SERVICES=1 (CI installs it: .ci/run). With
// PAYGATE_UPDATE_SCREENSHOTS=1 the screenshot of the challenge page also
// replaces the README's, docs/img/threeds-challenge.png.

// chromiumPath is Debian's Chromium.
const chromiumPath = "/usr/bin/chromium"

// newBrowser starts a fresh headless Chromium and returns a tab context
// that ends with the test.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("PAYGATE_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("Chromium is required (PAYGATE_TEST_REQUIRE_SERVICES=1) but %s is missing: apt-get install -y chromium", chromiumPath)
		}
		t.Skipf("skipping the browser test: %s is missing (apt-get install -y chromium)", chromiumPath)
	}
	// Chromium's helpers may still write to the profile for a moment after
	// the browser exits, so the directory is removed with retries rather
	// than by t.TempDir.
	profile, err := os.MkdirTemp("", "paygate-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 50 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(profile),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.WindowSize(900, 1000),
	)
	ctx, cancelTab := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// consoleProblems collects what the browser reports as errors and warnings
// (a refused style, a blocked form, a blocked frame), so that a test can
// fail on a Content-Security-Policy it did not mean.
type consoleProblems struct {
	mu    sync.Mutex
	lines []string
}

func watchConsole(t *testing.T, ctx context.Context) *consoleProblems {
	t.Helper()
	c := &consoleProblems{}
	add := func(s string) {
		c.mu.Lock()
		c.lines = append(c.lines, s)
		c.mu.Unlock()
	}
	err := chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *log.EventEntryAdded:
			if e.Entry != nil && (e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning) {
				add(fmt.Sprintf("%s %s: %s (%s)", e.Entry.Source, e.Entry.Level, e.Entry.Text, e.Entry.URL))
			}
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				add(fmt.Sprintf("console %s", e.Type))
			}
		case *runtime.EventExceptionThrown:
			add("exception")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// CSP returns the reported problems that name a Content Security Policy.
func (c *consoleProblems) CSP() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, l := range c.lines {
		if strings.Contains(l, "Content Security Policy") || strings.Contains(l, "Content-Security-Policy") || strings.Contains(l, "frame-ancestors") {
			out = append(out, l)
		}
	}
	return out
}

// shop is a merchant's site on loopback: a backend that talks to the
// gateway with its secret key, a checkout page, a return page and a webhook
// receiver.
type shop struct {
	t   *testing.T
	g   *gateway
	key string
	srv *httptest.Server

	mu       sync.Mutex
	payments []string     // ids created, in order
	returns  []url.Values // queries of the return page
	verified []string     // the status the backend read on return
	hooks    [][]byte     // webhook bodies received
}

var checkoutPage = template.Must(template.New("checkout").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Checkout – Ada's Books</title></head>
<body>
<h1>Ada's Books</h1>
<p>Order o-42: 10.50 EUR. Your bank asks you to confirm this payment.</p>
<form id="to-bank" method="{{.Method}}" action="{{.RedirectURL}}"{{if .Frame}} target="tds"{{end}}>
{{range $k, $v := .Parameters}}<input type="hidden" name="{{$k}}" value="{{$v}}">
{{end}}<button id="pay" type="submit">Continue to your bank</button>
</form>
{{if .Frame}}<iframe name="tds" id="tds" title="Confirm your payment with your bank" width="420" height="700"></iframe>{{end}}
</body></html>`))

var returnPage = template.Must(template.New("return").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Order o-42</title></head>
<body><h1 id="thanks">Thank you</h1><p>Payment status: <span id="status">{{.}}</span></p></body></html>`))

func newShop(t *testing.T, g *gateway, key string) *shop {
	s := &shop{t: t, g: g, key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /checkout", s.checkout)
	mux.HandleFunc("GET /return", s.ret)
	mux.HandleFunc("POST /webhooks", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.hooks = append(s.hooks, b)
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// api calls the gateway from the shop's backend. It runs in handlers, so it
// returns errors instead of failing the test.
func (s *shop) api(method, path string, body any) (map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.g.url+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-API-Key", s.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("shop-%d", time.Now().UnixNano()))
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var env struct {
		Data  map[string]any `json:"data"`
		Error map[string]any `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("%s %s: %d %v", method, path, resp.StatusCode, env.Error)
	}
	return env.Data, nil
}

// checkout creates the payment and shows the page that sends the customer
// to their bank: a form of threeDsData.parameters, posted to redirectUrl.
func (s *shop) checkout(w http.ResponseWriter, r *http.Request) {
	body := paymentBody(r.URL.Query().Get("card"), "10.50", "EUR")
	body["returnUrl"] = s.srv.URL + "/return?order=o-42"
	d, err := s.api(http.MethodPost, "/v1/payments", body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	tds, _ := d["threeDsData"].(map[string]any)
	if d["status"] != "pending_3ds" || tds == nil {
		http.Error(w, fmt.Sprintf("unexpected creation result %v", d), http.StatusBadGateway)
		return
	}
	s.mu.Lock()
	s.payments = append(s.payments, d["id"].(string))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = checkoutPage.Execute(w, map[string]any{
		"Method": tds["method"], "RedirectURL": template.URL(tds["redirectUrl"].(string)),
		"Parameters": tds["parameters"], "Frame": r.URL.Query().Get("frame") == "1",
	})
}

// ret is the return page. As the README says, the redirect alone proves
// nothing: the backend reads the payment before it fulfils the order.
func (s *shop) ret(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	status := "unknown"
	if d, err := s.api(http.MethodGet, "/v1/payments/"+url.PathEscape(q.Get("transactionId")), nil); err == nil {
		status, _ = d["status"].(string)
	}
	s.mu.Lock()
	s.returns = append(s.returns, q)
	s.verified = append(s.verified, status)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = returnPage.Execute(w, status)
}

// lastReturn returns the last return page's query and the verified status.
func (s *shop) lastReturn() (url.Values, string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.returns) == 0 {
		return nil, "", 0
	}
	return s.returns[len(s.returns)-1], s.verified[len(s.verified)-1], len(s.returns)
}

func (s *shop) lastPayment() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.payments[len(s.payments)-1]
}

// hookFor returns the webhook of the event type for the payment, if one
// arrived.
func (s *shop) hookFor(typ paygate.EventType, paymentID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.hooks {
		var ev struct {
			Event string `json:"event"`
			Data  struct {
				TransactionID string `json:"transactionId"`
			} `json:"data"`
		}
		if json.Unmarshal(b, &ev) == nil && ev.Event == string(typ) && ev.Data.TransactionID == paymentID {
			return true
		}
	}
	return false
}

// saveScreenshot writes a PNG under the test's artifacts directory (kept
// in the temp dir), and over the README's copy when asked to.
func saveScreenshot(t *testing.T, dir, name string, png []byte, readmeCopy bool) {
	t.Helper()
	if len(png) == 0 {
		t.Fatalf("empty screenshot %s", name)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
	if readmeCopy && os.Getenv("PAYGATE_UPDATE_SCREENSHOTS") == "1" {
		dst := filepath.Join("..", "docs", "img", name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("updated %s", dst)
	}
}

// artifactDir is where the browser test leaves its screenshots: a directory
// under the system temp dir that outlives the test, named in the log.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "paygate-3ds-artifacts-")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestThreeDSBrowser(t *testing.T) {
	artifacts := artifactDir(t)
	forEachEngine(t, func(t *testing.T, e engine) {
		db, m, g := startWithMerchant(t, e, "Ada's Books")
		s := newShop(t, g, m.TestSecretKey)
		mustCLI(t, nil, "webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", s.srv.URL+"/webhooks", "--json", "--database-url", db)

		cases := []struct {
			name, card, button, status string
			event                      paygate.EventType
			frame                      bool
		}{
			{"Complete", card3DS, "form#threeds-complete button", "captured", paygate.EventPaymentCaptured, false},
			{"Fail", card3DS, "form#threeds-fail button", "failed", paygate.EventPaymentFailed, false},
			{"CompleteInIframe", card3DS, "form#threeds-complete button", "captured", paygate.EventPaymentCaptured, true},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				ctx := newBrowser(t)
				console := watchConsole(t, ctx)
				checkout := s.srv.URL + "/checkout?card=" + c.card
				if c.frame {
					checkout += "&frame=1"
				}
				if err := chromedp.Do(ctx,
					chromedp.Navigate(checkout),
					chromedp.WaitVisible(chromedp.CSS("#pay")),
				); err != nil {
					t.Fatalf("checkout page: %v", err)
				}
				id := s.lastPayment()
				_, _, returnsBefore := s.lastReturn()

				if c.frame {
					s.completeInFrame(t, ctx, c.button)
				} else {
					s.completeInPage(t, ctx, artifacts, e.name, c.button)
				}

				// The browser landed on the shop's return page.
				eventually(t, 30*time.Second, "the return page", func() bool {
					_, _, n := s.lastReturn()
					return n > returnsBefore
				})
				q, verified, _ := s.lastReturn()
				if q.Get("transactionId") != id || q.Get("status") != c.status || q.Get("order") != "o-42" {
					t.Fatalf("return query %v, want order, transactionId %s and status %s", q, id, c.status)
				}
				if verified != c.status {
					t.Fatalf("the shop's backend read status %q, want %q", verified, c.status)
				}
				if !c.frame {
					loc, err := chromedp.Run(ctx, chromedp.Location())
					if err != nil {
						t.Fatal(err)
					}
					if !strings.HasPrefix(loc, s.srv.URL+"/return?") {
						t.Fatalf("browser at %q, want the shop's return page", loc)
					}
				}
				if got := getPayment(t, g, m.TestSecretKey, id)["status"]; got != c.status {
					t.Fatalf("payment status %v, want %s", got, c.status)
				}
				evs := events(t, db, m.MerchantID, paygate.ModeTest)
				if got := eventsOf(evs, id); len(got) != 1 || got[0] != c.event {
					t.Fatalf("outbox events of the payment %v, want one %s", got, c.event)
				}
				if webhookDelivery {
					eventually(t, 30*time.Second, string(c.event)+" delivered to the shop", func() bool {
						return s.hookFor(c.event, id)
					})
				}
				if p := console.CSP(); len(p) > 0 {
					t.Fatalf("the browser reported Content-Security-Policy problems:\n%s", strings.Join(p, "\n"))
				}
			})
		}
	})
}

// completeInPage follows the checkout form to the challenge page in the
// tab, takes the screenshots, and clicks the button.
func (s *shop) completeInPage(t *testing.T, ctx context.Context, artifacts, engine, button string) {
	t.Helper()
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS("#pay"))); err != nil {
		t.Fatalf("post to the challenge page: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("form#threeds-complete button"))); err != nil {
		t.Fatalf("challenge page: %v", err)
	}
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil || !strings.Contains(title, "Confirm your payment") {
		t.Fatalf("challenge page title %q %v", title, err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Ada's Books", "10.50 EUR", "Complete authentication", "Fail authentication"} {
		if !strings.Contains(text, want) {
			t.Fatalf("challenge page lacks %q:\n%s", want, text)
		}
	}
	// The page is styled (its inline style passed the CSP hash): the
	// primary button has its colour, not the browser's default.
	bg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("form#threeds-complete button")).backgroundColor`))
	if err != nil || bg != "rgb(11, 92, 173)" {
		t.Fatalf("complete button background %q %v: the page's style did not apply", bg, err)
	}
	if strings.HasSuffix(t.Name(), "/Complete") {
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		saveScreenshot(t, artifacts, "threeds-challenge-"+engine+".png", shot, false)
		if engine == "sqlite" {
			saveScreenshot(t, artifacts, "threeds-challenge.png", shot, true)
		}
		// Readable on a phone: no horizontal scrolling at 375 px.
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(375, 740, chromedp.EmulateScale(2), chromedp.EmulateMobile)); err != nil {
			t.Fatal(err)
		}
		overflow, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`))
		if err != nil || overflow {
			t.Fatalf("the challenge page scrolls sideways on a phone (%v)", err)
		}
		phone, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		saveScreenshot(t, artifacts, "threeds-challenge-phone-"+engine+".png", phone, false)
		if err := chromedp.Do(ctx, chromedp.EmulateReset()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(button))); err != nil {
		t.Fatalf("click %s: %v", button, err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#thanks"))); err != nil {
		t.Fatalf("return page: %v", err)
	}
}

// completeInFrame posts the checkout form into the page's iframe, as an
// integration that shows the challenge inside its checkout does, and clicks
// the button there: the challenge page allows the shop (its returnUrl's
// origin) to frame it.
func (s *shop) completeInFrame(t *testing.T, ctx context.Context, button string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#pay"))); err != nil {
		t.Fatal(err)
	}
	var clickErr error
	eventually(t, 30*time.Second, "the challenge page in the iframe", func() bool {
		frames, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSS("iframe#tds")))
		if err != nil || len(frames) == 0 {
			return false
		}
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		clickErr = chromedp.Do(qctx, chromedp.Click(chromedp.CSS(button), chromedp.FromNode(frames[0]), chromedp.NodeVisible))
		return clickErr == nil
	})
	if clickErr != nil && !errors.Is(clickErr, context.DeadlineExceeded) {
		t.Fatal(clickErr)
	}
}

// webhookDelivery says whether this build delivers webhooks (issue 3): the
// browser test then also waits for the delivery to reach the shop.
const webhookDelivery = true
