package payment_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/store/sqlite"
	"github.com/paygate/paygate/internal/testenv"
	"github.com/paygate/paygate/internal/vault"
)

// recordingProvider captures what the provider is given.
type recordingProvider struct {
	fakeProvider
	mu   sync.Mutex
	last paygate.ChargeRequest
}

func (p *recordingProvider) Charge(ctx context.Context, req paygate.ChargeRequest) (paygate.ChargeResult, error) {
	p.mu.Lock()
	p.last = req
	p.mu.Unlock()
	return p.fakeProvider.Charge(ctx, req)
}

type vaultFixture struct {
	st    *sqlite.Store
	svc   *payment.Service
	prov  *recordingProvider
	clock *testenv.Clock
	logs  *bytes.Buffer
	keyID string
	// public is the merchant's test public key, which tokenizes.
	public paygate.APIKey
	n      int
}

// newVaultFixture is a service on SQLite with one provider; failSave makes
// every save of a stored card fail in the store.
func newVaultFixture(t *testing.T, failSave bool) *vaultFixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "v.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	prov := &recordingProvider{fakeProvider: fakeProvider{id: "a", res: captured}}
	table, err := provider.NewTable(map[paygate.Mode]provider.Routes{paygate.ModeTest: {Default: []paygate.Provider{prov}}})
	if err != nil {
		t.Fatal(err)
	}
	clock := testenv.NewClock(time.Date(2030, 1, 15, 10, 0, 0, 0, time.UTC))
	_, key, err := auth.NewKey("key-1", "m1", paygate.ModeTest, paygate.KeySecret, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, public, err := auth.NewKey("pk-1", "m1", paygate.ModeTest, paygate.KeyPublic, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.Merchant{ID: "m1", Name: "M", CreatedAt: clock.Now()}, key, public}}); err != nil {
		t.Fatal(err)
	}
	v, err := vault.New(bytes.Repeat([]byte{7}, vault.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	var svcStore paygate.Store = st
	if failSave {
		svcStore = failingSaveStore{st}
	}
	logs := &bytes.Buffer{}
	svc := payment.New(payment.Config{
		Store: svcStore, Router: table, Encoder: httpapi.Encoder{}, Clock: clock,
		Logger: slog.New(slog.NewJSONHandler(logs, nil)), Vault: v,
	})
	return &vaultFixture{st: st, svc: svc, prov: prov, clock: clock, logs: logs, keyID: key.ID, public: public}
}

// request reserves a fresh idempotency key, as httpapi does.
func (f *vaultFixture) request(t *testing.T) payment.Request {
	t.Helper()
	f.n++
	req := payment.Request{MerchantID: "m1", Mode: paygate.ModeTest, IdempotencyKey: "ik-" + string(rune('a'+f.n))}
	_, reserved, err := f.st.ReserveIdempotency(context.Background(), paygate.IdempotencyReservation{
		MerchantID: "m1", Mode: paygate.ModeTest, Key: req.IdempotencyKey, Fingerprint: []byte("fp"), APIKeyID: f.keyID, Now: f.clock.Now(),
	})
	if err != nil || !reserved {
		t.Fatalf("reserve: %v", err)
	}
	return req
}

func (f *vaultFixture) customer(t *testing.T, ext string) paygate.Customer {
	t.Helper()
	c, err := f.st.UpsertCustomer(context.Background(), paygate.CustomerUpsert{NewID: "cust-" + ext, MerchantID: "m1", Mode: paygate.ModeTest, ExternalID: ext, Now: f.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// data decodes the data object of an answer.
func data(t *testing.T, a payment.Answer) map[string]any {
	t.Helper()
	var env struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(a.Body, &env); err != nil {
		t.Fatal(err)
	}
	return env.Data
}

var testCard = paygate.Card{Number: "4242424242424242", ExpMonth: 12, ExpYear: 2031, CVV: "123", HolderName: "Ada"}

func storedInput(ext, cardID string) payment.CreateInput {
	return payment.CreateInput{
		Amount: paygate.Money{Amount: 1000, Currency: "EUR"}, AmountText: "10.00", Method: paygate.MethodStoredCard,
		CustomerExternalID: ext, StoredCardID: cardID,
	}
}

func TestStoredCardReachesTheProviderWithoutCVV(t *testing.T) {
	t.Parallel()
	f := newVaultFixture(t, false)
	ctx := context.Background()
	cust := f.customer(t, "c1")
	res, err := f.svc.SaveCard(ctx, f.request(t), cust.ID, testCard)
	ans := payment.StoredAnswer(res)
	if err != nil || ans.Status != 201 {
		t.Fatalf("save: %v %d", err, ans.Status)
	}
	cardID := data(t, ans)["id"].(string)
	res, err = f.svc.Create(ctx, f.request(t), storedInput("c1", cardID))
	ans = payment.StoredAnswer(res)
	if err != nil || ans.Status != 201 || data(t, ans)["storedCardId"] != cardID {
		t.Fatalf("create: %v %d %s", err, ans.Status, ans.Body)
	}
	f.prov.mu.Lock()
	got := f.prov.last
	f.prov.mu.Unlock()
	if got.Card.Number.Reveal() != testCard.Number.Reveal() || got.Card.CVV != "" || got.Card.ExpYear != 2031 || got.Card.HolderName != "Ada" {
		t.Fatalf("the provider got %+v", got.Card)
	}
	p, err := f.st.PaymentByID(ctx, "m1", paygate.ModeTest, data(t, ans)["id"].(string))
	if err != nil || p.Method != paygate.MethodStoredCard || p.StoredCardID != cardID || p.Card.Last4 != "4242" || p.Card.Brand != "visa" {
		t.Fatalf("payment %+v: %v", p, err)
	}
	if strings.Contains(f.logs.String(), "4242424242424242") {
		t.Fatal("the logs show the number")
	}
}

func TestStoredCardExpired(t *testing.T) {
	t.Parallel()
	f := newVaultFixture(t, false)
	ctx := context.Background()
	cust := f.customer(t, "c1")
	res, err := f.svc.SaveCard(ctx, f.request(t), cust.ID, testCard)
	ans := payment.StoredAnswer(res)
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Set(time.Date(2032, 1, 1, 0, 0, 0, 0, time.UTC)) // the first instant after 12/2031
	_, err = f.svc.Create(ctx, f.request(t), storedInput("c1", data(t, ans)["id"].(string)))
	var pe *paygate.Error
	if !errors.As(err, &pe) || pe.Code != paygate.CodeInvalidRequest || pe.Param != "storedCardId" || !strings.Contains(pe.Message, "expired") {
		t.Fatalf("expired stored card: %v", err)
	}
	if f.prov.calls.Load() != 0 {
		t.Fatal("the provider was called")
	}
}

// TestSaveCardFailureKeepsThePayment: a card that cannot be stored after a
// successful charge is logged, and the payment is answered all the same
// (an error would free the idempotency key for a second charge).
func TestSaveCardFailureKeepsThePayment(t *testing.T) {
	t.Parallel()
	f := newVaultFixture(t, true)
	in := payment.CreateInput{
		Amount: paygate.Money{Amount: 1000, Currency: "EUR"}, AmountText: "10.00", Method: paygate.MethodCard,
		CustomerExternalID: "c1", Card: &testCard, SaveCard: true,
	}
	res, err := f.svc.Create(context.Background(), f.request(t), in)
	ans := payment.StoredAnswer(res)
	if err != nil || ans.Status != 201 || data(t, ans)["storedCardId"] != nil || data(t, ans)["status"] != "captured" {
		t.Fatalf("create: %v %d %s", err, ans.Status, ans.Body)
	}
	if !strings.Contains(f.logs.String(), `"msg":"card not stored"`) || strings.Contains(f.logs.String(), "4242424242424242") {
		t.Fatalf("logs:\n%s", f.logs.String())
	}
	// A failing store makes the stored-card use case an internal error.
	if _, err := f.svc.SaveCard(context.Background(), f.request(t), f.customer(t, "c1").ID, testCard); err == nil || paygate.ErrorCode(err) != paygate.CodeInternal {
		t.Fatalf("save with a failing store: %v", err)
	}
}

// failingSaveStore fails every save of a stored card.
type failingSaveStore struct{ paygate.Store }

func (f failingSaveStore) Commit(ctx context.Context, u paygate.Unit) error {
	for _, op := range u.Ops {
		if _, ok := op.(paygate.StoredCard); ok {
			return errors.New("disk on fire")
		}
	}
	return f.Store.Commit(ctx, u)
}
