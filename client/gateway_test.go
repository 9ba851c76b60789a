package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
	"github.com/paygate/paygate/webhook"
)

// TestGatewayEndpoints walks every endpoint once, as a merchant backend
// would, and checks what each answers.
func TestGatewayEndpoints(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	c := g.client(t)
	ctx := t.Context()

	// Customers: an upsert keeps the id and createdAt.
	cust, err := c.UpsertCustomer(ctx, &CustomerParams{ExternalID: "customer-42", Email: "ada@example.com", Metadata: map[string]any{"tier": "gold"}})
	if err != nil {
		t.Fatalf("UpsertCustomer: %v", err)
	}
	again, err := c.UpsertCustomer(ctx, &CustomerParams{ExternalID: "customer-42", Metadata: map[string]any{"tier": "platinum"}})
	if err != nil {
		t.Fatalf("UpsertCustomer again: %v", err)
	}
	if again.ID != cust.ID || !again.CreatedAt.Equal(cust.CreatedAt) || again.Email != "ada@example.com" || again.Metadata["tier"] != "platinum" {
		t.Errorf("upsert: %+v after %+v", again, cust)
	}
	got, err := c.GetCustomer(ctx, cust.ID)
	if err != nil || got.ExternalID != "customer-42" || got.Metadata["tier"] != "platinum" {
		t.Errorf("GetCustomer: %+v, %v", got, err)
	}

	// A captured payment, found by id and by reference.
	var info ResponseInfo
	res, err := c.CreatePayment(ctx, payment("4242424242424242", "order-1"), WithResponseInfo(&info))
	if err != nil {
		t.Fatalf("CreatePayment: %v", err)
	}
	if res.Status != PaymentCaptured || res.Amount != "10.50" || res.Currency != "EUR" || res.Provider != "sandbox-eu" || res.ThreeDSRequired || res.ThreeDSData != nil || res.CreatedAt.IsZero() {
		t.Errorf("CreatePayment: %+v", res)
	}
	if info.StatusCode != http.StatusCreated || info.Attempts != 1 || info.Replayed || info.RequestID == "" || info.RateLimit.Limit != 100 || len(info.IdempotencyKey) != 36 {
		t.Errorf("CreatePayment's answer: %+v", info)
	}
	p, err := c.GetPayment(ctx, res.ID)
	if err != nil {
		t.Fatalf("GetPayment: %v", err)
	}
	if p.ID != res.ID || p.Status != PaymentCaptured || p.CustomerID != cust.ID || p.ProviderID != "sandbox-eu" || p.MerchantRef != "order-1" ||
		p.AmountCaptured != "10.50" || p.AmountRefunded != "0.00" || p.DeclineCode != "" || p.ErrorCode != "" || p.PaymentMethod != MethodCard {
		t.Errorf("GetPayment: %+v", p)
	}
	if byRef, err := c.LookupPayment(ctx, "order-1"); err != nil || byRef.ID != res.ID {
		t.Errorf("LookupPayment: %+v, %v", byRef, err)
	}

	// Refunds.
	rf, err := c.CreateRefund(ctx, &RefundParams{TransactionID: res.ID, Amount: "4", Currency: "EUR", Reason: "damaged"})
	if err != nil {
		t.Fatalf("CreateRefund: %v", err)
	}
	if rf.Status != RefundCreated || rf.Amount != "4" || rf.TransactionID != res.ID || rf.Reason != "damaged" {
		t.Errorf("CreateRefund: %+v", rf)
	}
	if got, err := c.GetRefund(ctx, rf.ID); err != nil || got.ID != rf.ID || got.Amount != "4" {
		t.Errorf("GetRefund: %+v, %v", got, err)
	}
	if list, err := c.ListPaymentRefunds(ctx, res.ID); err != nil || len(list) != 1 || list[0].ID != rf.ID {
		t.Errorf("ListPaymentRefunds: %+v, %v", list, err)
	}
	_, err = c.CreateRefund(ctx, &RefundParams{TransactionID: res.ID, Amount: "7", Currency: "EUR"})
	if e, ok := errors.AsType[*Error](err); !ok || e.Name != NameInvalidRequest || e.Param != "amount" {
		t.Errorf("refund over the rest: %v", err)
	}

	// Authorized payments: one captured in part, one voided.
	auth, err := c.CreatePayment(ctx, payment("4000000000000077", "order-2"))
	if err != nil || auth.Status != PaymentAuthorized {
		t.Fatalf("authorized payment: %+v, %v", auth, err)
	}
	captured, err := c.CapturePayment(ctx, auth.ID, &CaptureParams{Amount: "6.00"})
	if err != nil || captured.Status != PaymentCaptured || captured.AmountCaptured != "6.00" {
		t.Errorf("CapturePayment: %+v, %v", captured, err)
	}
	auth2, err := c.CreatePayment(ctx, payment("4000000000000077", "order-3"))
	if err != nil {
		t.Fatal(err)
	}
	voided, err := c.VoidPayment(ctx, auth2.ID)
	if err != nil || voided.Status != PaymentVoided {
		t.Errorf("VoidPayment: %+v, %v", voided, err)
	}
	_, err = c.CapturePayment(ctx, auth2.ID, nil)
	if ErrorName(err) != NameInvalidRequest {
		t.Errorf("capture of a voided payment: %v", err)
	}

	// Stored cards: save, list, pay with, delete.
	card, err := c.SaveCard(ctx, cust.ID, &StoredCardParams{Number: "5555555555554444", ExpiryMonth: "12", ExpiryYear: testCard("").ExpiryYear, HolderName: "Ada Lovelace"})
	if err != nil {
		t.Fatalf("SaveCard: %v", err)
	}
	if card.Brand != "mastercard" || card.Last4 != "4444" || card.CustomerID != cust.ID {
		t.Errorf("SaveCard: %+v", card)
	}
	if cards, err := c.ListCards(ctx, cust.ID); err != nil || len(cards) != 1 || cards[0].ID != card.ID {
		t.Errorf("ListCards: %+v, %v", cards, err)
	}
	stored := &PaymentParams{Amount: "3.00", Currency: "EUR", CustomerID: "customer-42", PaymentMethod: MethodStoredCard, StoredCardID: card.ID,
		Billing: payment("", "").Billing}
	if sp, err := c.CreatePayment(ctx, stored); err != nil || sp.Status != PaymentCaptured {
		t.Errorf("stored card payment: %+v, %v", sp, err)
	}
	if err := c.DeleteCard(ctx, cust.ID, card.ID); err != nil {
		t.Errorf("DeleteCard: %v", err)
	}
	if err := c.DeleteCard(ctx, cust.ID, card.ID); ErrorName(err) != NameNotFound {
		t.Errorf("DeleteCard again: %v", err)
	}
	if cards, err := c.ListCards(ctx, cust.ID); err != nil || len(cards) != 0 {
		t.Errorf("ListCards after the deletion: %+v, %v", cards, err)
	}

	// Not found, and a key the gateway does not know.
	_, err = c.GetPayment(ctx, "0190b6a2-7c1d-7000-8000-000000000001")
	if e, ok := errors.AsType[*Error](err); !ok || e.StatusCode != http.StatusNotFound || e.Name != NameNotFound || e.RequestID == "" {
		t.Errorf("unknown payment: %v", err)
	}
	bad, err := New(g.url, "smtgw_sk_test_notakeyatallnotakeyatallnotakeyat")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.GetPayment(ctx, res.ID); ErrorName(err) != NameUnauthorized {
		t.Errorf("unknown key: %v", err)
	}
}

