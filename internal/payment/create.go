package payment

import (
	"context"
	"errors"
	"fmt"

	"github.com/paygate/paygate/internal/card"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/webhook"
)

// Create runs a card payment (a stored card's, or a token's: see
// tokenCard and tokenInsert): insert it as created, charge it through the
// route of its currency (failing over only when a provider provably
// processed nothing), then write the final status, its event and the
// request's idempotency answer in one transaction. When every provider of
// the route records the charge with its outcome (OutcomeRecorder: the
// test-mode sandboxes answering at once), the charge comes first and the
// payment is written once, with its outcome (createAnswered). Before any
// provider call the card-testing guard (Config.Guard) may block the
// attempt: it is then written once, failed with CARD_DECLINED and
// declineCode blocked (createBlocked); a provider's CARD_DECLINED is
// counted by the guard after its outcome committed.
//
// The returned Result is what was stored, rendered, under the idempotency
// key. An error means nothing was stored for the key (the caller
// releases it): INVALID_REQUEST for a stored card or a token that cannot be used, or an
// internal or SERVICE_UNAVAILABLE failure.
//
// With req.Reservation, the key is reserved by the payment's insert (one
// transaction fewer). Then a key that is taken is a *paygate.KeyTakenError,
// and an error before the insert reserved the key wraps ErrNotReserved:
// the key may be another request's, so the caller must not release it.
func (s *Service) Create(ctx context.Context, req Request, in CreateInput) (Result, error) {
	unreserved := func(err error) error {
		if req.Reservation == nil {
			return err
		}
		return fmt.Errorf("%w: %w", ErrNotReserved, err)
	}
	paymentID := id.New()
	// A token payment uses its token in the unit that inserts the payment,
	// before any provider call (tokenInsert): set when in names a token.
	var use *paygate.TokenUse
	if in.Method == paygate.MethodToken {
		if req.Authenticate != nil {
			// The token is read and opened only for a verified key.
			if err := req.Authenticate(ctx); err != nil {
				return Result{}, unreserved(err)
			}
		}
		// Opened for the provider call; dropped with in when Create
		// returns (token.go). The payment is a card payment from here.
		c, u, addr, err := s.tokenCard(ctx, req, in.TokenID, paymentID)
		if err != nil {
			return Result{}, unreserved(err)
		}
		in.Card, in.Method, use = &c, paygate.MethodCard, &u
		// The shopper's address is the one that tokenized the card: the
		// request comes from the merchant's server, whose address every
		// payment of the shop shares (guardAddr).
		if addr != "" {
			in.ClientAddr = addr
			if in.Billing != nil && in.BillingIPDefaulted {
				b := *in.Billing
				b.IPAddress = ipv4Of(addr)
				in.Billing = &b
			}
		}
	}
	if in.Method == paygate.MethodStoredCard {
		if req.Authenticate != nil {
			// The card is read and decrypted only for a verified key.
			if err := req.Authenticate(ctx); err != nil {
				return Result{}, unreserved(err)
			}
		}
		// Decrypted for the provider call; dropped with in when Create
		// returns (storedcard.go).
		c, err := s.storedCard(ctx, req, in)
		if err != nil {
			return Result{}, unreserved(err)
		}
		in.Card, in.SaveCard = &c, false
	}
	if in.Card == nil {
		return Result{}, unreserved(paygate.Errorf(paygate.CodeInvalidRequest, "card", "card is required for a card payment"))
	}
	now := s.clock.Now()
	metadata := in.Metadata
	if metadata == nil {
		metadata = []byte("{}")
	}
	p := paygate.Payment{
		ID:                paymentID,
		MerchantID:        req.MerchantID,
		Mode:              req.Mode,
		Status:            paygate.PaymentCreated,
		Amount:            in.Amount,
		AmountText:        in.AmountText,
		Method:            in.Method,
		StoredCardID:      in.StoredCardID,
		MerchantRef:       in.MerchantRef,
		Card:              card.Summary(*in.Card, s.vault.Fingerprint(in.Card.Number)),
		Billing:           in.Billing,
		ReturnURL:         in.ReturnURL,
		DeviceFingerprint: in.DeviceFingerprint,
		Metadata:          metadata,
		IdempotencyKey:    req.IdempotencyKey,
		LeaseUntil:        now.Add(paygate.PaymentLease),
		CreatedAt:         now,
		UpdatedAt:         now,
	}
	// The route is chosen once, before the insert, and goes with it: the
	// engine decides from it how the insert commits (store/plan). A
	// success-rate route orders it by the card's brand (CardRouter).
	route := routeFor(s.router, p.Mode, p.Amount.Currency, p.Card.Brand)
	np := paygate.NewPayment{
		Payment:            p,
		CustomerExternalID: in.CustomerExternalID,
		NewCustomerID:      id.New(),
		Route:              route,
		Reservation:        req.Reservation,
	}
	// The 3-D Secure callback token is minted before the charge, so that a
	// provider that redirects the customer itself (Stripe) knows where to
	// send them back; it is stored only when the answer is pending_3ds.
	token := newCallbackToken()
	creq := s.chargeRequest(p, in, token)
	// The card-testing guard decides before any provider sees the card
	// (decisions §20); a blocked attempt is one unit, like a sandbox
	// payment, and never reaches a provider. The check is detached from
	// the client, as the provider call is: an attempt whose client hung up
	// is judged and counted all the same.
	att := guardAttempt(p, in)
	if rule := s.guard.Check(context.WithoutCancel(ctx), att); rule != "" {
		return s.createBlocked(ctx, np, use, rule, unreserved)
	}
	// A card to save is stored between the charge and the outcome, for the
	// customer the insert resolves: that payment is inserted first. So is a
	// token's payment, with the token's use: whatever happens next, the
	// token cannot pay a second time.
	if !in.SaveCard && use == nil && recordsWithOutcome(route, creq) {
		out, err := s.createAnswered(ctx, np, creq, token, unreserved)
		s.guardOutcome(ctx, att, out, err)
		return out, err
	}

	var err error
	if use != nil {
		p, err = s.tokenInsert(ctx, np, *use)
	} else {
		p, err = s.store.CreatePayment(ctx, np)
	}
	var taken *paygate.KeyTakenError
	if errors.As(err, &taken) {
		return Result{}, taken
	}
	if err != nil {
		return Result{}, unreserved(fmt.Errorf("insert payment: %w", err))
	}

	res, provID, perr := s.charge(ctx, p, creq, route)
	if in.SaveCard {
		p.StoredCardID = s.saveCard(ctx, p, *in.Card, res, perr)
	}
	out, err := s.finishCharge(ctx, p, res, provID, perr, token)
	s.guardOutcome(ctx, att, out, err)
	return out, err
}

