package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
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

// tokenShopPage is the shop's checkout page. messages records every
// message the gateway's origin posts to the page, whole (none reach it when
// the frame is blocked). With Foreign, the page also shows a frame of
// another origin (an ad, a widget) that tries to drive the card frame.
var tokenShopPage = template.Must(template.New("shop").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Checkout – Ada's Books</title></head>
<body>
<h1>Ada's Books</h1>
<p>Order o-77: 10.50 EUR</p>
{{if .Forged}}<iframe id="forged" title="card" src="{{.Forged}}"></iframe>{{else}}<div id="card"></div>{{end}}
{{if .Foreign}}<iframe id="foreign" title="ad" src="{{.Foreign}}"></iframe>{{end}}
<button id="pay" type="button">Pay 10.50 EUR</button>
<p id="result"></p>
<p>Brand: <span id="brand"></span></p>
<script>
var messages = [];
window.addEventListener('message', function (e) {
  if (e.origin === {{.Gateway}}) { messages.push(e.data); }
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
	// The foreign frame: go tells it to start, heard is what it received,
	// done how many rounds of messages it sent to the card frame.
	foreignGo    bool
	foreignHeard []string
	foreignDone  int
}

// foreignPage is a page of another origin than the shop's and the
// gateway's, shown in a frame on the shop's page. Once told to go, it posts
// tokenize, style and focus messages to every other frame of the page (the
// card frame among them) to any origin, ten rounds, and reports what it
// hears back.
const foreignPage = `<!doctype html><html><head><meta charset="utf-8"><title>Ad</title></head><body><p>Ad</p>
<script>
window.addEventListener('message', function (e) {
  fetch('/foreign/report', {method: 'POST', body: JSON.stringify({heard: e.data, origin: e.origin})});
});
function attack() {
  var n = 0;
  var t = setInterval(function () {
    for (var i = 0; i < window.parent.frames.length; i++) {
      var f = window.parent.frames[i];
      if (f === window) { continue; }
      f.postMessage({paygate: 1, type: 'style', style: {color: 'rgb(1, 2, 3)', background: 'rgb(1, 2, 3)'}}, '*');
      f.postMessage({paygate: 1, type: 'tokenize', id: 1}, '*');
      f.postMessage({paygate: 1, type: 'tokenize', id: 2}, '*');
    }
    if (++n === 10) {
      clearInterval(t);
      fetch('/foreign/report', {method: 'POST', body: JSON.stringify({done: n})});
    }
  }, 200);
}
(function poll() {
  fetch('/foreign/go').then(function (r) { return r.text(); }).then(function (t) {
    if (t === '1') { attack(); } else { setTimeout(poll, 200); }
  });
}());
</script></body></html>`

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
	mux.HandleFunc("GET /foreign", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, foreignPage)
	})
	mux.HandleFunc("GET /foreign/go", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.foreignGo {
			_, _ = io.WriteString(w, "1")
		}
	})
	mux.HandleFunc("POST /foreign/report", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Heard json.RawMessage `json:"heard"`
			Done  int             `json:"done"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		s.mu.Lock()
		defer s.mu.Unlock()
		if in.Done > 0 {
			s.foreignDone = in.Done
		} else {
			s.foreignHeard = append(s.foreignHeard, string(in.Heard))
		}
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
	if r.URL.Query().Get("foreign") == "1" {
		// The shop's server under its other name: an origin that is
		// neither the page's (localhost) nor the gateway's (another port).
		data["Foreign"] = template.URL(strings.Replace(s.url, "localhost", "127.0.0.1", 1) + "/foreign")
	}
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

// assertMessagesHoldNoDigits fails when a message the gateway's frame
// posted to the page holds four or more digits in a row of any number
// typed, or the whole number: the only digits of the number the page may
// learn are the token's card.last4, which must be tokenLast4 ("" when no
// token was made). It reads the page's messages, every one of them whole.
func assertMessagesHoldNoDigits(t *testing.T, page context.Context, tokenLast4 string, numbers ...string) {
	t.Helper()
	raw, err := chromedp.Run(page, chromedp.Evaluate[string](`JSON.stringify(messages)`))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []map[string]any
	if err := json.Unmarshal([]byte(raw), &msgs); err != nil {
		t.Fatalf("messages %s: %v", raw, err)
	}
	tokens := 0
	for _, m := range msgs {
		if m["type"] == "token" {
			tokens++
			tok, _ := m["token"].(map[string]any)
			card, _ := tok["card"].(map[string]any)
			if card == nil || card["last4"] != tokenLast4 {
				t.Fatalf("token message %v, want card.last4 %q", m, tokenLast4)
			}
			delete(card, "last4")
		}
		if st, _ := m["state"].(map[string]any); st != nil && st["last4"] != nil {
			t.Errorf("a %v message tells the page last4: %v", m["type"], m)
		}
		b, _ := json.Marshal(m)
		for _, n := range numbers {
			for i := 0; i+4 <= len(n); i++ {
				if strings.Contains(string(b), n[i:i+4]) {
					t.Fatalf("a message to the page holds %q of the card number %s: %s", n[i:i+4], n, b)
				}
			}
		}
	}
	if (tokenLast4 != "") != (tokens == 1) {
		t.Fatalf("%d token messages, want a token %v; messages %s", tokens, tokenLast4 != "", raw)
	}
	if len(msgs) < 3 {
		t.Fatalf("only %d messages recorded: %s", len(msgs), raw)
	}
}

// countTokens counts the tokens of a holder name in the gateway's database.
func countTokens(t *testing.T, dbURL, holder string) int {
	t.Helper()
	db, q := rawDB(t, sqliteEngine(), dbURL)
	var n int
	if err := db.QueryRow(q(`SELECT count(*) FROM card_tokens WHERE holder_name = $1`), holder).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
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
		// In the page's locale: the frame's title, the expiry's
		// placeholder. Every field is required, and each empty error
		// region stays rendered (a live region a screen reader does not
		// see announces nothing when it is filled) without taking room.
		title, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#card iframe').title`))
		if err != nil || title != "Saisie sécurisée de la carte de paiement" {
			t.Fatalf("the frame's title on a French page: %q %v", title, err)
		}
		a11y, err := chromedp.Run(frame, chromedp.Evaluate[string](`document.getElementById('expiry').placeholder + '|' +
			['number', 'expiry', 'cvc', 'name'].map(function (f) {
				var e = document.getElementById(f + '-error'), cs = getComputedStyle(e);
				return document.getElementById(f).getAttribute('aria-required') + ' ' + e.getAttribute('aria-live') + ' ' +
					cs.display + ' ' + e.getBoundingClientRect().height;
			}).join('|')`))
		if want := "MM / AA|true polite block 0|true polite block 0|true polite block 0|true polite block 0"; err != nil || a11y != want {
			t.Fatalf("the frame's fields and error regions: %q %v, want %q", a11y, err, want)
		}
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
		// The page hears that the number is complete, never its last
		// digits (only the token carries card.last4).
		state, err := chromedp.Run(ctx, chromedp.Poll[string](`(function () {
			var s = window.lastState; return s && s.brand === 'amex' && s.fields.number.complete ? JSON.stringify([s.fields.number.complete, s.fields.cvc.complete, 'last4' in s]) : null;
		})()`, chromedp.WithPollingTimeout(10*time.Second)))
		if err != nil || state != `[true,false,false]` {
			t.Fatalf("state for an amex number with a 3-digit code: %s %v", state, err)
		}
		// A year of four digits, as a browser's autofill or a paste gives
		// it, is read as its last two.
		exp, err := chromedp.Run(frame, chromedp.Evaluate[string](`(function () {
			var e = document.getElementById('expiry');
			e.value = '12/20`+futureYear()+`';
			e.dispatchEvent(new Event('input', {bubbles: true}));
			return e.value;
		})()`))
		if err != nil || exp != "12 / "+futureYear() {
			t.Fatalf("expiry filled in as 12/20%s: %q %v", futureYear(), exp, err)
		}
		if p := console.CSP(); len(p) > 0 {
			t.Fatalf("Content-Security-Policy problems on an allowed page:\n%s", strings.Join(p, "\n"))
		}
		assertNoCardNumber(t, ctx, "378282246310005")
		assertMessagesHoldNoDigits(t, ctx, "", "378282246310005", "4242424242424241")
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
		assertMessagesHoldNoDigits(t, ctx, "4242", "4242424242424242")
		if p := console.CSP(); len(p) > 0 {
			t.Fatalf("Content-Security-Policy problems:\n%s", strings.Join(p, "\n"))
		}
	})

	// A frame of another origin on the shop's page (an ad, a widget) posts
	// tokenize and style messages to the card frame: the frame obeys only
	// the page that embeds it, so no token is made, no answer reaches
	// anyone, the style stays; the page's own Pay still works.
	t.Run("ForeignFrame", func(t *testing.T) {
		t.Parallel()
		const holder = "Eve Foreign"
		ctx, _ := open(t, "?foreign=1")
		ready(t, ctx)
		frame := cardFrame(t, ctx, g.url)
		typeCard(t, ctx, frame, "5555555555554444", "12"+futureYear(), "123", holder)
		s.mu.Lock()
		s.foreignGo = true
		s.mu.Unlock()
		eventually(t, 30*time.Second, "the foreign frame's messages", func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.foreignDone == 10
		})
		// Give a token the frame wrongly made time to come back.
		time.Sleep(2 * time.Second)
		s.mu.Lock()
		heard := append([]string(nil), s.foreignHeard...)
		s.mu.Unlock()
		if len(heard) > 0 {
			t.Fatalf("the foreign frame heard %s", strings.Join(heard, " "))
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(messages.filter(function (m) { return m.type === 'token' || m.type === 'error'; }))`))
		if err != nil || got != "[]" {
			t.Fatalf("answers to the foreign frame's messages reached the page: %s %v", got, err)
		}
		look, err := chromedp.Run(frame, chromedp.Evaluate[string](`getComputedStyle(document.getElementById('number')).color + '|' +
			getComputedStyle(document.getElementById('number')).backgroundColor + '|' + document.getElementById('number').value`))
		if err != nil || strings.Contains(look, "rgb(1, 2, 3)") || !strings.HasSuffix(look, "|5555 5555 5555 4444") {
			t.Fatalf("the card frame after the foreign frame's messages: %q %v", look, err)
		}
		if n := countTokens(t, dbURL, holder); n != 0 {
			t.Fatalf("%d tokens made for the foreign frame", n)
		}
		// The page's own request works, and is counted.
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#pay"))); err != nil {
			t.Fatal(err)
		}
		result, err := chromedp.Run(ctx, chromedp.Poll[string](`(function () { var t = document.getElementById('result').textContent; return t || null; })()`,
			chromedp.WithPollingTimeout(30*time.Second)))
		if err != nil || result != "captured" {
			t.Fatalf("the page's own payment: %q %v", result, err)
		}
		if n := countTokens(t, dbURL, holder); n != 1 {
			t.Fatalf("%d tokens after the page's own createToken, want 1", n)
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

// demoRun is a running `paygate demo`.
type demoRun struct {
	cmd        *exec.Cmd
	shopURL    string // as printed
	gatewayURL string
	merchantID string
	exited     chan error
	logsMu     sync.Mutex
	logs       bytes.Buffer
}

// startDemo runs `paygate demo` on the SQLite database db, on a free
// loopback port, and waits for its gateway and the checkout URL it prints.
func startDemo(t *testing.T, db, home string) *demoRun {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	d := &demoRun{gatewayURL: "http://" + addr, exited: make(chan error, 1)}
	d.cmd = exec.Command(binary, "demo", "--addr", addr, "--metrics-addr=", "--database-url", "sqlite:"+db)
	d.cmd.Env = append(os.Environ(), "PAYGATE_DRAIN_DELAY=0s", "HOME="+home)
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d.cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		d.logsMu.Lock()
		defer d.logsMu.Unlock()
		return d.logs.Write(p)
	})
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.exited <- d.cmd.Wait() }()
	t.Cleanup(func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-d.exited:
			d.exited <- err
		case <-time.After(20 * time.Second):
			_ = d.cmd.Process.Kill()
		}
	})
	shopc := make(chan string, 1)
	merchantc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "Try the checkout in a browser: "); ok {
				shopc <- strings.TrimSpace(rest)
			}
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "Merchant id:"); ok {
				merchantc <- strings.TrimSpace(rest)
			}
		}
	}()
	select {
	case d.shopURL = <-shopc:
	case <-time.After(60 * time.Second):
		t.Fatalf("demo printed no checkout URL\n%s", d.stderr())
	}
	select {
	case d.merchantID = <-merchantc:
	default:
		t.Fatalf("demo printed no merchant id\n%s", d.stderr())
	}
	eventually(t, 60*time.Second, "the demo gateway", func() bool {
		resp, err := http.Get(d.gatewayURL + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if !strings.HasPrefix(d.shopURL, "http://127.0.0.1:") || d.shopURL == d.gatewayURL+"/" {
		t.Fatalf("checkout URL %q, want another loopback port than the gateway's", d.shopURL)
	}
	return d
}

func (d *demoRun) stderr() string {
	d.logsMu.Lock()
	defer d.logsMu.Unlock()
	return d.logs.String()
}

// stop ends demo as an operator's Ctrl-C does and wants a clean exit.
func (d *demoRun) stop(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.exited:
		d.exited <- err
		if err != nil {
			t.Fatalf("demo exited with %v\n%s", err, d.stderr())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("demo did not stop\n%s", d.stderr())
	}
}

// payOnDemoShop pays with the test card that is captured on the demo shop
// the browser shows, typing into the card frame through typeIn.
func payOnDemoShop(t *testing.T, ctx context.Context, typeIn func(number, expiry, cvc, name string)) {
	t.Helper()
	typeIn("4242424242424242", "12"+futureYear(), "123", "Demo Shopper")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#pay")), chromedp.WaitVisible(chromedp.CSS("#status"))); err != nil {
		msg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.getElementById('message') || {}).textContent || ''`))
		t.Fatalf("result page: %v (%s)", err, msg)
	}
	status, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#status")))
	if err != nil || status != "captured" {
		t.Fatalf("demo payment status %q %v", status, err)
	}
}

