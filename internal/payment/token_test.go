package payment_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/vault"
)

// tokenInput is a payment with the token.
func tokenInput(tokenID string) payment.CreateInput {
	return payment.CreateInput{
		Amount: paygate.Money{Amount: 1000, Currency: "EUR"}, AmountText: "10.00", Method: paygate.MethodToken,
		CustomerExternalID: "c1", TokenID: tokenID,
	}
}

// wantTokenRefused fails unless err is INVALID_REQUEST param token.
func wantTokenRefused(t *testing.T, what string, err error) {
	t.Helper()
	var pe *paygate.Error
	if !errors.As(err, &pe) || pe.Code != paygate.CodeInvalidRequest || pe.Param != "token" {
		t.Fatalf("%s: %v, want INVALID_REQUEST param token", what, err)
	}
}

// TestTokenPaysOnceWithItsCVV: the provider gets the tokenized number and
// CVV; the payment is a card payment; the token's sealed card is erased by
// the payment's insert, and a second payment with it is refused without a
// provider call.
func TestTokenPaysOnceWithItsCVV(t *testing.T) {
	t.Parallel()
	f := newVaultFixture(t, false)
	ctx := context.Background()
	tok, token, err := f.svc.Tokenize(ctx, f.public, testCard, "203.0.113.9")
	if err != nil {
		t.Fatal(err)
	}
	if !payment.ValidTokenID(token) || !strings.HasPrefix(token, tok.ID) || tok.Brand != "visa" || tok.Last4 != "4242" || tok.Used() ||
		!tok.ExpiresAt.Equal(f.clock.Now().Add(15*time.Minute)) {
		t.Fatalf("token %+v", tok)
	}
	res, err := f.svc.Create(ctx, f.request(t), tokenInput(token))
	ans := payment.StoredAnswer(res)
	if err != nil || ans.Status != 201 || data(t, ans)["status"] != "captured" {
		t.Fatalf("create: %v %d %s", err, ans.Status, ans.Body)
	}
	f.prov.mu.Lock()
	got := f.prov.last
	f.prov.mu.Unlock()
	if got.Card.Number.Reveal() != testCard.Number.Reveal() || got.Card.CVV.Reveal() != "123" || got.Card.ExpYear != 2031 || got.Card.HolderName != "Ada" {
		t.Fatalf("the provider got %+v", got.Card)
	}
	payID := data(t, ans)["id"].(string)
	p, err := f.st.PaymentByID(ctx, "m1", paygate.ModeTest, payID)
	if err != nil || p.Method != paygate.MethodCard || p.Card.Last4 != "4242" {
		t.Fatalf("payment %+v: %v", p, err)
	}
	stored, err := f.st.CardToken(ctx, "m1", paygate.ModeTest, tok.ID)
	if err != nil || stored.Sealed != nil || stored.KeyID != "" || stored.PaymentID != payID || !stored.Used() {
		t.Fatalf("token after its payment %+v: %v", stored, err)
	}
	_, err = f.svc.Create(ctx, f.request(t), tokenInput(token))
	wantTokenRefused(t, "second payment", err)
	if n := f.prov.calls.Load(); n != 1 {
		t.Fatalf("the provider was called %d times", n)
	}
	if logs := f.logs.String(); strings.Contains(logs, "4242424242424242") || strings.Contains(logs, `"123"`) {
		t.Fatalf("the logs show card data:\n%s", logs)
	}
}

// TestTokenRefusals: unknown, another mode's, and expired tokens are
// refused with param token, and no provider is called; the sweeper then
// deletes the expired token.
func TestTokenRefusals(t *testing.T) {
	t.Parallel()
	f := newVaultFixture(t, false)
	ctx := context.Background()
	tok, token, err := f.svc.Tokenize(ctx, f.public, testCard, "203.0.113.9")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Create(ctx, f.request(t), tokenInput("tok_0000000000000000000000000000000000000000000000000000000000000000"))
	wantTokenRefused(t, "unknown token", err)
	live := f.request(t)
	live.Mode = paygate.ModeLive
	_, err = f.svc.Create(ctx, live, tokenInput(token))
	wantTokenRefused(t, "a test token in live mode", err)
	other := f.request(t)
	other.MerchantID = "m2"
	_, err = f.svc.Create(ctx, other, tokenInput(token))
	wantTokenRefused(t, "another merchant's token", err)

	f.clock.Add(15 * time.Minute) // the token's expiry
	_, err = f.svc.Create(ctx, f.request(t), tokenInput(token))
	wantTokenRefused(t, "expired token", err)
	if n := f.prov.calls.Load(); n != 0 {
		t.Fatalf("the provider was called %d times", n)
	}
	sweeper := f.svc.NewTokenSweeper(time.Hour)
	if n := sweeper.RunOnce(ctx); n != 1 {
		t.Fatalf("the sweeper deleted %d tokens, want 1", n)
	}
	if _, err := f.st.CardToken(ctx, "m1", paygate.ModeTest, tok.ID); !paygate.IsNotFound(err) {
		t.Fatalf("the expired token is still there: %v", err)
	}
}

