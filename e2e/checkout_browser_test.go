package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// The card fields of paygate.js in a real browser (decisions §19). A
// merchant's shop runs on http://localhost:<port> while the gateway is
// http://127.0.0.1:<port>: two sites, so Chromium puts the card frame in a
// process of its own, as it would for a real shop and gateway. The shop's
// page mounts the fields, the test types a card into the frame, the page
// asks for a token and posts it to the shop's backend, which pays with it
// using its secret key.

// tokenShopPage is the shop's checkout page. messages records the type of
// every message the gateway's origin posts to the page (none reach it when
// the frame is blocked).
var tokenShopPage = template.Must(template.New("shop").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Checkout – Ada's Books</title></head>
<body>
<h1>Ada's Books</h1>
<p>Order o-77: 10.50 EUR</p>
{{if .Forged}}<iframe id="forged" title="card" src="{{.Forged}}"></iframe>{{else}}<div id="card"></div>{{end}}
<button id="pay" type="button">Pay 10.50 EUR</button>
<p id="result"></p>
<p>Brand: <span id="brand"></span></p>
<script>
var messages = [];
window.addEventListener('message', function (e) {
  if (e.origin === {{.Gateway}}) { messages.push(e.data && e.data.type); }
});
</script>
{{if not .Forged}}<script src="{{.Gateway}}/js/v1/paygate.js"></script>
<script>
var card = Paygate({{.Key}}).mountCard('#card', {
  style: {fontFamily: 'Georgia, serif', color: '#123456', invalidColor: 'rgb(200, 0, 0)', fontSize: 'url(https://evil.example/x)'},
  locale: 'fr',
  onReady: function () { document.body.setAttribute('data-ready', '1'); },
  onChange: function (s) { window.lastState = s; document.getElementById('brand').textContent = s.brand; }
});
document.getElementById('pay').addEventListener('click', function () {
  card.createToken().then(function (token) {
    window.lastToken = token;
    return fetch('/pay', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({token: token.id})})
      .then(function (r) { return r.json(); });
  }).then(function (res) {
    if (res.threeDsData) {
      var t = res.threeDsData, f = document.createElement('form');
      f.method = t.method || 'GET';
      f.action = t.redirectUrl;
      Object.keys(t.parameters || {}).forEach(function (k) {
        var i = document.createElement('input');
        i.type = 'hidden'; i.name = k; i.value = t.parameters[k];
        f.appendChild(i);
      });
      document.body.appendChild(f);
      f.submit();
      return;
    }
    document.getElementById('result').textContent = res.status || ('failed: ' + res.error);
  }, function (err) {
    window.lastError = {type: err.type, code: err.code, field: err.field, message: err.message};
    document.getElementById('result').textContent = 'error ' + err.type + ' ' + (err.field || '');
  });
});
</script>{{end}}
</body></html>`))

// tokenShop is the shop: its page, its backend route /pay that charges a
// token with the secret key, and its return page.
type tokenShop struct {
	t       *testing.T
	g       *gateway
	m       merchant
	srv     *httptest.Server
	url     string // http://localhost:<port>
	mu      sync.Mutex
	paid    []map[string]any // the gateway's answers to /pay
	returns []url.Values
}

func newTokenShop(t *testing.T, g *gateway, m merchant) *tokenShop {
	s := &tokenShop{t: t, g: g, m: m}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("POST /pay", s.pay)
	mux.HandleFunc("GET /return", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.returns = append(s.returns, r.URL.Query())
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Order o-77</title><p id="status">%s</p>`, template.HTMLEscapeString(r.URL.Query().Get("status")))
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	u, _ := url.Parse(s.srv.URL)
	s.url = "http://localhost:" + u.Port()
	return s
}