// CardRouter is the optional capability of a router whose routes may
// depend on the card's brand as well as the currency: the success-rate
// routes of provider.Router (decisions §21), scored per currency and
// brand. Their route entries record each charge's outcome under that brand.
type CardRouter interface {
	RouteCard(mode paygate.Mode, currency, brand string) []paygate.Provider
}

// routeFor returns the route of a payment in the currency by a card of the
// brand.
func routeFor(r paygate.Router, mode paygate.Mode, currency, brand string) []paygate.Provider {
	if cr, ok := r.(CardRouter); ok {
		return cr.RouteCard(mode, currency, brand)
	}
	return r.Route(mode, currency)
}

// OutcomeRecorder is the optional capability of a provider that keeps its
// record of a charge in the gateway's database and may hand it back to be
// committed with the payment's outcome (ChargeResult.Commit), as the
// test-mode sandboxes do (decisions.md section 22).
type OutcomeRecorder interface {
	// RecordsWithOutcome reports, before the call, whether the charge of
	// req will write nothing of its own: its record, if any, comes back in
	// ChargeResult.Commit, and nothing else of the call outlives the
	// process. A provider that records anything during the call (card
	// 4000000000000705 at a sandbox, a sandbox with a latency) answers
	// false: the payment must then be stored before the call, so that
	// recovery finds it.
	RecordsWithOutcome(req paygate.ChargeRequest) bool
}

