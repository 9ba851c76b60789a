package payment_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"net/url"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/provider/sandbox"
	"github.com/paygate/paygate/internal/testenv"
)

// flakyThreeDS is a sandbox whose 3-D Secure completion is unavailable
// while down is set.
type flakyThreeDS struct {
	*sandbox.Provider
	down  atomic.Bool
	calls atomic.Int32
}

func (f *flakyThreeDS) CompleteThreeDS(ctx context.Context, req paygate.ThreeDSCompletion) (paygate.ThreeDSResult, error) {
	f.calls.Add(1)
	if f.down.Load() {
		return paygate.ThreeDSResult{}, &paygate.ProviderError{Kind: paygate.ProviderUnavailable, Provider: f.ID(), Message: "down"}
	}
	return f.Provider.CompleteThreeDS(ctx, req)
}

const testTTL = 30 * time.Minute

// threeDSFixture is a payment service on one engine with the sandbox, a
// movable clock and one merchant.
type threeDSFixture struct {
	st    paygate.Store
	svc   *payment.Service
	clock *testenv.Clock
	prov  *flakyThreeDS
	keyID string
	n     atomic.Int32
}

func threeDSEngines(t *testing.T, f func(t *testing.T, fx *threeDSFixture)) {
	t.Helper()
	merchantOnEngines(t, func(t *testing.T, st paygate.Store, clock *testenv.Clock, keyID string) {
		prov := &flakyThreeDS{Provider: sandbox.New("sandbox-eu", []string{"EUR"})}
		table, err := provider.NewTable(map[paygate.Mode]provider.Routes{paygate.ModeTest: {Default: []paygate.Provider{prov}}})
		if err != nil {
			t.Fatal(err)
		}
		svc := payment.New(payment.Config{
			Store: st, Router: table, Clock: clock, Encoder: httpapi.Encoder{}, Vault: testVault(t),
			ProviderTimeout: 5 * time.Second,
			ThreeDS:         payment.ThreeDSConfig{BaseURL: "https://pay.example/gw/", ChallengeTTL: testTTL},
		})
		f(t, &threeDSFixture{st: st, svc: svc, clock: clock, prov: prov, keyID: keyID})
	})
}

// pending creates a payment with the card and returns it (pending_3ds) and
// its creation answer's threeDsData.
func (fx *threeDSFixture) pending(t *testing.T, number, returnURL string) (paygate.Payment, map[string]any) {
	t.Helper()
	ctx := t.Context()
	ik := "ik-" + string(rune('a'+fx.n.Add(1)))
	_, reserved, err := fx.st.ReserveIdempotency(ctx, paygate.IdempotencyReservation{
		MerchantID: "m1", Mode: paygate.ModeTest, Key: ik, Fingerprint: []byte("fp"), APIKeyID: fx.keyID, Now: fx.clock.Now(),
	})
	if err != nil || !reserved {
		t.Fatalf("reserve: %v %v", reserved, err)
	}
	res, err := fx.svc.Create(ctx, payment.Request{MerchantID: "m1", Mode: paygate.ModeTest, IdempotencyKey: ik}, payment.CreateInput{
		Amount: paygate.Money{Amount: 1050, Currency: "EUR"}, AmountText: "10.50", Method: paygate.MethodCard,
		CustomerExternalID: "c1", MerchantRef: ik, ReturnURL: returnURL,
		Card: &paygate.Card{Number: paygate.PAN(number), ExpMonth: 12, ExpYear: 2040, CVV: "123", HolderName: "A"},
	})
	ans := payment.StoredAnswer(res)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	var body struct {
		Data struct {
			ID              string         `json:"id"`
			Status          string         `json:"status"`
			ThreeDsRequired bool           `json:"threeDsRequired"`
			ThreeDsData     map[string]any `json:"threeDsData"`
		} `json:"data"`
	}
	if err := json.Unmarshal(ans.Body, &body); err != nil || ans.Status != 201 {
		t.Fatalf("answer %d %s", ans.Status, ans.Body)
	}
	if body.Data.Status != "pending_3ds" || !body.Data.ThreeDsRequired || body.Data.ThreeDsData == nil {
		t.Fatalf("answer %s", ans.Body)
	}
	p, err := fx.st.PaymentByID(ctx, "m1", paygate.ModeTest, body.Data.ID)
	if err != nil || p.Status != paygate.PaymentPending3DS {
		t.Fatalf("payment %+v %v", p, err)
	}
	// The stored answer is the one the client got.
	rec, _, err := fx.st.ReserveIdempotency(ctx, paygate.IdempotencyReservation{
		MerchantID: "m1", Mode: paygate.ModeTest, Key: ik, Fingerprint: []byte("fp"), APIKeyID: fx.keyID, Now: fx.clock.Now(),
	})
	if err != nil || rec.State != paygate.IdempotencyComplete || !bytes.Equal(rec.Body, ans.Body) {
		t.Fatalf("idempotency record %+v %v", rec, err)
	}
	return p, body.Data.ThreeDsData
}