// TestGatewayIdempotency: a key given by the caller replays; the same key
// with another body is refused at once, without retries.
func TestGatewayIdempotency(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	c := g.client(t)
	ctx := t.Context()

	var first, second ResponseInfo
	a, err := c.CreatePayment(ctx, payment("4242424242424242", "order-7"), WithIdempotencyKey("order-7"), WithResponseInfo(&first))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.CreatePayment(ctx, payment("4242424242424242", "order-7"), WithIdempotencyKey("order-7"), WithResponseInfo(&second))
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != b.ID || first.Replayed || !second.Replayed || second.IdempotencyKey != "order-7" {
		t.Errorf("replay: %s %+v, then %s %+v", a.ID, first, b.ID, second)
	}

	other := payment("4242424242424242", "order-7")
	other.Amount = "11.00"
	var info ResponseInfo
	_, err = c.CreatePayment(ctx, other, WithIdempotencyKey("order-7"), WithResponseInfo(&info))
	e, ok := errors.AsType[*Error](err)
	if !ok || e.StatusCode != http.StatusConflict || e.Name != NameDuplicateRequest || e.IdempotencyKey != "order-7" || info.Attempts != 1 {
		t.Errorf("same key, other body: %v after %d attempts", err, info.Attempts)
	}

	// Calls without a key get one each: two calls, two payments.
	var k1, k2 ResponseInfo
	p1, err1 := c.CreatePayment(ctx, payment("4242424242424242", "order-8"), WithResponseInfo(&k1))
	p2, err2 := c.CreatePayment(ctx, payment("4242424242424242", "order-8"), WithResponseInfo(&k2))
	if err1 != nil || err2 != nil || p1.ID == p2.ID || k1.IdempotencyKey == k2.IdempotencyKey {
		t.Errorf("two calls: %v %v, ids %s %s, keys %s %s", err1, err2, p1.ID, p2.ID, k1.IdempotencyKey, k2.IdempotencyKey)
	}
}

