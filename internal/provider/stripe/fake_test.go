package stripe

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fake is a local stand-in for Stripe's API answering the outcomes
// stripe-mock cannot produce (declines, 3-D Secure, errors, timeouts) with
// payloads shaped like Stripe's documented responses (the PaymentIntent,
// PaymentMethod, Refund, search result and error objects of
// https://docs.stripe.com/api). It keys its behaviour on the test card
// number, with the sandbox's card table (Stripe's own test cards use the
// same numbers for the same declines).
type fake struct {
	t   *testing.T
	srv *httptest.Server
	key string
	// hang is how long a charge of card 4000000000000705 waits before it
	// answers (after recording a succeeded intent).
	hang time.Duration

	mu       sync.Mutex
	pms      map[string]string // pm id -> card number
	intents  map[string]map[string]any
	order    []string
	refunds  map[string]map[string]any
	replays  map[string][]byte // idempotency key -> answer
	requests []string          // "METHOD path" of every request
	forms    []url.Values
	seq      int
}

func newFake(t *testing.T) *fake {
	f := &fake{
		t: t, key: "sk_test_fake", hang: 3 * time.Second,
		pms: map[string]string{}, intents: map[string]map[string]any{},
		refunds: map[string]map[string]any{}, replays: map[string][]byte{},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) nextID(prefix string) string {
	f.seq++
	return fmt.Sprintf("%s_%024d", prefix, f.seq)
}

func writeJSON(w http.ResponseWriter, status int, v any) []byte {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_fake")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	return b
}

func stripeError(typ, code, declineCode, msg string, pi map[string]any) map[string]any {
	e := map[string]any{"type": typ, "message": msg}
	if code != "" {
		e["code"] = code
		e["doc_url"] = "https://stripe.com/docs/error-codes/" + strings.ReplaceAll(code, "_", "-")
	}
	if declineCode != "" {
		e["decline_code"] = declineCode
	}
	if pi != nil {
		e["payment_intent"] = pi
	}
	return map[string]any{"error": e}
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		writeJSON(w, 401, stripeError("invalid_request_error", "", "", "Invalid API Key provided.", nil))
		return
	}
	_ = r.ParseForm()
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	f.forms = append(f.forms, r.PostForm)
	key := r.Header.Get("Idempotency-Key")
	if r.Method == http.MethodPost {
		if key == "" {
			f.mu.Unlock()
			f.t.Errorf("POST %s without an Idempotency-Key", r.URL.Path)
			writeJSON(w, 400, stripeError("invalid_request_error", "", "", "missing idempotency key", nil))
			return
		}
		if b, ok := f.replays[key]; ok {
			f.mu.Unlock()
			w.Header().Set("Idempotent-Replayed", "true")
			w.Header().Set("Content-Type", "application/json")
			var status struct {
				Error *struct{ Type string } `json:"error"`
			}
			code := 200
			if json.Unmarshal(b, &status) == nil && status.Error != nil {
				code = 402
			}
			w.WriteHeader(code)
			_, _ = w.Write(b)
			return
		}
	}
	status, body, hang := f.route(r)
	var b []byte
	if body != nil {
		bb, _ := json.Marshal(body)
		b = bb
		if r.Method == http.MethodPost && status != 429 && status < 500 && !(status == 400) {
			f.replays[key] = b
		}
	}
	f.mu.Unlock()
	if hang > 0 {
		select {
		case <-time.After(hang):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// route answers a request; f.mu is held.
func (f *fake) route(r *http.Request) (int, any, time.Duration) {
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && path == "/v1/payment_methods":
		number := r.PostForm.Get("card[number]")
		if number == "" || r.PostForm.Get("type") != "card" {
			return 400, stripeError("invalid_request_error", "parameter_missing", "", "Missing required param: card[number].", nil), 0
		}
		id := f.nextID("pm")
		f.pms[id] = number
		return 200, map[string]any{
			"id": id, "object": "payment_method", "type": "card", "livemode": false, "created": time.Now().Unix(),
			"billing_details": map[string]any{"name": r.PostForm.Get("billing_details[name]")},
			"card":            map[string]any{"brand": "visa", "last4": number[len(number)-4:], "exp_month": 12, "exp_year": 2030},
		}, 0
	case r.Method == http.MethodPost && path == "/v1/payment_intents":
		return f.createIntent(r)
	case r.Method == http.MethodGet && path == "/v1/payment_intents/search":
		return f.search(r)
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/v1/payment_intents/"):
		pi, ok := f.intents[strings.TrimPrefix(path, "/v1/payment_intents/")]
		if !ok {
			return 404, stripeError("invalid_request_error", "resource_missing", "", "No such payment_intent.", nil), 0
		}
		return 200, pi, 0
	case r.Method == http.MethodPost && strings.HasPrefix(path, "/v1/payment_intents/"):
		rest := strings.TrimPrefix(path, "/v1/payment_intents/")
		id, verb, _ := strings.Cut(rest, "/")
		pi, ok := f.intents[id]
		if !ok {
			return 404, stripeError("invalid_request_error", "resource_missing", "", "No such payment_intent: '"+id+"'", nil), 0
		}
		if pi["status"] != "requires_capture" {
			return 400, stripeError("invalid_request_error", "payment_intent_unexpected_state", "", "This PaymentIntent could not be "+verb+"d.", nil), 0
		}
		switch verb {
		case "capture":
			amt := pi["amount"].(int64)
			if s := r.PostForm.Get("amount_to_capture"); s != "" {
				amt, _ = strconv.ParseInt(s, 10, 64)
			}
			pi["status"], pi["amount_received"] = "succeeded", amt
		case "cancel":
			pi["status"], pi["canceled_at"] = "canceled", time.Now().Unix()
		default:
			return 404, stripeError("invalid_request_error", "", "", "Unrecognized request URL.", nil), 0
		}
		return 200, pi, 0
	case r.Method == http.MethodPost && path == "/v1/refunds":
		pi, ok := f.intents[r.PostForm.Get("payment_intent")]
		if !ok || pi["status"] != "succeeded" {
			return 400, stripeError("invalid_request_error", "charge_not_refundable", "", "This payment cannot be refunded.", nil), 0
		}
		amt, _ := strconv.ParseInt(r.PostForm.Get("amount"), 10, 64)
		id := f.nextID("re")
		re := map[string]any{
			"id": id, "object": "refund", "amount": amt, "currency": pi["currency"], "payment_intent": pi["id"],
			"status": "succeeded", "reason": nil, "created": time.Now().Unix(),
		}
		if s := r.PostForm.Get("reason"); s != "" {
			re["reason"] = s
		}
		f.refunds[id] = re
		return 200, re, 0
	}
	return 404, stripeError("invalid_request_error", "", "", "Unrecognized request URL ("+r.Method+": "+path+").", nil), 0
}

func (f *fake) newIntent(r *http.Request, status string) map[string]any {
	amt, _ := strconv.ParseInt(r.PostForm.Get("amount"), 10, 64)
	id := f.nextID("pi")
	pi := map[string]any{
		"id": id, "object": "payment_intent", "amount": amt, "amount_received": int64(0), "currency": r.PostForm.Get("currency"),
		"capture_method": r.PostForm.Get("capture_method"), "client_secret": id + "_secret_fake", "confirmation_method": "automatic",
		"created": time.Now().Unix(), "livemode": false, "payment_method": r.PostForm.Get("payment_method"),
		"payment_method_types": []string{"card"}, "status": status, "next_action": nil, "last_payment_error": nil,
		"metadata": map[string]string{MetadataKey: r.PostForm.Get("metadata[" + MetadataKey + "]")},
	}
	if status == "succeeded" {
		pi["amount_received"] = amt
	}
	f.intents[id] = pi
	f.order = append(f.order, id)
	return pi
}

func declineErr(code, declineCode, msg string) map[string]any {
	e := map[string]any{"type": "card_error", "code": code, "message": msg}
	if declineCode != "" {
		e["decline_code"] = declineCode
	}
	return e
}

func (f *fake) createIntent(r *http.Request) (int, any, time.Duration) {
	if r.PostForm.Get("confirm") != "true" {
		return 400, stripeError("invalid_request_error", "", "", "expected confirm=true", nil), 0
	}
	number, ok := f.pms[r.PostForm.Get("payment_method")]
	if !ok {
		return 400, stripeError("invalid_request_error", "resource_missing", "", "No such PaymentMethod.", nil), 0
	}
	declines := map[string]map[string]any{
		"4000000000000002": declineErr("card_declined", "generic_decline", "Your card was declined."),
		"4000000000009995": declineErr("card_declined", "insufficient_funds", "Your card has insufficient funds."),
		"4000000000000069": declineErr("expired_card", "", "Your card has expired."),
		"4000000000000127": declineErr("incorrect_cvc", "", "Your card's security code is incorrect."),
	}
	if d, ok := declines[number]; ok {
		pi := f.newIntent(r, "requires_payment_method")
		pi["last_payment_error"] = d
		body := stripeError("card_error", d["code"].(string), "", d["message"].(string), pi)
		if dc, ok := d["decline_code"]; ok {
			body["error"].(map[string]any)["decline_code"] = dc
		}
		return 402, body, 0
	}
	switch number {
	case "4000000000000119":
		return 400, stripeError("invalid_request_error", "parameter_invalid_integer", "", "Invalid integer: card 4000000000000119 simulated refusal", nil), 0
	case "4000000000000259":
		return 429, stripeError("invalid_request_error", "rate_limit", "", "Too many requests hit the API too quickly.", nil), 0
	case "4000000000000077":
		return 200, f.newIntent(r, "requires_capture"), 0
	case "4000000000000705":
		return 200, f.newIntent(r, "succeeded"), f.hang
	case "4000000000003220":
		pi := f.newIntent(r, "requires_action")
		pi["next_action"] = map[string]any{
			"type": "redirect_to_url",
			"redirect_to_url": map[string]any{
				"url":        f.srv.URL + "/redirect/authenticate/src_" + pi["id"].(string),
				"return_url": r.PostForm.Get("return_url"),
			},
		}
		return 200, pi, 0
	}
	return 200, f.newIntent(r, "succeeded"), 0
}

func (f *fake) search(r *http.Request) (int, any, time.Duration) {
	q := r.URL.Query().Get("query")
	prefix := "metadata['" + MetadataKey + "']:'"
	if !strings.HasPrefix(q, prefix) || !strings.HasSuffix(q, "'") {
		return 400, stripeError("invalid_request_error", "", "", "Invalid search query.", nil), 0
	}
	want := strings.TrimSuffix(strings.TrimPrefix(q, prefix), "'")
	data := []any{}
	for _, id := range f.order {
		pi := f.intents[id]
		if pi["metadata"].(map[string]string)[MetadataKey] == want {
			data = append(data, pi)
		}
	}
	return 200, map[string]any{"object": "search_result", "url": "/v1/payment_intents/search", "has_more": false, "next_page": nil, "data": data}, 0
}

// authenticate plays the customer at Stripe's 3-D Secure page: the intent
// succeeds, or fails authentication.
func (f *fake) authenticate(id string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pi := f.intents[id]
	pi["next_action"] = nil
	if ok {
		pi["status"], pi["amount_received"] = "succeeded", pi["amount"]
		return
	}
	pi["status"] = "requires_payment_method"
	pi["last_payment_error"] = map[string]any{
		"type": "invalid_request_error", "code": "payment_intent_authentication_failure",
		"message": "We are unable to authenticate your payment method. Please choose a different payment method and try again.",
	}
}
