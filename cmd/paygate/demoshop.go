package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// The demo's example shop (issue 24): a product page on a loopback port of
// its own that collects the card with paygate.js, so that a newcomer sees
// the whole browser flow. The page tokenizes the card in the gateway's
// frame and posts the token to the shop's backend (/pay, in this process),
// which pays with the merchant's test secret key, as a real shop's server
// would; a 3-D Secure card sends the browser to the challenge and back to
// /return, where the backend reads the payment before it says anything.

// demoShop is the example shop of one demo merchant.
type demoShop struct {
	gateway   string // the gateway's base URL
	secretKey string // the merchant's test secret key (server side only)
	publicKey string // the merchant's test public key (for the page)
	self      string // the shop's own base URL
	client    *http.Client
}

// startDemoShop serves the shop on a free loopback port until ctx ends,
// and returns its URL.
func startDemoShop(ctx context.Context, gateway, secretKey, publicKey string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("demo shop: %w", err)
	}
	s := &demoShop{gateway: strings.TrimRight(gateway, "/"), secretKey: secretKey, publicKey: publicKey,
		self: "http://" + ln.Addr().String(), client: &http.Client{Timeout: 30 * time.Second}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /shop.js", s.script)
	mux.HandleFunc("POST /pay", s.pay)
	mux.HandleFunc("GET /return", s.ret)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return s.self, nil
}