// recordsWithOutcome reports whether every provider of the route, which
// the charge of req may reach, records it with its outcome
// (OutcomeRecorder; the router's route entries pass on what their
// provider says).
func recordsWithOutcome(route []paygate.Provider, req paygate.ChargeRequest) bool {
	for _, prov := range route {
		r, ok := prov.(OutcomeRecorder)
		if !ok || !r.RecordsWithOutcome(req) {
			return false
		}
	}
	return len(route) > 0
}

// createAnswered runs a payment whose providers all record the charge with
// its outcome (recordsWithOutcome): the charge first, with nothing
// written, then one unit: the API key's verification and the key's
// reservation (np.Reservation), the customer, the payment in its outcome's
// status, its events, the request's answer, a pending_3ds payment's
// challenge and the provider's record. On PostgreSQL that is one round
// trip and one commit (decisions.md section 22).
//
// Nothing outlives a unit that does not commit: a crash before the commit,
// or a unit refused (a revoked API key, a key taken meanwhile), leaves no
// payment and no ledger entry, so nothing was charged as far as anyone can
// tell, and the key is as free as it was (a retry starts afresh). A taken
// key is answered as the insert of Create answers it, with its live record
// (a concurrent request with the key committed first: its answer is
// replayed).
func (s *Service) createAnswered(ctx context.Context, np paygate.NewPayment, creq paygate.ChargeRequest, token string, unreserved func(error) error) (Result, error) {
	res, provID, perr := s.charge(ctx, np.Payment, creq, np.Route)
	o, err := s.outcome(np.Payment, res, provID, perr, token)
	if err != nil {
		return Result{}, unreserved(err)
	}
	np.Payment = o.p
	u := paygate.Unit{Ops: []paygate.Op{np}}
	u.AddEvents(o.events)
	u.AddCompletion(o.done)
	if o.challenge != nil {
		u.Add(*o.challenge)
	}
	u.Add(res.Commit...)
	err = s.store.Commit(ctx, u)
	var taken *paygate.KeyTakenError
	if errors.As(err, &taken) {
		return Result{}, taken
	}
	if err != nil {
		return Result{}, unreserved(fmt.Errorf("record payment: %w", err))
	}
	s.metrics.PaymentStatus(o.p.Mode, provID, o.p.Status)
	s.log.LogAttrs(ctx, levelInfo, "payment processed", attrPayment(o.p), strAttr("status", string(o.p.Status)), strAttr("provider", provID))
	return o.result, nil
}

// chargeRequest is the charge of the payment as its providers see it.
func (s *Service) chargeRequest(p paygate.Payment, in CreateInput, token string) paygate.ChargeRequest {
	return paygate.ChargeRequest{
		PaymentID:         p.ID,
		MerchantID:        p.MerchantID,
		Mode:              p.Mode,
		Amount:            p.Amount,
		Card:              *in.Card,
		Billing:           in.Billing,
		DeviceFingerprint: in.DeviceFingerprint,
		ReturnURL:         in.ReturnURL,
		ThreeDSReturnURL:  s.CallbackURL(token),
	}
}

// ErrNotReserved marks an error of Create with Request.Reservation that
// happened before the payment's insert reserved the idempotency key.
var ErrNotReserved = errors.New("the idempotency key was not reserved")

