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

// Create runs a card payment: insert it as created, charge it through the
// route of its currency (failing over only when a provider provably
// processed nothing), then write the final status, its event and the
// request's idempotency answer in one transaction.
//
// The returned Result is what was stored, rendered, under the idempotency
// key. An error means nothing was stored for the key (the caller
// releases it): INVALID_REQUEST for a stored card that cannot be used, or an
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
		ID:                id.New(),
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
	// engine decides from it how the insert commits (store/plan).
	route := s.router.Route(p.Mode, p.Amount.Currency)
	p, err := s.store.CreatePayment(ctx, paygate.NewPayment{
		Payment:            p,
		CustomerExternalID: in.CustomerExternalID,
		NewCustomerID:      id.New(),
		Route:              route,
		Reservation:        req.Reservation,
	})
	var taken *paygate.KeyTakenError
	if errors.As(err, &taken) {
		return Result{}, taken
	}
	if err != nil {
		return Result{}, unreserved(fmt.Errorf("insert payment: %w", err))
	}

	// The 3-D Secure callback token is minted before the charge, so that a
	// provider that redirects the customer itself (Stripe) knows where to
	// send them back; it is stored only when the answer is pending_3ds.
	token := newCallbackToken()
	res, provID, perr := s.charge(ctx, p, in, route, token)
	if in.SaveCard {
		p.StoredCardID = s.saveCard(ctx, p, *in.Card, res, perr)
	}
	return s.finishCharge(ctx, p, res, provID, perr, token)
}

// ErrNotReserved marks an error of Create with Request.Reservation that
// happened before the payment's insert reserved the idempotency key.
var ErrNotReserved = errors.New("the idempotency key was not reserved")

// charge tries the providers of the route in order. It moves to the next
// provider only when the previous one provably processed nothing. With an
// error, the result holds only the writes the provider asked to commit with
// the outcome (ChargeResult.Commit), none when nothing was processed.
func (s *Service) charge(ctx context.Context, p paygate.Payment, in CreateInput, providers []paygate.Provider, token string) (paygate.ChargeResult, string, *paygate.ProviderError) {
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
		res, err := prov.Charge(pctx, paygate.ChargeRequest{
			PaymentID:         p.ID,
			MerchantID:        p.MerchantID,
			Mode:              p.Mode,
			Amount:            p.Amount,
			Card:              *in.Card,
			Billing:           in.Billing,
			DeviceFingerprint: in.DeviceFingerprint,
			ReturnURL:         in.ReturnURL,
			ThreeDSReturnURL:  s.CallbackURL(token),
		})
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

// finishCharge writes the outcome of a charge: status, event, stored answer
// and the writes the provider asked to commit with it (res.Commit, whatever
// the outcome) in one unit. token is the callback token minted before the
// charge ("" mints one for a pending_3ds answer).
func (s *Service) finishCharge(ctx context.Context, p paygate.Payment, res paygate.ChargeResult, providerID string, perr *paygate.ProviderError, token string) (Result, error) {
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
				return Result{}, fmt.Errorf("provider %s: %w", providerID, err)
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
			return Result{}, fmt.Errorf("provider %s answered unexpected status %q", providerID, res.Status)
		}
	}

	out := s.paymentResult(p, action)
	var done *paygate.IdempotencyCompletion
	if p.IdempotencyKey != "" {
		done = Request{MerchantID: p.MerchantID, Mode: p.Mode, IdempotencyKey: p.IdempotencyKey}.completion(out)
	}
	err := s.recordOutcome(ctx, t, events, done, challenge, res.Commit)
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
	s.metrics.PaymentStatus(p.Mode, providerID, t.To)
	s.log.LogAttrs(ctx, levelInfo, "payment processed", attrPayment(p), strAttr("status", string(p.Status)), strAttr("provider", providerID))
	return out, nil
}