func (s *tokenShop) page(w http.ResponseWriter, r *http.Request) {
	key := s.m.TestPublicKey
	if r.URL.Query().Get("mode") == "live" {
		key = s.m.LivePublicKey
	}
	data := map[string]any{"Gateway": s.g.url, "Key": key}
	if origin := r.URL.Query().Get("forge"); origin != "" {
		// A page that loads the frame itself and names an origin it does
		// not have.
		data["Forged"] = template.URL(s.g.url + "/js/v1/card-frame.html?key=" + url.QueryEscape(key) + "&origin=" + url.QueryEscape(origin))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = tokenShopPage.Execute(w, data)
}

// pay is the shop's backend: it charges the token with the test secret
// key and answers the page with the payment's status, or its threeDsData.
func (s *tokenShop) pay(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	body := map[string]any{
		"amount": "10.50", "currency": "EUR", "customerId": "cust-browser",
		"paymentMethod": "token", "token": in.Token,
		"returnUrl":   s.url + "/return?order=o-77",
		"merchantRef": "o-77",
		"billing": map[string]any{
			"firstName": "Ada", "lastName": "Lovelace", "email": "ada@example.com",
			"phone": "+44 20 7946 0000", "country": "GB", "address": "1 Analytical St",
			"city": "London", "postalCode": "N1 1AA",
		},
	}
	res := s.g.call(http.MethodPost, "/v1/payments", s.m.TestSecretKey, body, "Idempotency-Key", "o-77-"+in.Token)
	out := map[string]any{}
	if d := res.Data(); d != nil {
		out = d
		s.mu.Lock()
		s.paid = append(s.paid, d)
		s.mu.Unlock()
	} else {
		out["error"] = fmt.Sprint(res.Err())
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (s *tokenShop) lastPaid() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.paid) == 0 {
		return nil
	}
	return s.paid[len(s.paid)-1]
}

// cardFrame waits for the card frame's own target (a process of its own)
// and returns a context that acts in it.
func cardFrame(t *testing.T, ctx context.Context, gatewayURL string) context.Context {
	t.Helper()
	var id target.ID
	eventually(t, 20*time.Second, "the card frame", func() bool {
		infos, err := chromedp.Targets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range infos {
			if info.Type == "iframe" && strings.HasPrefix(info.URL, gatewayURL+"/js/v1/card-frame.html?") {
				id = info.TargetID
				return true
			}
		}
		return false
	})
	fctx, cancel := chromedp.NewContext(ctx, chromedp.WithTargetID(id))
	t.Cleanup(cancel)
	if err := chromedp.Do(fctx, chromedp.WaitVisible(chromedp.CSS("#number"))); err != nil {
		t.Fatalf("card frame: %v", err)
	}
	return fctx
}

// typeCard types a card into the frame as a shopper does: a click on the
// frame first, so that the browser sends the keys to it.
func typeCard(t *testing.T, page, frame context.Context, number, expiry, cvc, name string) {
	t.Helper()
	if err := chromedp.Do(page, chromedp.Click(chromedp.CSS("#card iframe"))); err != nil {
		t.Fatalf("click the card fields: %v", err)
	}
	if err := chromedp.Do(frame,
		chromedp.SendKeys(chromedp.CSS("#number"), number),
		chromedp.SendKeys(chromedp.CSS("#expiry"), expiry),
		chromedp.SendKeys(chromedp.CSS("#cvc"), cvc),
		chromedp.SendKeys(chromedp.CSS("#name"), name),
	); err != nil {
		t.Fatalf("type the card: %v", err)
	}
}

// assertNoCardNumber fails when the shop's page holds the number anywhere
// it can read: its DOM, its inputs' values, what paygate.js told it.
func assertNoCardNumber(t *testing.T, page context.Context, number string) {
	t.Helper()
	seen, err := chromedp.Run(page, chromedp.Evaluate[string](`document.documentElement.outerHTML + "\n" +
		Array.prototype.map.call(document.querySelectorAll('input, textarea, select'), function (i) { return i.value; }).join("\n") + "\n" +
		JSON.stringify(window.lastState || null) + JSON.stringify(window.lastToken || null) + JSON.stringify(window.lastError || null)`))
	if err != nil {
		t.Fatal(err)
	}
	spaced := strings.TrimSpace(number[0:4] + " " + number[4:8] + " " + number[8:12] + " " + number[12:])
	for _, s := range []string{number, spaced, number[:12]} {
		if strings.Contains(seen, s) {
			t.Fatalf("the shop's page holds the card number (%s):\n%s", s, seen)
		}
	}
}

func TestCheckoutCardFieldsBrowser(t *testing.T) {
	t.Parallel()
	dbURL, m, g := startWithMerchant(t, sqliteEngine(), "Ada's Books")
	// Live mode allows one https origin, never this shop's.
	mustCLI(t, nil, "merchant", "origins", "set", "--merchant", m.MerchantID, "--mode", "live",
		"--origins", "https://shop.example", "--database-url", dbURL)
	s := newTokenShop(t, g, m)

	open := func(t *testing.T, query string) (context.Context, *consoleProblems) {
		t.Helper()
		ctx := newBrowser(t)
		console := watchConsole(t, ctx)
		if err := chromedp.Do(ctx, chromedp.Navigate(s.url+"/"+query), chromedp.WaitVisible(chromedp.CSS("#pay"))); err != nil {
			t.Fatalf("shop page: %v", err)
		}
		return ctx, console
	}
	ready := func(t *testing.T, ctx context.Context) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
			t.Fatalf("the card fields never said ready: %v", err)
		}
	}

	t.Run("ValidationAndStyle", func(t *testing.T) {
		t.Parallel()
		ctx, console := open(t, "")
		ready(t, ctx)
		frame := cardFrame(t, ctx, g.url)
		// The merchant's font reached the fields; the url() it also sent
		// did not.
		font, err := chromedp.Run(frame, chromedp.Poll[string](`(function () {
			var f = getComputedStyle(document.getElementById('number')).fontFamily;
			return f.indexOf('Georgia') >= 0 ? f + ' ' + getComputedStyle(document.getElementById('number')).fontSize : null;
		})()`, chromedp.WithPollingTimeout(10*time.Second)))
		if err != nil || !strings.HasSuffix(font, " 16px") {
			t.Fatalf("style in the frame: %q %v", font, err)
		}
		// A number that fails the Luhn check: the frame says so next to
		// the field, in the page's locale, and the page's createToken
		// rejects with the field.
		typeCard(t, ctx, frame, "4242424242424241", "12"+futureYear(), "123", "Ada Lovelace")
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#pay")),
			chromedp.WaitVisible(chromedp.CSS("#result"))); err != nil {
			t.Fatal(err)
		}
		result, err := chromedp.Run(ctx, chromedp.Poll[string](`(function () { var t = document.getElementById('result').textContent; return t || null; })()`,
			chromedp.WithPollingTimeout(10*time.Second)))
		if err != nil || result != "error validation_error number" {
			t.Fatalf("createToken of a bad number: %q %v", result, err)
		}
		invalid, err := chromedp.Run(frame, chromedp.Evaluate[string](`document.getElementById('number').getAttribute('aria-invalid') + '|' +
			document.getElementById('number-error').textContent + '|' + document.getElementById('brand').textContent + '|' +
			document.getElementById('number').value + '|' + document.getElementById('expiry').value`))
		if err != nil || invalid != "true|Le numéro de carte n’est pas valide.|Visa|4242 4242 4242 4241|12 / "+futureYear() {
			t.Fatalf("the frame after a bad number: %q %v", invalid, err)
		}
		// An American Express number wants four digits of security code.
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#card iframe"))); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(frame,
			chromedp.SetValue(chromedp.CSS("#number"), ""), chromedp.SendKeys(chromedp.CSS("#number"), "378282246310005"),
			// A single month digit above 1 is that month: 4 is April.
			chromedp.SetValue(chromedp.CSS("#expiry"), ""), chromedp.SendKeys(chromedp.CSS("#expiry"), "4"+futureYear()),
		); err != nil {
			t.Fatal(err)
		}
		if exp, err := chromedp.Run(frame, chromedp.Value(chromedp.CSS("#expiry"))); err != nil || exp != "04 / "+futureYear() {
			t.Fatalf("expiry typed as 4%s: %q %v", futureYear(), exp, err)
		}
		state, err := chromedp.Run(ctx, chromedp.Poll[string](`(function () {
			var s = window.lastState; return s && s.brand === 'amex' && s.last4 ? JSON.stringify([s.fields.number.complete, s.fields.cvc.complete, s.last4]) : null;
		})()`, chromedp.WithPollingTimeout(10*time.Second)))
		if err != nil || state != `[true,false,"0005"]` {
			t.Fatalf("state for an amex number with a 3-digit code: %s %v", state, err)
		}
		if p := console.CSP(); len(p) > 0 {
			t.Fatalf("Content-Security-Policy problems on an allowed page:\n%s", strings.Join(p, "\n"))
		}
		assertNoCardNumber(t, ctx, "378282246310005")
	})

	t.Run("PayWithToken", func(t *testing.T) {
		t.Parallel()
		ctx, console := open(t, "")
		ready(t, ctx)
		frame := cardFrame(t, ctx, g.url)
		typeCard(t, ctx, frame, "4242424242424242", "12"+futureYear(), "123", "Ada Lovelace")
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#pay"))); err != nil {
			t.Fatal(err)
		}
		result, err := chromedp.Run(ctx, chromedp.Poll[string](`(function () { var t = document.getElementById('result').textContent; return t || null; })()`,
			chromedp.WithPollingTimeout(30*time.Second)))
		if err != nil || result != "captured" {
			lastErr, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.lastError || null)`))
			t.Fatalf("result %q %v (error %s)", result, err, lastErr)
		}
		p := s.lastPaid()
		if p["status"] != "captured" {
			t.Fatalf("payment %v", p)
		}
		tok, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.lastToken)`))
		if err != nil || !strings.Contains(tok, `"id":"tok_`) || !strings.Contains(tok, `"last4":"4242"`) {
			t.Fatalf("token given to the page: %s %v", tok, err)
		}
		got := getPayment(t, g, m.TestSecretKey, p["id"].(string))
		if got["status"] != "captured" || got["merchantRef"] != "o-77" {
			t.Fatalf("payment read back: %v", got)
		}
		assertNoCardNumber(t, ctx, "4242424242424242")
		if p := console.CSP(); len(p) > 0 {
			t.Fatalf("Content-Security-Policy problems:\n%s", strings.Join(p, "\n"))
		}
	})

	t.Run("ThreeDS", func(t *testing.T) {
		t.Parallel()
		ctx, _ := open(t, "")
		ready(t, ctx)
		frame := cardFrame(t, ctx, g.url)
		typeCard(t, ctx, frame, "4000000000003220", "12"+futureYear(), "123", "Ada Lovelace")
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#pay")),
			chromedp.WaitVisible(chromedp.CSS("form#threeds-complete button"))); err != nil {
			t.Fatalf("challenge page: %v", err)
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("form#threeds-complete button")),
			chromedp.WaitVisible(chromedp.CSS("#status"))); err != nil {
			t.Fatalf("return page: %v", err)
		}
		loc, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil || !strings.HasPrefix(loc, s.url+"/return?") {
			t.Fatalf("browser at %q %v, want the shop's return page", loc, err)
		}
		q, _ := url.ParseQuery(loc[strings.Index(loc, "?")+1:])
		if q.Get("status") != "captured" || q.Get("order") != "o-77" {
			t.Fatalf("return query %v", q)
		}
		if got := getPayment(t, g, m.TestSecretKey, q.Get("transactionId"))["status"]; got != "captured" {
			t.Fatalf("payment after the challenge: %v", got)
		}
	})

	// The dashboard's Developers page edits the origins of its mode and
	// says so once they are saved; the CLI reads what it stored.
	t.Run("DashboardOrigins", func(t *testing.T) {
		t.Parallel()
		email, password := dashboardUser(t, g, dbURL, m.MerchantID)
		ctx := newBrowser(t)
		signIn(t, ctx, g, email, password)
		browserDo(t, ctx, g, "save the allowed origins",
			chromedp.Navigate(g.url+"/dashboard/test/developers"),
			chromedp.WaitVisible(chromedp.CSS("#origins-form")),
			chromedp.SendKeys(chromedp.CSS("#origins"), "https://Staging.shop.example:443\nhttps://qa.shop.example:8443"),
			chromedp.Click(chromedp.CSS("#save-origins")),
			chromedp.WaitVisible(chromedp.CSS("#developers-notice")),
		)
		notice, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#developers-notice")))
		if err != nil || !strings.Contains(notice, "allowed origins were saved") {
			t.Fatalf("notice %q %v", notice, err)
		}
		list, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#allowed-origins")))
		if err != nil || !strings.Contains(list, "https://staging.shop.example") || !strings.Contains(list, "https://qa.shop.example:8443") {
			t.Fatalf("listed origins %q %v", list, err)
		}
		var shown struct {
			Origins []string `json:"origins"`
		}
		mustCLI(t, &shown, "merchant", "origins", "show", "--merchant", m.MerchantID, "--mode", "test", "--json", "--database-url", dbURL)
		if strings.Join(shown.Origins, " ") != "https://staging.shop.example https://qa.shop.example:8443" {
			t.Fatalf("origins stored %q", shown.Origins)
		}
	})

	// A page whose origin the merchant did not allow never gets the
	// fields: the gateway refuses to serve them to it, and a page that
	// names an allowed origin it does not have gets a frame the browser
	// will not show (frame-ancestors).
	for _, c := range []struct{ name, query string }{
		{"NotAllowedOrigin", "?mode=live"},
		{"ForgedOrigin", "?mode=live&forge=" + url.QueryEscape("https://shop.example")},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, console := open(t, c.query)
			eventually(t, 20*time.Second, "the browser's report of the blocked frame", func() bool {
				for _, l := range console.CSP() {
					if strings.Contains(l, "frame-ancestors") {
						return true
					}
				}
				return false
			})
			// Give a frame that was not blocked time to say ready.
			time.Sleep(2 * time.Second)
			got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(messages) + (document.body.getAttribute('data-ready') || '')`))
			if err != nil || got != "[]" {
				t.Fatalf("messages from the gateway on a page not allowed: %q %v", got, err)
			}
		})
	}
}

// TestDemoCheckoutBrowser runs `paygate demo` and pays on the example shop
// it prints, as a newcomer would: the page tokenizes in the gateway's frame,
// the shop's backend pays with the token, the result page shows captured.
func TestDemoCheckoutBrowser(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	cmd := exec.Command(binary, "demo", "--addr", addr, "--metrics-addr=", "--database-url", "sqlite:"+filepath.Join(dir, "demo.db"))
	cmd.Env = append(os.Environ(), "PAYGATE_DRAIN_DELAY=0s", "HOME="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var logsMu sync.Mutex
	cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		logsMu.Lock()
		defer logsMu.Unlock()
		return logs.Write(p)
	})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	shopc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "Try the checkout in a browser: "); ok {
				shopc <- strings.TrimSpace(rest)
			}
		}
	}()
	var shopURL string
	select {
	case shopURL = <-shopc:
	case <-time.After(60 * time.Second):
		logsMu.Lock()
		defer logsMu.Unlock()
		t.Fatalf("demo printed no checkout URL\n%s", logs.String())
	}
	gatewayURL := "http://" + addr
	eventually(t, 60*time.Second, "the demo gateway", func() bool {
		resp, err := http.Get(gatewayURL + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if !strings.HasPrefix(shopURL, "http://127.0.0.1:") || shopURL == gatewayURL+"/" {
		t.Fatalf("checkout URL %q, want another loopback port than the gateway's", shopURL)
	}
	// The shopper opens it as localhost: another site than the gateway's
	// 127.0.0.1, so the frame runs in a process of its own.
	page := strings.Replace(shopURL, "127.0.0.1", "localhost", 1)

	ctx := newBrowser(t)
	console := watchConsole(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#pay"))); err != nil {
		t.Fatalf("demo shop: %v", err)
	}
	frame := cardFrame(t, ctx, gatewayURL)
	typeCard(t, ctx, frame, "4242424242424242", "12"+futureYear(), "123", "Demo Shopper")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#pay")), chromedp.WaitVisible(chromedp.CSS("#status"))); err != nil {
		msg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.getElementById('message') || {}).textContent || ''`))
		t.Fatalf("result page: %v (%s)", err, msg)
	}
	status, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#status")))
	if err != nil || status != "captured" {
		t.Fatalf("demo payment status %q %v", status, err)
	}
	if p := console.CSP(); len(p) > 0 {
		t.Fatalf("Content-Security-Policy problems:\n%s", strings.Join(p, "\n"))
	}
}

// writerFunc is an io.Writer of a func.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