// TestGatewayErrors: a decline, a provider failure and a validation error
// come back typed, with the fields that say what to do.
func TestGatewayErrors(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	c := g.client(t)
	ctx := t.Context()

	var info ResponseInfo
	_, err := c.CreatePayment(ctx, payment("4000000000009995", "order-d"), WithResponseInfo(&info))
	e, ok := errors.AsType[*Error](err)
	if !ok {
		t.Fatalf("decline: %v (%T), want *Error", err, err)
	}
	if e.StatusCode != http.StatusBadRequest || e.Name != NameCardDeclined || e.DeclineCode != DeclineInsufficientFunds || e.TransactionID == "" || e.RequestID == "" || info.Attempts != 1 {
		t.Errorf("decline: %+v after %d attempts", e, info.Attempts)
	}
	if strings.Contains(err.Error(), "4000000000009995") {
		t.Errorf("the error shows the card number: %v", err)
	}
	p, err := c.GetPayment(ctx, e.TransactionID)
	if err != nil || p.Status != PaymentFailed || p.ErrorCode != NameCardDeclined || p.DeclineCode != DeclineInsufficientFunds {
		t.Errorf("the declined payment: %+v, %v", p, err)
	}

	_, err = c.CreatePayment(ctx, payment("4000000000000119", "order-p"))
	if e, ok := errors.AsType[*Error](err); !ok || e.StatusCode != http.StatusBadGateway || e.Name != NameProviderError || e.TransactionID == "" {
		t.Errorf("provider error: %v", err)
	}

	bad := payment("4242424242424241", "order-v") // fails the Luhn check
	_, err = c.CreatePayment(ctx, bad)
	if e, ok := errors.AsType[*Error](err); !ok || e.Name != NameInvalidRequest || e.Param != "card.number" {
		t.Errorf("invalid card number: %v", err)
	} else if strings.Contains(e.Error(), "4242424242424241") {
		t.Errorf("the error shows the card number: %v", e)
	}
}

// TestGatewayDroppedAnswer puts a proxy in front of the gateway that lets
// the first payment through and then loses its answer, by closing the
// connection or by answering its own 502 page as nginx does when the node
// dies holding the request: the client retries with the same key, gets the
// stored answer, and exactly one payment exists.
func TestGatewayDroppedAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		lose func(w http.ResponseWriter)
	}{
		{"ConnectionClosed", func(w http.ResponseWriter) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(err)
			}
			conn.Close()
		}},
		{"ProxyBadGatewayPage", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprint(w, "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			testDroppedAnswer(t, tt.lose)
		})
	}
}