// charge tries the providers of the route in order. It moves to the next
// provider only when the previous one provably processed nothing. With an
// error, the result holds only the writes the provider asked to commit with
// the outcome (ChargeResult.Commit), none when nothing was processed.
func (s *Service) charge(ctx context.Context, p paygate.Payment, req paygate.ChargeRequest, providers []paygate.Provider) (paygate.ChargeResult, string, *paygate.ProviderError) {
	if len(providers) == 0 {
		return paygate.ChargeResult{}, "", &paygate.ProviderError{
			Kind:    paygate.ProviderUnavailable,
			Message: fmt.Sprintf("no provider serves %s in %s mode", p.Amount.Currency, p.Mode),
		}
	}
	var last *paygate.ProviderError
	var lastID string
	var commit []paygate.Op
	for _, prov := range providers {
		pctx, cancel := s.providerContext(ctx)
		res, err := prov.Charge(pctx, req)
		cancel()
		if err == nil {
			return res, prov.ID(), nil
		}
		last, lastID, commit = asProviderError(prov.ID(), err), prov.ID(), res.Commit
		s.log.LogAttrs(ctx, levelFor(last), "provider call failed",
			attrPayment(p), strAttr("provider", prov.ID()), strAttr("kind", kindName(last.Kind)), strAttr("error", last.Message))
		if last.Kind != paygate.ProviderUnavailable {
			break
		}
	}
	if last.Kind == paygate.ProviderUnavailable {
		// Every provider refused before processing anything.
		return paygate.ChargeResult{}, lastID, &paygate.ProviderError{
			Kind: paygate.ProviderUnavailable, Provider: lastID,
			Message: fmt.Sprintf("no provider is available for %s", p.Amount.Currency),
		}
	}
	return paygate.ChargeResult{Commit: commit}, lastID, last
}

// finishCharge writes the outcome of a charge on a created payment:
// status, event, stored answer and the writes the provider asked to commit
// with it (res.Commit, whatever the outcome) in one unit. token is the
// callback token minted before the charge ("" mints one for a pending_3ds
// answer).
func (s *Service) finishCharge(ctx context.Context, p paygate.Payment, res paygate.ChargeResult, providerID string, perr *paygate.ProviderError, token string) (Result, error) {
	o, err := s.outcome(p, res, providerID, perr, token)
	if err != nil {
		return Result{}, err
	}
	err = s.recordOutcome(ctx, o.move, o.events, o.done, o.challenge, res.Commit)
	if errors.Is(err, paygate.ErrStateConflict) {
		// Recovery finished the payment first; answer what is stored.
		cur, rerr := s.store.PaymentByID(ctx, p.MerchantID, p.Mode, p.ID)
		if rerr != nil {
			return Result{}, fmt.Errorf("reread payment after conflict: %w", rerr)
		}
		return s.paymentResult(cur, nil), nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("record payment outcome: %w", err)
	}
	s.metrics.PaymentStatus(o.p.Mode, providerID, o.move.To)
	s.log.LogAttrs(ctx, levelInfo, "payment processed", attrPayment(o.p), strAttr("status", string(o.p.Status)), strAttr("provider", providerID))
	return o.result, nil
}

// chargeOutcome is what the answer of a charge writes.
type chargeOutcome struct {
	p      paygate.Payment           // the payment as it ends: status, provider, errors
	move   paygate.PaymentTransition // from created to p's status
	events []paygate.Event
	// challenge is a pending_3ds payment's challenge, written with it.
	challenge *paygate.ThreeDSChallenge
	result    Result                         // the answer, rendered
	done      *paygate.IdempotencyCompletion // the answer under the payment's key; nil without one
}