// TestTokenJustBeforeExpiryPays: a token pays up to its last instant.
func TestTokenJustBeforeExpiryPays(t *testing.T) {
	t.Parallel()
	f := newVaultFixture(t, false)
	ctx := context.Background()
	_, token, err := f.svc.Tokenize(ctx, f.public, testCard, "203.0.113.9")
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Add(15*time.Minute - time.Millisecond)
	if _, err := f.svc.Create(ctx, f.request(t), tokenInput(token)); err != nil {
		t.Fatalf("a token 1 ms before its expiry: %v", err)
	}
}

// TestTokenRaceChargesOnce: requests racing with one token make one
// payment and one provider call; the others are refused with param token
// and store nothing.
func TestTokenRaceChargesOnce(t *testing.T) {
	t.Parallel()
	f := newVaultFixture(t, false)
	ctx := context.Background()
	_, token, err := f.svc.Tokenize(ctx, f.public, testCard, "203.0.113.9")
	if err != nil {
		t.Fatal(err)
	}
	const racers = 6
	reqs := make([]payment.Request, racers)
	for i := range reqs {
		reqs[i] = f.request(t)
	}
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = f.svc.Create(ctx, reqs[i], tokenInput(token))
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		wantTokenRefused(t, "a racing payment", err)
	}
	if ok != 1 || f.prov.calls.Load() != 1 {
		t.Fatalf("%d payments succeeded and the provider was called %d times; want 1 and 1", ok, f.prov.calls.Load())
	}
}