func testDroppedAnswer(t *testing.T, lose func(w http.ResponseWriter)) {
	g := startGateway(t)
	target, err := url.Parse(g.url)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var keys []string
	var dropped string // the body of the dropped answer
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		out, err := http.NewRequestWithContext(r.Context(), r.Method, target.String()+r.URL.RequestURI(), strings.NewReader(string(body)))
		if err != nil {
			panic(err)
		}
		out.Header = r.Header.Clone()
		res, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		answer, _ := io.ReadAll(res.Body)
		res.Body.Close()
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		drop := len(keys) == 1
		if drop {
			dropped = string(answer)
		}
		mu.Unlock()
		if drop {
			lose(w) // the gateway answered; the client never hears it
			return
		}
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		_, _ = w.Write(answer)
	}))
	defer proxy.Close()

	var waits []time.Duration
	c, err := New(proxy.URL, g.merchant.TestSecretKey)
	if err != nil {
		t.Fatal(err)
	}
	c.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return sleepContext(ctx, d)
	}
	var info ResponseInfo
	res, err := c.CreatePayment(t.Context(), payment("4242424242424242", "order-drop"), WithResponseInfo(&info))
	if err != nil {
		t.Fatalf("CreatePayment through the proxy: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 2 || keys[0] != keys[1] || keys[0] != info.IdempotencyKey {
		t.Errorf("the proxy saw keys %q, want the call's key %q twice", keys, info.IdempotencyKey)
	}
	if info.Attempts != 2 || !info.Replayed || len(waits) != 1 {
		t.Errorf("answer %+v after waits %v: want the second attempt, replayed", info, waits)
	}
	if !strings.Contains(dropped, res.ID) {
		t.Errorf("the dropped answer %s is not of payment %s", dropped, res.ID)
	}

	st, err := store.Open(t.Context(), g.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	payments, err := st.ListPayments(t.Context(), paygate.PaymentQuery{MerchantID: g.merchant.MerchantID, Mode: paygate.ModeTest, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(payments) != 1 || payments[0].ID != res.ID {
		t.Errorf("the database holds %d payments, want exactly 1 (%s)", len(payments), res.ID)
	}
}

// TestGatewayRateLimited spends a key's budget, then checks that a call
// answered 429 waits the Retry-After the gateway sent and then succeeds.
func TestGatewayRateLimited(t *testing.T) {
	t.Parallel()
	// 30 a minute: a spent budget frees a request every 2 s.
	g := startGateway(t, "--rate-limit-test", "30")
	ctx := t.Context()
	res, err := g.client(t).CreatePayment(ctx, payment("4242424242424242", "order-rl"))
	if err != nil {
		t.Fatal(err)
	}
	noRetry := g.client(t, WithMaxRetries(0))
	for i := 0; ; i++ {
		_, err := noRetry.GetPayment(ctx, res.ID)
		if ErrorName(err) == NameRateLimited {
			break
		}
		if err != nil || i > 60 {
			t.Fatalf("request %d of a budget of 30: %v", i, err)
		}
	}

	rec := &recorder{next: http.DefaultTransport}
	c := g.client(t, WithHTTPClient(&http.Client{Transport: rec}), WithBackoff(func(int, time.Duration) time.Duration { return 10 * time.Millisecond }))
	var waits []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return sleepContext(ctx, d)
	}
	var info ResponseInfo
	p, err := c.GetPayment(ctx, res.ID, WithResponseInfo(&info))
	if err != nil || p.ID != res.ID {
		t.Fatalf("GetPayment after 429: %+v, %v", p, err)
	}
	retryAfter := rec.retryAfter()
	if info.Attempts != 2 || len(waits) != 1 || retryAfter < time.Second {
		t.Fatalf("attempts %d, waits %v, Retry-After %s: want one 429 with Retry-After, one wait, and a second attempt", info.Attempts, waits, retryAfter)
	}
	if waits[0] != retryAfter {
		t.Errorf("waited %s before the retry, want the gateway's Retry-After %s", waits[0], retryAfter)
	}
}

// recorder is a transport that notes the Retry-After of the first 429 it
// carries.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	ra   string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := r.next.RoundTrip(req)
	if err == nil && res.StatusCode == http.StatusTooManyRequests {
		r.mu.Lock()
		if r.ra == "" {
			r.ra = res.Header.Get("Retry-After")
		}
		r.mu.Unlock()
	}
	return res, err
}

func (r *recorder) retryAfter() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return retryAfterOf(r.ra, time.Now())
}

// TestGatewayInFlight sends one payment twice at once with one key: the
// sandbox keeps the first running for 2 s (card 0705, an outcome the
// provider does not tell in time), the second is answered 409 with
// Retry-After until the first is done, retries, and gets the first's
// answer. Both calls name one payment.
func TestGatewayInFlight(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	c := g.client(t, WithMaxRetries(10))
	ctx := t.Context()
	type outcome struct {
		res  *PaymentResult
		info ResponseInfo
		err  error
	}
	var out [2]outcome
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() {
			if i == 1 {
				time.Sleep(300 * time.Millisecond) // let the first one in
			}
			out[i].res, out[i].err = c.CreatePayment(ctx, payment("4000000000000705", "order-if"), WithIdempotencyKey("order-if"), WithResponseInfo(&out[i].info))
		})
	}
	wg.Wait()
	for i, o := range out {
		if o.err != nil {
			t.Fatalf("call %d: %v", i, o.err)
		}
	}
	if out[0].res.ID != out[1].res.ID || out[0].res.Status != PaymentCreated || out[0].info.StatusCode != http.StatusAccepted {
		t.Errorf("two calls with one key: %+v and %+v", out[0].res, out[1].res)
	}
	// One of them ran; the other met it in flight, retried and got its answer.
	if out[0].info.Replayed == out[1].info.Replayed || max(out[0].info.Attempts, out[1].info.Attempts) < 2 {
		t.Errorf("answers %+v and %+v: want one replayed after a retry", out[0].info, out[1].info)
	}
}