var (
	formRE  = regexp.MustCompile(`(?s)<form id="(threeds-[a-z]+)" method="post" action="([^"]+)">(.*?)</form>`)
	inputRE = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

// challenge renders the challenge page as the customer's browser would get
// it and returns the token and the fields each of its forms posts.
func challenge(t *testing.T, fx *threeDSFixture, tds map[string]any) (string, map[string]map[string]string) {
	t.Helper()
	form := url.Values{}
	for k, v := range tds["parameters"].(map[string]any) {
		form.Set(k, v.(string))
	}
	c, err := sandbox.ParseChallenge(form)
	if err != nil {
		t.Fatal(err)
	}
	token, ok := fx.svc.TokenFromCallbackURL(c.TermURL)
	if !ok {
		t.Fatalf("TermUrl %q is not a callback of the service", c.TermURL)
	}
	var b bytes.Buffer
	if err := sandbox.RenderChallenge(&b, c, sandbox.ChallengeDetails{MerchantName: "M", Amount: "10.50", Currency: "EUR"}); err != nil {
		t.Fatal(err)
	}
	forms := map[string]map[string]string{}
	for _, m := range formRE.FindAllStringSubmatch(b.String(), -1) {
		fields := map[string]string{}
		for _, in := range inputRE.FindAllStringSubmatch(m[3], -1) {
			fields[in[1]] = html.UnescapeString(in[2])
		}
		forms[m[1]] = fields
	}
	return token, forms
}

func events(t *testing.T, st paygate.Store, paymentID string) []paygate.EventType {
	t.Helper()
	evs, err := st.Events(t.Context(), paygate.EventQuery{MerchantID: "m1", Mode: paygate.ModeTest})
	if err != nil {
		t.Fatal(err)
	}
	var out []paygate.EventType
	for _, e := range evs {
		if e.PaymentID == paymentID {
			out = append(out, e.Type)
		}
	}
	return out
}

func TestThreeDSCreate(t *testing.T) {
	t.Parallel()
	threeDSEngines(t, func(t *testing.T, fx *threeDSFixture) {
		_, tds := fx.pending(t, sandbox.Card3DS, "")
		if tds["method"] != "POST" || tds["redirectUrl"] != "https://pay.example/gw"+sandbox.ChallengePath {
			t.Fatalf("threeDsData %v", tds)
		}
		params := tds["parameters"].(map[string]any)
		term, _ := params["TermUrl"].(string)
		tok, ok := fx.svc.TokenFromCallbackURL(term)
		if !ok || term != "https://pay.example/gw/v1/3ds/callback/"+tok {
			t.Fatalf("TermUrl %q", term)
		}
		if len(tok) < 22 { // 128 bits in base64url
			t.Fatalf("token %q is too short", tok)
		}
		if params["creq"] == "" || params["threeDSSessionData"] == "" {
			t.Fatalf("parameters %v", params)
		}
		v, err := fx.svc.ThreeDSChallenge(t.Context(), tok)
		if err != nil || v.MerchantName != "Ada's Books" || v.Payment.Amount.Amount != 1050 {
			t.Fatalf("challenge view %+v %v", v, err)
		}
		// Tokens are unique per payment.
		_, tds2 := fx.pending(t, sandbox.Card3DS, "")
		if tds2["parameters"].(map[string]any)["TermUrl"] == term {
			t.Fatal("two payments share a token")
		}
	})
}

func TestThreeDSComplete(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, card, form string
		status           paygate.PaymentStatus
		errorCode        string
		decline          string
		event            paygate.EventType
	}{
		{"Complete", sandbox.Card3DS, "threeds-complete", paygate.PaymentCaptured, "", "", paygate.EventPaymentCaptured},
		{"Fail", sandbox.Card3DS, "threeds-fail", paygate.PaymentFailed, "AUTHENTICATION_FAILED", "", paygate.EventPaymentFailed},
		{"CaptureDeclined", sandbox.Card3DSCaptureDeclined, "threeds-complete", paygate.PaymentFailed, "CARD_DECLINED", paygate.DeclineGeneric, paygate.EventPaymentFailed},
	}
	threeDSEngines(t, func(t *testing.T, fx *threeDSFixture) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				p, tds := fx.pending(t, c.card, "")
				tok, forms := challenge(t, fx, tds)
				got, err := fx.svc.CompleteThreeDS(t.Context(), tok, forms[c.form])
				if err != nil {
					t.Fatal(err)
				}
				stored, err := fx.st.PaymentByID(t.Context(), "m1", paygate.ModeTest, p.ID)
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range []paygate.Payment{got, stored} {
					if q.Status != c.status || q.ErrorCode != c.errorCode || q.DeclineCode != c.decline {
						t.Fatalf("payment %s/%s/%s, want %s/%s/%s", q.Status, q.ErrorCode, q.DeclineCode, c.status, c.errorCode, c.decline)
					}
				}
				if c.status == paygate.PaymentCaptured && stored.AmountCaptured != 1050 {
					t.Fatalf("amount captured %d", stored.AmountCaptured)
				}
				if evs := events(t, fx.st, p.ID); len(evs) != 1 || evs[0] != c.event {
					t.Fatalf("events %v, want [%s]", evs, c.event)
				}
				// Replay: NOT_FOUND and nothing changes.
				_, err = fx.svc.CompleteThreeDS(t.Context(), tok, forms["threeds-complete"])
				if !paygate.IsNotFound(err) {
					t.Fatalf("replay: %v, want NOT_FOUND", err)
				}
				if evs := events(t, fx.st, p.ID); len(evs) != 1 {
					t.Fatalf("events after replay %v", evs)
				}
			})
		}
	})
}