// TestTokenPaymentGuardedByTokenizingAddress: two tokens made from two
// shoppers' addresses and paid from one merchant server's address are
// counted by the card-testing guard under the shoppers' addresses, and a
// defaulted billing.ipAddress becomes the shopper's; an explicit one still
// wins for the guard.
func TestTokenPaymentGuardedByTokenizingAddress(t *testing.T) {
	t.Parallel()
	f := newVaultFixture(t, false)
	ctx := context.Background()
	g := &fakeGuard{}
	table, err := provider.NewTable(map[paygate.Mode]provider.Routes{paygate.ModeTest: {Default: []paygate.Provider{f.prov}}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := vault.New(bytes.Repeat([]byte{7}, vault.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	svc := payment.New(payment.Config{Store: f.st, Router: table, Encoder: httpapi.Encoder{}, Clock: f.clock, Vault: v, Guard: g})
	const server = "192.0.2.200"
	pay := func(addr string, billing *paygate.Billing, defaulted bool) {
		t.Helper()
		_, token, err := svc.Tokenize(ctx, f.public, testCard, addr)
		if err != nil {
			t.Fatal(err)
		}
		in := tokenInput(token)
		in.ClientAddr, in.Billing, in.BillingIPDefaulted = server, billing, defaulted
		if _, err := svc.Create(ctx, f.request(t), in); err != nil {
			t.Fatal(err)
		}
	}
	pay("203.0.113.1", nil, false)
	pay("203.0.113.2", &paygate.Billing{Country: "FR", IPAddress: server}, true)
	pay("203.0.113.3", &paygate.Billing{Country: "FR", IPAddress: "198.51.100.9"}, false)
	g.mu.Lock()
	defer g.mu.Unlock()
	var payments []string
	for _, a := range g.checked {
		if a.ID != "" { // a payment's attempt; a tokenization has no id
			payments = append(payments, a.Addr)
		}
	}
	if want := []string{"203.0.113.1", "203.0.113.2", "198.51.100.9"}; strings.Join(payments, " ") != strings.Join(want, " ") {
		t.Fatalf("the guard counted the token payments by %v, want %v", payments, want)
	}
	f.prov.mu.Lock()
	last := f.prov.last
	f.prov.mu.Unlock()
	if last.Billing == nil || last.Billing.IPAddress != "198.51.100.9" {
		t.Fatalf("explicit billing.ipAddress: the provider got %+v", last.Billing)
	}
}

// paymentReads counts PaymentByID.
type paymentReads struct {
	paygate.Store
	n atomic.Int32
}

func (s *paymentReads) PaymentByID(ctx context.Context, merchantID string, mode paygate.Mode, id string) (paygate.Payment, error) {
	s.n.Add(1)
	return s.Store.PaymentByID(ctx, merchantID, mode, id)
}

// TestTokenPaymentReadsNoPayment: a token payment reads no payment back
// after its insert (decisions §22); with saveCard the card is stored for
// the payment's customer all the same.
func TestTokenPaymentReadsNoPayment(t *testing.T) {
	t.Parallel()
	f := newVaultFixture(t, false)
	ctx := context.Background()
	st := &paymentReads{Store: f.st}
	table, err := provider.NewTable(map[paygate.Mode]provider.Routes{paygate.ModeTest: {Default: []paygate.Provider{f.prov}}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := vault.New(bytes.Repeat([]byte{7}, vault.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	svc := payment.New(payment.Config{Store: st, Router: table, Encoder: httpapi.Encoder{}, Clock: f.clock, Vault: v})
	_, token, err := svc.Tokenize(ctx, f.public, testCard, "203.0.113.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(ctx, f.request(t), tokenInput(token)); err != nil {
		t.Fatal(err)
	}
	if n := st.n.Load(); n != 0 {
		t.Fatalf("a token payment read %d payments", n)
	}
	_, token, err = svc.Tokenize(ctx, f.public, testCard, "203.0.113.1")
	if err != nil {
		t.Fatal(err)
	}
	in := tokenInput(token)
	in.SaveCard = true
	res, err := svc.Create(ctx, f.request(t), in)
	if err != nil || res.Payment == nil || res.Payment.StoredCardID == "" {
		t.Fatalf("saveCard with a token: %+v %v", res.Payment, err)
	}
	p, err := f.st.PaymentByID(ctx, "m1", paygate.ModeTest, res.Payment.ID)
	if err != nil {
		t.Fatal(err)
	}
	cards, err := f.st.StoredCards(ctx, paygate.StoredCardQuery{MerchantID: "m1", Mode: paygate.ModeTest, CustomerID: p.CustomerID})
	if err != nil || len(cards) != 1 || cards[0].ID != res.Payment.StoredCardID {
		t.Fatalf("stored cards of the customer %+v: %v", cards, err)
	}
}

// TestTokenTwinRequestAnsweredAsTakenKey: a request whose key was read
// ahead as free (before its twin, the same request with the same
// Idempotency-Key, committed) finds its token used by that twin: it is
// answered as decisions §5 says, the replay once the twin completed, 409
// while it is in flight, never 400 token. The interleaving is made by
// hand: the read-ahead is given as empty after the twin's commit.
func TestTokenTwinRequestAnsweredAsTakenKey(t *testing.T) {
	t.Parallel()
	f := newVaultFixture(t, false)
	ctx := context.Background()
	body := []byte(`{"paymentMethod":"token"}`)
	run := func(key, tokenID string) (payment.Outcome, error) {
		return f.svc.Run(ctx, payment.IdempotentRequest{
			MerchantID: "m1", Mode: paygate.ModeTest, APIKeyID: f.keyID, Key: key,
			Method: "POST", Path: "/v1/payments", Body: func() ([]byte, error) { return body, nil },
			Ahead: &payment.ReadAhead{}, // read before the twin committed: no record
		}, func([]byte) (payment.Operation, error) {
			return func(ctx context.Context, req payment.Request) (payment.Result, error) {
				return f.svc.Create(ctx, req, tokenInput(tokenID))
			}, nil
		})
	}
	tok, token, err := f.svc.Tokenize(ctx, f.public, testCard, "203.0.113.1")
	if err != nil {
		t.Fatal(err)
	}
	first, err := run("twin", token)
	if err != nil || first.Answer.Status != 201 {
		t.Fatalf("first: %+v %v", first, err)
	}
	second, err := run("twin", token)
	if err != nil || !second.Replayed || second.Answer.Status != 201 || !bytes.Equal(second.Answer.Body, first.Answer.Body) {
		t.Fatalf("the twin after completion: %+v %v, want the replay", second, err)
	}

	// In flight: the twin reserved the key and used the token, and has
	// not answered yet.
	tok, token, err = f.svc.Tokenize(ctx, f.public, testCard, "203.0.113.1")
	if err != nil {
		t.Fatal(err)
	}
	fp, err := f.svc.RequestFingerprint("POST", "/v1/payments", body)
	if err != nil {
		t.Fatal(err)
	}
	if _, reserved, err := f.st.ReserveIdempotency(ctx, paygate.IdempotencyReservation{
		MerchantID: "m1", Mode: paygate.ModeTest, Key: "twin-2", Fingerprint: fp, APIKeyID: f.keyID, Now: f.clock.Now(),
	}); err != nil || !reserved {
		t.Fatal(reserved, err)
	}
	use := paygate.TokenUse{ID: tok.ID, MerchantID: "m1", Mode: paygate.ModeTest, PaymentID: "p-twin", At: f.clock.Now()}
	if err := f.st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{use}}); err != nil {
		t.Fatal(err)
	}
	_, err = run("twin-2", token)
	var pe *paygate.Error
	if !errors.As(err, &pe) || pe.Code != paygate.CodeDuplicateRequest || !errors.Is(err, payment.ErrInFlight) {
		t.Fatalf("the twin in flight: %v, want DUPLICATE_REQUEST in flight", err)
	}

	// Another key with a used token is still 400 token, and its key is
	// free again.
	_, err = run("other", token)
	wantTokenRefused(t, "another key", err)
	if _, reserved, err := f.st.ReserveIdempotency(ctx, paygate.IdempotencyReservation{
		MerchantID: "m1", Mode: paygate.ModeTest, Key: "other", Fingerprint: fp, APIKeyID: f.keyID, Now: f.clock.Now(),
	}); err != nil || !reserved {
		t.Fatalf("the refused request's key was not released: %v %v", reserved, err)
	}
}

// TestTokenCryptoShredded: the token's secret part is stored nowhere, and
// its card opens only with it: the stored row plus the master key do not
// open the sealed card (what a copy of the database keeps after the
// erase), and a token with a wrong secret is refused as an unknown token,
// its card left unused.
func TestTokenCryptoShredded(t *testing.T) {
	t.Parallel()
	f := newVaultFixture(t, false)
	ctx := context.Background()
	tok, token, err := f.svc.Tokenize(ctx, f.public, testCard, "203.0.113.9")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := f.st.CardToken(ctx, "m1", paygate.ModeTest, tok.ID)
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimPrefix(token, tok.ID)
	if len(secret) != 32 || stored.ID != tok.ID || strings.Contains(string(stored.Sealed), secret) {
		t.Fatalf("token %q, stored id %q", token, stored.ID)
	}
	v, err := vault.New(bytes.Repeat([]byte{7}, vault.KeySize)) // the fixture's master key
	if err != nil {
		t.Fatal(err)
	}
	ctxSeal := vault.SecretContext{Purpose: "card-token:" + tok.ID, MerchantID: "m1", Mode: paygate.ModeTest}
	if pt, err := v.OpenSecret(ctxSeal, stored.Sealed); !errors.Is(err, vault.ErrTampered) || pt != nil {
		t.Fatalf("the master key alone opened the token's card: %v", err)
	}
	if pt, err := v.OpenSecretKeyed(ctxSeal, make([]byte, 16), stored.Sealed); !errors.Is(err, vault.ErrTampered) || pt != nil {
		t.Fatalf("a wrong secret opened the token's card: %v", err)
	}
	wrong := []byte(token)
	if wrong[len(wrong)-1] == '0' {
		wrong[len(wrong)-1] = '1'
	} else {
		wrong[len(wrong)-1] = '0'
	}
	_, err = f.svc.Create(ctx, f.request(t), tokenInput(string(wrong)))
	wantTokenRefused(t, "a wrong secret", err)
	_, err = f.svc.Create(ctx, f.request(t), tokenInput(tok.ID)) // the id alone
	wantTokenRefused(t, "the id without its secret", err)
	if n := f.prov.calls.Load(); n != 0 {
		t.Fatalf("the provider was called %d times", n)
	}
	if _, err := f.svc.Create(ctx, f.request(t), tokenInput(token)); err != nil {
		t.Fatalf("the right token after refusals: %v", err)
	}
}
