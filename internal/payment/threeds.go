package payment

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/webhook"
)

// CallbackPath is the path prefix of the 3-D Secure callback; the token
// follows it: {base_url}/v1/3ds/callback/<token>.
const CallbackPath = "/v1/3ds/callback/"

// DefaultChallengeTTL is how long a customer has to complete a challenge
// unless configured (decisions.md section 9).
const DefaultChallengeTTL = 30 * time.Minute

// tokenBytes is the size of a callback token: 256 random bits.
const tokenBytes = 32

// ThreeDSConfig configures 3-D Secure challenges.
type ThreeDSConfig struct {
	// BaseURL is the service's public URL (--base-url), without a trailing
	// slash: the callback URL and the provider pages that are the service's
	// own (the sandbox challenge page) live under it. Behind a proxy it is
	// the proxy's URL. Default http://127.0.0.1:8080.
	BaseURL string
	// ChallengeTTL is how long a challenge can be completed; default
	// DefaultChallengeTTL.
	ChallengeTTL time.Duration
}

func (c ThreeDSConfig) withDefaults() ThreeDSConfig {
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.BaseURL == "" {
		c.BaseURL = "http://127.0.0.1:8080"
	}
	if c.ChallengeTTL <= 0 {
		c.ChallengeTTL = DefaultChallengeTTL
	}
	return c
}

// CallbackURL returns the callback URL of a token.
func (s *Service) CallbackURL(token string) string {
	return s.threeDS.BaseURL + CallbackPath + token
}

// TokenFromCallbackURL returns the token of a callback URL this service
// handed out, and false for any other URL (another origin or path).
func (s *Service) TokenFromCallbackURL(u string) (string, bool) {
	tok, ok := strings.CutPrefix(u, s.threeDS.BaseURL+CallbackPath)
	if !ok || !validToken(tok) {
		return "", false
	}
	return tok, true
}