// TestDemoCheckoutBrowser runs `paygate demo` and pays on the example shop
// it prints, as a newcomer would: the page tokenizes in the gateway's frame,
// the shop's backend pays with the token, the result page shows captured.
// Then demo runs again on the same database, whose merchant exists: the
// shop runs again, with test keys made for it that demo revokes when it
// stops.
func TestDemoCheckoutBrowser(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "demo.db")

	// First run: the exact URL demo printed, on 127.0.0.1 like the
	// gateway (one site: the frame shares the page's process, and is
	// reached through its iframe's node).
	first := startDemo(t, db, dir)
	ctx := newBrowser(t)
	console := watchConsole(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(first.shopURL), chromedp.WaitVisible(chromedp.CSS("#pay"))); err != nil {
		t.Fatalf("demo shop: %v", err)
	}
	payOnDemoShop(t, ctx, func(number, expiry, cvc, name string) {
		var iframe *chromedp.Node
		eventually(t, 20*time.Second, "the card frame's fields", func() bool {
			nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSS("#card iframe")))
			if err != nil || len(nodes) == 0 {
				return false
			}
			iframe = nodes[0]
			fields, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSS("#number"), chromedp.AtLeast(0), chromedp.FromNode(iframe)))
			return err == nil && len(fields) == 1
		})
		in := chromedp.FromNode(iframe)
		if err := chromedp.Do(ctx,
			chromedp.SendKeys(chromedp.CSS("#number"), number, in),
			chromedp.SendKeys(chromedp.CSS("#expiry"), expiry, in),
			chromedp.SendKeys(chromedp.CSS("#cvc"), cvc, in),
			chromedp.SendKeys(chromedp.CSS("#name"), name, in),
		); err != nil {
			t.Fatalf("type the card: %v", err)
		}
	})
	if p := console.CSP(); len(p) > 0 {
		t.Fatalf("Content-Security-Policy problems:\n%s", strings.Join(p, "\n"))
	}
	first.stop(t)

	// Second run on the same database: the merchant exists; the shop runs
	// all the same. The shopper opens it as localhost this time: another
	// site than the gateway's 127.0.0.1, so the frame runs in a process of
	// its own.
	second := startDemo(t, db, dir)
	if second.merchantID != first.merchantID {
		t.Fatalf("second demo on merchant %q, first on %q", second.merchantID, first.merchantID)
	}
	ctx2 := newBrowser(t)
	console2 := watchConsole(t, ctx2)
	page := strings.Replace(second.shopURL, "127.0.0.1", "localhost", 1)
	if err := chromedp.Do(ctx2, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#pay"))); err != nil {
		t.Fatalf("demo shop: %v", err)
	}
	frame := cardFrame(t, ctx2, second.gatewayURL)
	payOnDemoShop(t, ctx2, func(number, expiry, cvc, name string) {
		typeCard(t, ctx2, frame, number, expiry, cvc, name)
	})
	if p := console2.CSP(); len(p) > 0 {
		t.Fatalf("Content-Security-Policy problems:\n%s", strings.Join(p, "\n"))
	}
	second.stop(t)

	// The keys the second run made for its shop: an expiry, revoked on
	// the clean exit, audited as the CLI's; the merchant's own test keys
	// untouched.
	var keys []struct {
		ID        string  `json:"id"`
		Mode      string  `json:"mode"`
		Type      string  `json:"type"`
		ExpiresAt *string `json:"expiresAt"`
		RevokedAt *string `json:"revokedAt"`
	}
	mustCLI(t, &keys, "key", "list", "--merchant", first.merchantID, "--json", "--database-url", "sqlite:"+db)
	made := map[string]int{}
	for _, k := range keys {
		if k.Mode == "test" && k.ExpiresAt != nil {
			if k.RevokedAt == nil {
				t.Errorf("the shop's %s key %s is not revoked after demo stopped", k.Type, k.ID)
			}
			made[k.Type]++
		} else if k.RevokedAt != nil {
			t.Errorf("key %s (%s %s) revoked", k.ID, k.Mode, k.Type)
		}
	}
	if made["secret"] != 1 || made["public"] != 1 {
		t.Fatalf("keys made for the second run's shop: %v; keys %+v", made, keys)
	}
	raw, q := rawDB(t, sqliteEngine(), "sqlite:"+db)
	var created, revoked int
	if err := raw.QueryRow(q(`SELECT count(*) FILTER (WHERE action = 'api_key.created'), count(*) FILTER (WHERE action = 'api_key.revoked')
		FROM audit_log WHERE merchant_id = $1 AND mode = 'test' AND email = 'cli' AND user_id = ''`), first.merchantID).Scan(&created, &revoked); err != nil {
		t.Fatal(err)
	}
	if created != 2 || revoked != 2 {
		t.Fatalf("audit of the shop's keys: %d created, %d revoked by cli, want 2 and 2", created, revoked)
	}
}

// writerFunc is an io.Writer of a func.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