func TestThreeDSUnknownTokens(t *testing.T) {
	t.Parallel()
	threeDSEngines(t, func(t *testing.T, fx *threeDSFixture) {
		for _, tok := range []string{"", "x", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "../../etc/passwd"} {
			if _, err := fx.svc.CompleteThreeDS(t.Context(), tok, nil); !paygate.IsNotFound(err) {
				t.Errorf("token %q: %v, want NOT_FOUND", tok, err)
			}
			if _, err := fx.svc.ThreeDSChallenge(t.Context(), tok); !paygate.IsNotFound(err) {
				t.Errorf("challenge of token %q: %v, want NOT_FOUND", tok, err)
			}
		}
	})
}

// TestThreeDSExpiry moves the clock: a challenge that is not completed
// within its lifetime cannot be completed any more, and the expiry job fails
// its payment with AUTHENTICATION_EXPIRED and sends payment.failed.
func TestThreeDSExpiry(t *testing.T) {
	t.Parallel()
	threeDSEngines(t, func(t *testing.T, fx *threeDSFixture) {
		ctx := t.Context()
		job := fx.svc.NewThreeDSExpirer(time.Hour)
		p, tds := fx.pending(t, sandbox.Card3DS, "https://shop.example/return")
		done, doneTDS := fx.pending(t, sandbox.Card3DS, "")
		tok, forms := challenge(t, fx, tds)
		doneTok, doneForms := challenge(t, fx, doneTDS)
		if _, err := fx.svc.CompleteThreeDS(ctx, doneTok, doneForms["threeds-complete"]); err != nil {
			t.Fatal(err)
		}

		fx.clock.Add(testTTL - time.Second)
		if n := job.RunOnce(ctx); n != 0 {
			t.Fatalf("expired %d challenges before their time", n)
		}
		if _, err := fx.svc.ThreeDSChallenge(ctx, tok); err != nil {
			t.Fatalf("challenge a second before expiry: %v", err)
		}

		fx.clock.Add(time.Second)
		// Expired: the page and the callback refuse it even before the job
		// has run, and nothing changes.
		if _, err := fx.svc.ThreeDSChallenge(ctx, tok); !paygate.IsNotFound(err) {
			t.Fatalf("challenge page after expiry: %v, want NOT_FOUND", err)
		}
		if _, err := fx.svc.CompleteThreeDS(ctx, tok, forms["threeds-complete"]); !paygate.IsNotFound(err) {
			t.Fatalf("callback after expiry: %v, want NOT_FOUND", err)
		}
		if q, _ := fx.st.PaymentByID(ctx, "m1", paygate.ModeTest, p.ID); q.Status != paygate.PaymentPending3DS {
			t.Fatalf("status %s before the job ran", q.Status)
		}

		if n := job.RunOnce(ctx); n != 1 {
			t.Fatalf("expired %d challenges, want 1", n)
		}
		q, err := fx.st.PaymentByID(ctx, "m1", paygate.ModeTest, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if q.Status != paygate.PaymentFailed || q.ErrorCode != "AUTHENTICATION_EXPIRED" || q.ErrorMessage == "" || !q.UpdatedAt.Equal(fx.clock.Now()) {
			t.Fatalf("expired payment %+v", q)
		}
		if evs := events(t, fx.st, p.ID); len(evs) != 1 || evs[0] != paygate.EventPaymentFailed {
			t.Fatalf("events %v", evs)
		}
		// The completed payment is untouched, and a second run finds nothing.
		if evs := events(t, fx.st, done.ID); len(evs) != 1 || evs[0] != paygate.EventPaymentCaptured {
			t.Fatalf("completed payment's events %v", evs)
		}
		if n := job.RunOnce(ctx); n != 0 {
			t.Fatalf("second run expired %d", n)
		}
	})
}

// TestThreeDSExpiryJobRuns checks the job's own loop with Start and Stop.
func TestThreeDSExpiryJobRuns(t *testing.T) {
	t.Parallel()
	threeDSEngines(t, func(t *testing.T, fx *threeDSFixture) {
		p, _ := fx.pending(t, sandbox.Card3DS, "")
		fx.clock.Add(testTTL)
		job := fx.svc.NewThreeDSExpirer(10 * time.Millisecond)
		if err := job.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			q, err := fx.st.PaymentByID(t.Context(), "m1", paygate.ModeTest, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			if q.Status == paygate.PaymentFailed {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the running job did not expire the challenge within 10s")
			}
			time.Sleep(10 * time.Millisecond)
		}
		job.Stop()
		job.Stop() // idempotent
	})
}

// TestThreeDSConcurrentCallbacks submits one challenge many times at once:
// the provider is asked once, one event is written, and every submission
// answers the same outcome (or NOT_FOUND if it came after the first was
// done).
func TestThreeDSConcurrentCallbacks(t *testing.T) {
	t.Parallel()
	threeDSEngines(t, func(t *testing.T, fx *threeDSFixture) {
		p, tds := fx.pending(t, sandbox.Card3DS, "")
		tok, forms := challenge(t, fx, tds)
		const n = 16
		var wg sync.WaitGroup
		results := make([]paygate.Payment, n)
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				results[i], errs[i] = fx.svc.CompleteThreeDS(context.Background(), tok, forms["threeds-complete"])
			})
		}
		close(start)
		wg.Wait()
		ok := 0
		for i := range n {
			switch {
			case errs[i] == nil:
				ok++
				if results[i].Status != paygate.PaymentCaptured || results[i].ID != p.ID {
					t.Errorf("submission %d: %s", i, results[i].Status)
				}
			case !paygate.IsNotFound(errs[i]):
				t.Errorf("submission %d: %v", i, errs[i])
			}
		}
		if ok == 0 {
			t.Fatal("no submission completed the payment")
		}
		if c := fx.prov.calls.Load(); c != 1 {
			t.Fatalf("provider asked %d times, want 1", c)
		}
		if evs := events(t, fx.st, p.ID); len(evs) != 1 || evs[0] != paygate.EventPaymentCaptured {
			t.Fatalf("events %v", evs)
		}
	})
}