// validToken reports whether s has the shape of a token (base64url of
// tokenBytes), so that junk is refused before it reaches the database.
func validToken(s string) bool {
	if len(s) != base64.RawURLEncoding.EncodedLen(tokenBytes) {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil
}

// tokenHash is what the store keeps of a token.
func tokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// newChallenge mints the token of a payment the provider answered
// pending_3ds, and returns the action the merchant gets (the provider's, with
// TermUrl added and a service path resolved against the base URL) and the
// challenge to store with the transition.
// The token is the one minted before the charge (its callback URL went to
// the provider as ChargeRequest.ThreeDSReturnURL); "" mints one.
func (s *Service) newChallenge(p paygate.Payment, action *paygate.ThreeDSAction, token string, now time.Time) (*paygate.ThreeDSAction, paygate.ThreeDSChallenge, error) {
	if action == nil || action.RedirectURL == "" {
		return nil, paygate.ThreeDSChallenge{}, errors.New("answered pending_3ds without a challenge to show")
	}
	if token == "" {
		token = newCallbackToken()
	}

	out := &paygate.ThreeDSAction{
		RedirectURL: action.RedirectURL,
		Method:      action.Method,
		Parameters:  make(map[string]string, len(action.Parameters)+1),
	}
	if strings.HasPrefix(out.RedirectURL, "/") && !strings.HasPrefix(out.RedirectURL, "//") {
		out.RedirectURL = s.threeDS.BaseURL + out.RedirectURL
	}
	if out.Method == "" {
		out.Method = "POST"
	}
	maps.Copy(out.Parameters, action.Parameters)
	out.Parameters["TermUrl"] = s.CallbackURL(token)
	return out, paygate.ThreeDSChallenge{
		TokenHash:  tokenHash(token),
		PaymentID:  p.ID,
		MerchantID: p.MerchantID,
		Mode:       p.Mode,
		CreatedAt:  now,
		ExpiresAt:  now.Add(s.threeDS.ChallengeTTL),
	}, nil
}

// newCallbackToken mints a callback token: 256 random bits, base64url.
func newCallbackToken() string {
	var b [tokenBytes]byte
	_, _ = rand.Read(b[:]) // never fails: crypto/rand aborts the program instead
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// recordOutcome writes a charge's outcome in one unit: the transition, its
// events and the request's answer; a pending_3ds outcome's challenge, so
// that no payment waits for a challenge that does not exist; and the writes
// the provider asked to commit with the outcome (ChargeResult.Commit: a
// sandbox's ledger entry), so that a crash keeps both or neither.
func (s *Service) recordOutcome(ctx context.Context, t paygate.PaymentTransition, events []paygate.Event, done *paygate.IdempotencyCompletion, challenge *paygate.ThreeDSChallenge, commit []paygate.Op) error {
	u := paygate.Unit{Ops: []paygate.Op{t}}
	u.AddEvents(events)
	u.AddCompletion(done)
	if challenge != nil {
		u.Add(*challenge)
	}
	u.Add(commit...)
	return s.store.Commit(ctx, u)
}

// ThreeDSChallenge returns the payment of a token whose challenge can still
// be completed. Errors: NOT_FOUND for a token that is unknown, used or
// expired (or malformed).
func (s *Service) ThreeDSChallenge(ctx context.Context, token string) (paygate.ThreeDSView, error) {
	if !validToken(token) {
		return paygate.ThreeDSView{}, challengeNotFound()
	}
	c, err := s.challengeByHash(ctx, tokenHash(token))
	if err != nil {
		return paygate.ThreeDSView{}, err
	}
	if !c.Usable(s.clock.Now()) {
		return paygate.ThreeDSView{}, challengeNotFound()
	}
	p, err := s.store.PaymentByID(ctx, c.MerchantID, c.Mode, c.PaymentID)
	if err != nil {
		return paygate.ThreeDSView{}, err
	}
	if p.Status != paygate.PaymentPending3DS {
		return paygate.ThreeDSView{}, challengeNotFound()
	}
	m, err := paygate.OneMerchant(s.store.Merchants(ctx, paygate.MerchantQuery{ID: c.MerchantID}))
	if err != nil {
		return paygate.ThreeDSView{}, err
	}
	return paygate.ThreeDSView{Payment: p, MerchantName: m.Name}, nil
}

// challengeByHash returns the challenge of the token hash, whatever its
// state, or NOT_FOUND.
func (s *Service) challengeByHash(ctx context.Context, hash []byte) (paygate.ThreeDSChallenge, error) {
	cs, err := s.store.ThreeDSChallenges(ctx, paygate.ThreeDSChallengeQuery{TokenHash: hash})
	if err != nil {
		return paygate.ThreeDSChallenge{}, err
	}
	if len(cs) == 0 {
		return paygate.ThreeDSChallenge{}, challengeNotFound()
	}
	return cs[0], nil
}

func challengeNotFound() error {
	return paygate.Errorf(paygate.CodeNotFound, "", "this 3-D Secure link is unknown, already used or expired")
}

// claimLease is how long a callback request holds its claim on a challenge:
// longer than its provider call can last, so that a claim lapses only when
// its request is gone.
func (s *Service) claimLease() time.Duration { return 2*s.providerTimeout + 5*time.Second }

// claimPoll is how often a concurrent submission of one challenge looks
// whether the first one has finished.
const claimPoll = 50 * time.Millisecond

// CompleteThreeDS finishes the payment of a token with what the customer's
// browser posted to the callback: it asks the provider, then consumes the
// token and writes the final status and its event in one transaction. It
// returns the payment as it now is (captured, authorized or failed).
//
// A token is used once. A concurrent submission of the same challenge (a
// double click) waits for the first and returns the same payment; the
// provider is asked once. Errors: NOT_FOUND for a token that is unknown,
// used or expired; SERVICE_UNAVAILABLE when the provider could not be
// reached (nothing changed: the customer may submit again).
func (s *Service) CompleteThreeDS(ctx context.Context, token string, response map[string]string) (paygate.Payment, error) {
	if !validToken(token) {
		return paygate.Payment{}, challengeNotFound()
	}
	hash := tokenHash(token)
	waitUntil := time.Now().Add(s.providerTimeout + 5*time.Second)
	waited := false
	for {
		now := s.clock.Now()
		c, err := s.store.ClaimThreeDSChallenge(ctx, hash, now, now.Add(s.claimLease()))
		switch {
		case err == nil:
			return s.completeClaimed(ctx, c, response)
		case errors.Is(err, paygate.ErrStateConflict):
			// Another request is completing this challenge right now.
			if time.Now().After(waitUntil) {
				return paygate.Payment{}, paygate.Errorf(paygate.CodeServiceUnavailable, "", "the payment is still being completed; try again")
			}
			waited = true
			select {
			case <-ctx.Done():
				return paygate.Payment{}, ctx.Err()
			case <-time.After(claimPoll):
			}
		case waited && paygate.IsNotFound(err):
			// The request we waited for has finished: answer its outcome.
			return s.consumedOutcome(ctx, hash)
		default:
			return paygate.Payment{}, err
		}
	}
}

// consumedOutcome returns the payment of a challenge another request just
// consumed, or NOT_FOUND when it was not consumed (it expired meanwhile).
func (s *Service) consumedOutcome(ctx context.Context, hash []byte) (paygate.Payment, error) {
	c, err := s.challengeByHash(ctx, hash)
	if err != nil {
		return paygate.Payment{}, err
	}
	if c.ConsumedAt == nil {
		return paygate.Payment{}, challengeNotFound()
	}
	return s.store.PaymentByID(ctx, c.MerchantID, c.Mode, c.PaymentID)
}

// completeClaimed asks the provider and records the outcome of a claimed
// challenge.
func (s *Service) completeClaimed(ctx context.Context, c paygate.ThreeDSChallenge, response map[string]string) (paygate.Payment, error) {
	release := func() {
		u := paygate.Unit{Ops: []paygate.Op{paygate.ThreeDSRelease{TokenHash: c.TokenHash}}}
		if err := s.store.Commit(context.WithoutCancel(ctx), u); err != nil {
			s.log.Error("release 3-D Secure challenge", "payment", c.PaymentID, "error", err)
		}
	}
	p, err := s.store.PaymentByID(ctx, c.MerchantID, c.Mode, c.PaymentID)
	if err != nil {
		release()
		return paygate.Payment{}, err
	}
	if p.Status != paygate.PaymentPending3DS {
		release()
		return paygate.Payment{}, challengeNotFound()
	}

	var res paygate.ThreeDSResult
	var perr *paygate.ProviderError
	prov, ok := s.router.Provider(p.Mode, p.ProviderID)
	tp, can := prov.(paygate.ThreeDSProvider)
	if !ok || !can {
		perr = &paygate.ProviderError{Kind: paygate.ProviderFailed, Provider: p.ProviderID,
			Message: fmt.Sprintf("provider %s cannot complete 3-D Secure", p.ProviderID)}
	} else {
		pctx, cancel := s.providerContext(ctx)
		start := time.Now()
		res, err = tp.CompleteThreeDS(pctx, paygate.ThreeDSCompletion{
			PaymentID: p.ID, ProviderRef: p.ProviderRef, Amount: p.Amount, Response: response,
		})
		cancel()
		s.metrics.ProviderCall(p.ProviderID, "3ds", time.Since(start), !res.Authenticated || res.Status == paygate.PaymentFailed, err)
		if err != nil {
			perr = asProviderError(p.ProviderID, err)
		}
	}
	if perr != nil {
		s.log.LogAttrs(ctx, levelFor(perr), "provider 3-D Secure completion failed",
			attrPayment(p), strAttr("provider", p.ProviderID), strAttr("kind", kindName(perr.Kind)), strAttr("error", perr.Message))
		if perr.Kind != paygate.ProviderFailed {
			// Nothing is known to have happened: let the customer retry
			// (the provider is idempotent by payment).
			release()
			return paygate.Payment{}, paygate.Errorf(paygate.CodeServiceUnavailable, "", "the payment provider could not be reached; try again")
		}
	}

	now := s.clock.Now()
	t, ev, err := threeDSOutcome(&p, res, perr, now)
	if err != nil {
		release()
		return paygate.Payment{}, err
	}
	err = s.store.Commit(ctx, paygate.Unit{Ops: paygate.ThreeDSFinish{
		TokenHash: c.TokenHash, At: now, Transition: t, Events: []paygate.Event{ev},
	}.Ops()})
	if errors.Is(err, paygate.ErrStateConflict) {
		// Our claim lapsed and the challenge was finished (or expired)
		// meanwhile: the stored outcome stands.
		return s.store.PaymentByID(ctx, p.MerchantID, p.Mode, p.ID)
	}
	if err != nil {
		release()
		return paygate.Payment{}, fmt.Errorf("record 3-D Secure outcome: %w", err)
	}
	s.metrics.PaymentStatus(p.Mode, p.ProviderID, p.Status)
	s.log.LogAttrs(ctx, levelInfo, "3-D Secure completed", attrPayment(p), strAttr("status", string(p.Status)), strAttr("provider", p.ProviderID))
	if id := s.settlePendingCard(ctx, p); id != "" { // saveCard (storedcard.go)
		p.StoredCardID = id
	}
	return p, nil
}

// threeDSOutcome turns a provider's answer into the payment's transition out
// of pending_3ds and its event, and updates p to match.
func threeDSOutcome(p *paygate.Payment, res paygate.ThreeDSResult, perr *paygate.ProviderError, now time.Time) (paygate.PaymentTransition, paygate.Event, error) {
	t := paygate.PaymentTransition{
		ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
		From: []paygate.PaymentStatus{paygate.PaymentPending3DS}, UpdatedAt: now,
	}
	if perr == nil {
		t.ProviderRef = res.ProviderRef
	}
	typ := paygate.EventPaymentFailed
	amount := p.Amount.Amount
	switch {
	case perr != nil:
		t.To = paygate.PaymentFailed
		t.ErrorCode, t.ErrorMessage = string(paygate.CodeProviderError), perr.Message
	case !res.Authenticated:
		t.To = paygate.PaymentFailed
		t.ErrorCode = string(paygate.CodeAuthenticationFailed)
		t.ErrorMessage = "The cardholder did not pass 3-D Secure authentication."
	case res.Status == paygate.PaymentCaptured:
		t.To, typ = paygate.PaymentCaptured, paygate.EventPaymentCaptured
		t.AmountCaptured = &amount
		p.AmountCaptured = amount
	case res.Status == paygate.PaymentAuthorized:
		t.To, typ = paygate.PaymentAuthorized, paygate.EventPaymentAuthorized
	case res.Status == paygate.PaymentFailed:
		t.To = paygate.PaymentFailed
		t.ErrorCode, t.ErrorMessage, t.DeclineCode = string(paygate.CodeCardDeclined), res.Message, res.DeclineCode
		if t.DeclineCode == "" {
			t.DeclineCode = paygate.DeclineGeneric
		}
		if t.ErrorMessage == "" {
			t.ErrorMessage = "The card was declined."
		}
	default:
		return t, paygate.Event{}, fmt.Errorf("provider %s answered 3-D Secure with unexpected status %q", p.ProviderID, res.Status)
	}
	p.Status, p.UpdatedAt = t.To, now
	p.ErrorCode, p.ErrorMessage, p.DeclineCode = t.ErrorCode, t.ErrorMessage, t.DeclineCode
	if t.ProviderRef != "" {
		p.ProviderRef = t.ProviderRef
	}
	return t, webhook.PaymentEvent(typ, *p, amount, now), nil
}

// ThreeDSExpirer is the background job that fails the payments whose
// challenge was not completed in time: status failed, errorCode
// AUTHENTICATION_EXPIRED, event payment.failed. Several nodes may run one
// each: the expiry consumes the challenge conditionally, so one node wins,
// and a challenge a callback is completing at that moment is left to it.
type ThreeDSExpirer struct {
	svc      *Service
	interval time.Duration

	job job
}

// ExpiryInterval is how often the expiry job should run for a challenge
// lifetime: every 5 s, more often for lifetimes under 10 s (tests), so that
// a payment is failed soon after its challenge expires.
func ExpiryInterval(ttl time.Duration) time.Duration {
	return max(min(ttl/2, 5*time.Second), 100*time.Millisecond)
}

// NewThreeDSExpirer returns the expiry job, polling every interval.
func (s *Service) NewThreeDSExpirer(interval time.Duration) *ThreeDSExpirer {
	if interval <= 0 {
		interval = time.Second
	}
	return &ThreeDSExpirer{svc: s, interval: interval}
}

// Start launches the job. It returns at once.
func (e *ThreeDSExpirer) Start(ctx context.Context) error {
	e.job.start(ctx, e.interval, nil, func(ctx context.Context) { e.RunOnce(ctx) })
	return nil
}

// Stop stops the job and returns once its goroutine has exited.
func (e *ThreeDSExpirer) Stop() { e.job.stop() }

// expireBatch bounds the challenges one run expires; the next run takes the
// rest.
const expireBatch = 100

// RunOnce expires the challenges that are due now and returns how many
// payments it failed.
func (e *ThreeDSExpirer) RunOnce(ctx context.Context) int {
	s := e.svc
	now := s.clock.Now()
	due, err := s.store.ExpiredThreeDSChallenges(ctx, now, expireBatch)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("list expired 3-D Secure challenges", "error", err)
		}
		return 0
	}
	n := 0
	for _, c := range due {
		if ctx.Err() != nil {
			return n
		}
		if e.expire(ctx, c, now) {
			n++
		}
	}
	return n
}