// TestGatewayWebhook receives a real delivery and verifies it with the
// endpoint's secret; a changed body or another secret fails.
func TestGatewayWebhook(t *testing.T) {
	t.Parallel()
	type delivery struct {
		header http.Header
		body   []byte
	}
	got := make(chan delivery, 16)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- delivery{r.Header.Clone(), body}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	g := startGateway(t)
	var endpoint struct{ Secret string }
	g.paygate(t, &endpoint, "webhook", "set", "--merchant", g.merchant.MerchantID, "--mode", "test", "--url", receiver.URL, "--json")

	res, err := g.client(t).CreatePayment(t.Context(), payment("4242424242424242", "order-wh"))
	if err != nil {
		t.Fatal(err)
	}
	var d delivery
	select {
	case d = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("no webhook within 30s")
	}
	ev, err := VerifyWebhook(endpoint.Secret, d.header, d.body)
	if err != nil {
		t.Fatalf("VerifyWebhook: %v", err)
	}
	if ev.Type != EventPaymentCaptured || ev.ID != d.header.Get("webhook-id") || ev.Mode != "test" || ev.Data.TransactionID != res.ID ||
		ev.Data.Amount != 1050 || ev.Data.Currency != "EUR" || ev.Data.Status != string(PaymentCaptured) || ev.Timestamp.IsZero() {
		t.Errorf("event: %+v", ev)
	}

	changed := []byte(strings.Replace(string(d.body), "1050", "9050", 1))
	if _, err := VerifyWebhook(endpoint.Secret, d.header, changed); !errors.Is(err, webhook.ErrNoMatchingSignature) {
		t.Errorf("a changed body: %v", err)
	}
	if _, err := VerifyWebhook("whsec_"+"c2VjcmV0LW9mLWFub3RoZXItZW5kcG9pbnQ=", d.header, d.body); !errors.Is(err, webhook.ErrNoMatchingSignature) {
		t.Errorf("another secret: %v", err)
	}
}

// TestGatewayTokenPayment tokenizes a card with the public key
// (CreateToken) and pays with the token once; a second payment with it is
// INVALID_REQUEST param token, and the secret key does not tokenize.
func TestGatewayTokenPayment(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	c := g.client(t)
	ctx := t.Context()
	card := &Card{Number: "4242424242424242", ExpiryMonth: "12", ExpiryYear: "30", CVV: "123", HolderName: "Ada"}
	tok, err := c.CreateToken(ctx, g.merchant.TestPublicKey, card)
	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	if !strings.HasPrefix(tok.ID, "tok_") || tok.Card.Brand != "visa" || tok.Card.Last4 != "4242" || tok.Used || tok.ExpiresAt.IsZero() {
		t.Fatalf("token %+v", tok)
	}
	pay := func() (*PaymentResult, error) {
		p := payment("", "order-token-"+fmt.Sprint(time.Now().UnixNano()))
		p.Card, p.PaymentMethod, p.Token = nil, MethodToken, tok.ID
		return c.CreatePayment(ctx, p)
	}
	res, err := pay()
	if err != nil || res.Status != PaymentCaptured {
		t.Fatalf("payment with the token: %+v %v", res, err)
	}
	_, err = pay()
	var ae *Error
	if !errors.As(err, &ae) || ae.Name != "INVALID_REQUEST" || ae.Param != "token" {
		t.Fatalf("second payment with the token: %v", err)
	}
	if _, err := c.CreateToken(ctx, g.merchant.TestSecretKey, card); !errors.As(err, &ae) || ae.Name != "UNAUTHORIZED" {
		t.Fatalf("CreateToken with the secret key: %v", err)
	}
}