// TestThreeDSProviderUnavailable: when the provider cannot be reached the
// payment stays pending_3ds and the customer may submit again.
func TestThreeDSProviderUnavailable(t *testing.T) {
	t.Parallel()
	threeDSEngines(t, func(t *testing.T, fx *threeDSFixture) {
		p, tds := fx.pending(t, sandbox.Card3DS, "")
		tok, forms := challenge(t, fx, tds)
		fx.prov.down.Store(true)
		_, err := fx.svc.CompleteThreeDS(t.Context(), tok, forms["threeds-complete"])
		if paygate.ErrorCode(err) != paygate.CodeServiceUnavailable {
			t.Fatalf("err %v, want SERVICE_UNAVAILABLE", err)
		}
		if q, _ := fx.st.PaymentByID(t.Context(), "m1", paygate.ModeTest, p.ID); q.Status != paygate.PaymentPending3DS {
			t.Fatalf("status %s", q.Status)
		}
		if evs := events(t, fx.st, p.ID); len(evs) != 0 {
			t.Fatalf("events %v", evs)
		}
		fx.prov.down.Store(false)
		got, err := fx.svc.CompleteThreeDS(t.Context(), tok, forms["threeds-complete"])
		if err != nil || got.Status != paygate.PaymentCaptured {
			t.Fatalf("retry: %v %v", got.Status, err)
		}
	})
}

// TestThreeDSForgedResponse: a response the provider refuses fails the
// payment with PROVIDER_ERROR and uses the token.
func TestThreeDSForgedResponse(t *testing.T) {
	t.Parallel()
	threeDSEngines(t, func(t *testing.T, fx *threeDSFixture) {
		p, tds := fx.pending(t, sandbox.Card3DS, "")
		tok, _ := challenge(t, fx, tds)
		got, err := fx.svc.CompleteThreeDS(t.Context(), tok, map[string]string{"cres": "forged"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != paygate.PaymentFailed || got.ErrorCode != "PROVIDER_ERROR" {
			t.Fatalf("payment %s %s", got.Status, got.ErrorCode)
		}
		if evs := events(t, fx.st, p.ID); len(evs) != 1 || evs[0] != paygate.EventPaymentFailed {
			t.Fatalf("events %v", evs)
		}
		if _, err := fx.svc.CompleteThreeDS(t.Context(), tok, nil); !paygate.IsNotFound(err) {
			t.Fatalf("replay: %v", err)
		}
	})
}