func (e *ThreeDSExpirer) expire(ctx context.Context, c paygate.ThreeDSChallenge, now time.Time) bool {
	s := e.svc
	p, err := s.store.PaymentByID(ctx, c.MerchantID, c.Mode, c.PaymentID)
	if err != nil {
		s.log.Error("load payment of an expired challenge", "payment", c.PaymentID, "error", err)
		return false
	}
	t := paygate.PaymentTransition{
		ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
		From: []paygate.PaymentStatus{paygate.PaymentPending3DS}, To: paygate.PaymentFailed,
		ErrorCode:    string(paygate.CodeAuthenticationExpired),
		ErrorMessage: "The customer did not complete 3-D Secure authentication in time.",
		UpdatedAt:    now,
	}
	p.Status, p.ErrorCode, p.ErrorMessage, p.UpdatedAt = t.To, t.ErrorCode, t.ErrorMessage, now
	err = s.store.Commit(ctx, paygate.Unit{Ops: paygate.ThreeDSFinish{
		TokenHash: c.TokenHash, At: now, OnlyExpired: true, Transition: t,
		Events: []paygate.Event{webhook.PaymentEvent(paygate.EventPaymentFailed, p, p.Amount.Amount, now)},
	}.Ops()})
	if errors.Is(err, paygate.ErrStateConflict) {
		return false // completed, claimed or expired by another node meanwhile
	}
	if err != nil {
		s.log.Error("expire 3-D Secure challenge", "payment", p.ID, "error", err)
		return false
	}
	s.metrics.PaymentStatus(p.Mode, p.ProviderID, p.Status)
	s.log.LogAttrs(ctx, levelInfo, "3-D Secure challenge expired", attrPayment(p))
	s.settlePendingCard(ctx, p) // erases a card saved with saveCard (storedcard.go)
	return true
}