var demoShopPage = template.Must(template.New("shop").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{if .Result}}Order {{.Result.Status}}{{else}}Checkout{{end}} – Paygate demo shop</title>
<style>
body { font: 16px/1.5 system-ui, sans-serif; color: #1a1f36; background: #f6f8fa; margin: 0; }
main { max-width: 460px; margin: 40px auto; background: #fff; padding: 28px; border-radius: 10px; box-shadow: 0 2px 12px rgba(0,0,0,.08); }
h1 { font-size: 1.3em; margin: 0 0 4px; }
.price { font-size: 1.6em; font-weight: 600; margin: 4px 0 20px; }
button { width: 100%; padding: 12px; font: inherit; font-weight: 600; color: #fff; background: #0570de; border: 0; border-radius: 6px; cursor: pointer; margin-top: 8px; }
button[disabled] { opacity: .6; cursor: wait; }
#message { min-height: 1.5em; margin: 12px 0 0; }
.ok { color: #0a7f3f; } .bad { color: #df1b41; }
.cards { font-size: .85em; color: #555; margin-top: 24px; }
code { font-size: .95em; }
</style></head>
<body><main>
{{if .Result}}
<h1 id="result-heading">{{if eq .Result.Status "captured"}}Thank you!{{else}}The payment did not go through{{end}}</h1>
<p id="result" class="{{if eq .Result.Status "captured"}}ok{{else}}bad{{end}}">Payment <code>{{.Result.ID}}</code>: <strong id="status">{{.Result.Status}}</strong>{{with .Result.Error}} ({{.}}){{end}}</p>
<p><a href="/">Back to the shop</a></p>
{{else}}
<h1>Paygate T-shirt</h1>
<p>Organic cotton, the gateway's logo on the front.</p>
<p class="price">25.00 EUR</p>
<div id="card" data-gateway="{{.Gateway}}" data-key="{{.PublicKey}}"></div>
<button id="pay" type="button">Pay 25.00 EUR</button>
<p id="message" role="status"></p>
<div class="cards"><p>Test cards (any future expiry, any name):</p>
<ul><li><code>4242 4242 4242 4242</code>, CVC 123: captured</li>
<li><code>4000 0000 0000 3220</code>: 3-D Secure challenge</li>
<li><code>4000 0000 0000 0002</code>: declined</li>
<li><code>3782 822463 10005</code>, CVC 1234: American Express</li></ul>
<p>The card number stays in the gateway's frame: this page and its server only see a token.</p></div>
<script src="{{.Gateway}}/js/v1/paygate.js"></script>
<script src="/shop.js"></script>
{{end}}
</main></body></html>`))

// demoShopScript mounts the card fields and pays: tokenize in the frame,
// then the shop's backend charges the token.
const demoShopScript = `(function () {
  'use strict';
  var box = document.getElementById('card');
  var pay = document.getElementById('pay');
  var message = document.getElementById('message');
  var card = Paygate(box.getAttribute('data-key')).mountCard(box, {
    style: { fontFamily: 'system-ui, sans-serif' },
    onSubmit: function () { pay.click(); }
  });
  function say(text, bad) {
    message.textContent = text;
    message.className = bad ? 'bad' : 'ok';
  }
  pay.addEventListener('click', function () {
    pay.disabled = true;
    say('Paying…');
    card.createToken().then(function (token) {
      return fetch('/pay', { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ token: token.id }) }).then(function (r) { return r.json(); });
    }).then(function (res) {
      var t = res.threeDsData;
      if (t && t.redirectUrl) {
        say('Your bank asks you to confirm the payment…');
        if ((t.method || 'GET').toUpperCase() === 'POST') {
          var f = document.createElement('form');
          f.method = 'POST';
          f.action = t.redirectUrl;
          Object.keys(t.parameters || {}).forEach(function (k) {
            var i = document.createElement('input');
            i.type = 'hidden'; i.name = k; i.value = t.parameters[k];
            f.appendChild(i);
          });
          document.body.appendChild(f);
          f.submit();
        } else {
          window.location.assign(t.redirectUrl);
        }
        return;
      }
      if (res.id) {
        window.location.assign('/return?transactionId=' + encodeURIComponent(res.id));
        return;
      }
      pay.disabled = false;
      say(res.error || 'The payment failed.', true);
    }, function (err) {
      pay.disabled = false;
      say(err.message, true);
    });
  });
}());
`

func (s *demoShop) page(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = demoShopPage.Execute(w, map[string]any{"Gateway": s.gateway, "PublicKey": s.publicKey})
}

func (s *demoShop) script(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = io.WriteString(w, demoShopScript)
}

// tokenPattern is what a token id looks like; the shop passes nothing else
// to the gateway.
var tokenPattern = regexp.MustCompile(`^tok_[0-9A-Za-z_-]{1,100}$`)

// pay is the shop's backend: it pays 25.00 EUR with the token, its test
// secret key and an Idempotency-Key of the token (a token pays once), and
// answers the page with the payment's id, status and threeDsData.
func (s *demoShop) pay(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10)).Decode(&in); err != nil || !tokenPattern.MatchString(in.Token) {
		writeShopJSON(w, http.StatusBadRequest, map[string]any{"error": "The page sent no token."})
		return
	}
	body := map[string]any{
		"amount": "25.00", "currency": "EUR", "paymentMethod": "token", "token": in.Token,
		"customerId": "demo-shopper", "merchantRef": "demo-shop-order",
		"returnUrl": s.self + "/return",
	}
	var out struct {
		ID          string          `json:"id"`
		Status      string          `json:"status"`
		ThreeDSData json.RawMessage `json:"threeDsData"`
	}
	if err := s.call(r.Context(), http.MethodPost, "/v1/payments", "demo-shop-"+in.Token, body, &out); err != nil {
		writeShopJSON(w, http.StatusOK, map[string]any{"error": err.Error()})
		return
	}
	res := map[string]any{"id": out.ID, "status": out.Status}
	if len(out.ThreeDSData) > 0 && string(out.ThreeDSData) != "null" {
		res["threeDsData"] = out.ThreeDSData
	}
	writeShopJSON(w, http.StatusOK, res)
}

// shopResult is the result page's payment, as the backend read it.
type shopResult struct {
	ID, Status, Error string
}

// ret is where the browser comes back (after a challenge too): the backend
// reads the payment with its secret key rather than trust the query.
func (s *demoShop) ret(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("transactionId")
	res := shopResult{ID: id, Status: "unknown"}
	var p struct {
		Status       string  `json:"status"`
		ErrorMessage *string `json:"errorMessage"`
	}
	if id == "" {
		res.Error = "no payment named"
	} else if err := s.call(r.Context(), http.MethodGet, "/v1/payments/"+url.PathEscape(id), "", nil, &p); err != nil {
		res.Error = err.Error()
	} else {
		res.Status = p.Status
		if p.ErrorMessage != nil {
			res.Error = *p.ErrorMessage
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = demoShopPage.Execute(w, map[string]any{"Result": res})
}

// call sends one API request with the secret key and decodes the data of
// the answer into out; an error answer is returned as its message.
func (s *demoShop) call(ctx context.Context, method, path, idempotencyKey string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.gateway+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", s.secretKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return errors.New("the gateway could not be reached")
	}
	defer resp.Body.Close()
	var env struct {
		Data  json.RawMessage `json:"data"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&env); err != nil {
		return fmt.Errorf("the gateway answered %d", resp.StatusCode)
	}
	if env.Error != nil {
		return errors.New(env.Error.Message)
	}
	return json.Unmarshal(env.Data, out)
}

func writeShopJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