// outcome returns what the answer of a charge of p (created) writes,
// whether it moves the stored payment (finishCharge) or is the payment's
// first write (createAnswered). token is as for finishCharge.
func (s *Service) outcome(p paygate.Payment, res paygate.ChargeResult, providerID string, perr *paygate.ProviderError, token string) (chargeOutcome, error) {
	now := s.clock.Now()
	t := paygate.PaymentTransition{
		ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
		From: []paygate.PaymentStatus{paygate.PaymentCreated}, ProviderID: providerID, UpdatedAt: now,
	}
	var events []paygate.Event
	var action *paygate.ThreeDSAction       // set for pending_3ds: the challenge to show
	var challenge *paygate.ThreeDSChallenge // set for pending_3ds: written with the transition

	p.ProviderID, p.UpdatedAt = providerID, now
	switch {
	case perr != nil && perr.Kind == paygate.ProviderUnknownOutcome:
		// The provider may have charged the card: the payment stays
		// created and recovery resolves it. The 202 is stored under the
		// key like any answer the client was given (decisions §15): a
		// retry gets it, before and after recovery, and recovery's own
		// answer does not replace it (a complete record keeps its first
		// answer).
		t.To = paygate.PaymentCreated
	case perr != nil:
		t.To = paygate.PaymentFailed
		t.ErrorCode, t.ErrorMessage = string(paygate.CodeProviderError), perr.Message
		p.Status, p.ErrorCode, p.ErrorMessage = t.To, t.ErrorCode, t.ErrorMessage
		events = append(events, webhook.PaymentEvent(paygate.EventPaymentFailed, p, p.Amount.Amount, now))
	default:
		t.ProviderRef = res.ProviderRef
		p.ProviderRef = res.ProviderRef
		switch res.Status {
		case paygate.PaymentCaptured:
			t.To = paygate.PaymentCaptured
			amt := p.Amount.Amount
			t.AmountCaptured, p.AmountCaptured = &amt, amt
			p.Status = t.To
			events = append(events, webhook.PaymentEvent(paygate.EventPaymentCaptured, p, amt, now))
		case paygate.PaymentAuthorized:
			t.To, p.Status = paygate.PaymentAuthorized, paygate.PaymentAuthorized
			events = append(events, webhook.PaymentEvent(paygate.EventPaymentAuthorized, p, p.Amount.Amount, now))
		case paygate.PaymentPending3DS:
			t.To, p.Status = paygate.PaymentPending3DS, paygate.PaymentPending3DS
			a, c, err := s.newChallenge(p, res.ThreeDS, token, now)
			if err != nil {
				return chargeOutcome{}, fmt.Errorf("provider %s: %w", providerID, err)
			}
			action, challenge = a, &c
		case paygate.PaymentFailed:
			t.To = paygate.PaymentFailed
			t.ErrorCode, t.ErrorMessage, t.DeclineCode = string(paygate.CodeCardDeclined), res.Message, res.DeclineCode
			if t.DeclineCode == "" {
				t.DeclineCode = paygate.DeclineGeneric
			}
			if t.ErrorMessage == "" {
				t.ErrorMessage = "The card was declined."
			}
			p.Status, p.ErrorCode, p.ErrorMessage, p.DeclineCode = t.To, t.ErrorCode, t.ErrorMessage, t.DeclineCode
			events = append(events, webhook.PaymentEvent(paygate.EventPaymentFailed, p, p.Amount.Amount, now))
		default:
			return chargeOutcome{}, fmt.Errorf("provider %s answered unexpected status %q", providerID, res.Status)
		}
	}

	out := s.paymentResult(p, action)
	var done *paygate.IdempotencyCompletion
	if p.IdempotencyKey != "" {
		done = Request{MerchantID: p.MerchantID, Mode: p.Mode, IdempotencyKey: p.IdempotencyKey}.completion(out)
	}
	return chargeOutcome{p: p, move: t, events: events, challenge: challenge, result: out, done: done}, nil
}

// tokenInsert inserts a token payment as created in one unit with the use
// of its token, and returns it as inserted: of two requests paying with
// one token, one unit commits and the other fails whole with
// INVALID_REQUEST param token, before any provider call. The key's
// reservation, when np has one, is in the unit too, before the token's
// use: a request whose key is taken (the same request, sent twice) is
// answered as such, not as a used token.
//
// Nothing is read after the commit (decisions §22): the payment's
// customer id, which only saveCard needs, is left for saveCard to read,
// after the charge, where a failure is logged and not an error after the
// token was spent.
//
// The unit must commit durably (not lazily, as CreatePayment may on a
// sandbox route): it is the invariant Unit.OnlyCardTokens relies on to let
// the token's own insert skip its flush. A mixed unit (the payment and
// the TokenUse) is never OnlyCardTokens, so its commit waits for the
// flush, which carries the token's insert with it.
func (s *Service) tokenInsert(ctx context.Context, np paygate.NewPayment, use paygate.TokenUse) (paygate.Payment, error) {
	if err := s.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{np, use}}); err != nil {
		return paygate.Payment{}, err
	}
	return np.Payment, nil
}
