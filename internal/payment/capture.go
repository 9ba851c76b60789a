package payment

import (
	"context"
	"errors"
	"fmt"

	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/webhook"
)

// Capture captures an authorized payment, fully or up to its authorized
// amount, through the provider that authorized it, and sends
// payment.captured with the captured amount. Errors (nothing stored):
// NOT_FOUND, INVALID_REQUEST when the payment is not authorized (no param)
// or the amount is wrong (param amount). A provider failure is a stored 502
// answer and leaves the payment authorized.
func (s *Service) Capture(ctx context.Context, req Request, in CaptureInput) (Answer, error) {
	p, err := s.store.PaymentByID(ctx, req.MerchantID, req.Mode, in.PaymentID)
	if err != nil {
		return Answer{}, err
	}
	if p.Status != paygate.PaymentAuthorized {
		return Answer{}, notAuthorized(p)
	}
	amount := p.Amount.Amount
	if in.AmountText != "" {
		m, perr := money.Parse(in.AmountText, p.Amount.Currency)
		if perr != nil {
			return Answer{}, perr
		}
		if m.Amount > p.Amount.Amount {
			return Answer{}, paygate.Errorf(paygate.CodeInvalidRequest, "amount", "amount exceeds the authorized amount")
		}
		amount = m.Amount
	}
	return s.settleAuthorized(ctx, req, p, paygate.PaymentCaptured, amount)
}

// Void cancels an authorized payment and sends payment.voided. Errors as
// Capture.
func (s *Service) Void(ctx context.Context, req Request, paymentID string) (Answer, error) {
	p, err := s.store.PaymentByID(ctx, req.MerchantID, req.Mode, paymentID)
	if err != nil {
		return Answer{}, err
	}
	if p.Status != paygate.PaymentAuthorized {
		return Answer{}, notAuthorized(p)
	}
	return s.settleAuthorized(ctx, req, p, paygate.PaymentVoided, 0)
}

func notAuthorized(p paygate.Payment) error {
	return paygate.Errorf(paygate.CodeInvalidRequest, "", "payment is %s; only an authorized payment can be captured or voided", p.Status)
}

// settleAuthorized asks the provider to capture or void, then writes the
// new status, its event and the answer in one transaction.
func (s *Service) settleAuthorized(ctx context.Context, req Request, p paygate.Payment, to paygate.PaymentStatus, amount int64) (Answer, error) {
	prov, ok := s.router.Provider(p.Mode, p.ProviderID)
	if !ok {
		return s.storeAnswer(ctx, req, s.answers.PaymentProviderError(p, fmt.Sprintf("provider %s is no longer configured", p.ProviderID)))
	}
	op := paygate.PaymentOp{PaymentID: p.ID, ProviderRef: p.ProviderRef, Amount: paygate.Money{Amount: amount, Currency: p.Amount.Currency}}
	pctx, cancel := s.providerContext(ctx)
	var err error
	if to == paygate.PaymentCaptured {
		err = prov.Capture(pctx, op)
	} else {
		err = prov.Void(pctx, op)
	}
	cancel()
	if err != nil {
		pe := asProviderError(prov.ID(), err)
		s.log.LogAttrs(ctx, levelFor(pe), "provider call failed", attrPayment(p), strAttr("operation", string(to)), strAttr("error", pe.Message))
		return s.storeAnswer(ctx, req, s.answers.PaymentProviderError(p, pe.Message))
	}

	now := s.clock.Now()
	t := paygate.PaymentTransition{
		ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
		From: []paygate.PaymentStatus{paygate.PaymentAuthorized}, To: to, UpdatedAt: now,
	}
	p.Status, p.UpdatedAt = to, now
	var ev paygate.Event
	if to == paygate.PaymentCaptured {
		t.AmountCaptured, p.AmountCaptured = &amount, amount
		ev = webhook.PaymentEvent(paygate.EventPaymentCaptured, p, amount, now)
	} else {
		ev = webhook.PaymentEvent(paygate.EventPaymentVoided, p, p.Amount.Amount, now)
	}
	ans := s.answers.Payment(p)
	err = s.store.TransitionPayment(ctx, t, []paygate.Event{ev}, &paygate.IdempotencyCompletion{
		MerchantID: req.MerchantID, Mode: req.Mode, Key: req.IdempotencyKey, StatusCode: ans.Status, Body: ans.Body,
	})
	if errors.Is(err, paygate.ErrStateConflict) {
		cur, rerr := s.store.PaymentByID(ctx, p.MerchantID, p.Mode, p.ID)
		if rerr != nil {
			return Answer{}, rerr
		}
		return Answer{}, notAuthorized(cur)
	}
	if err != nil {
		return Answer{}, fmt.Errorf("record %s: %w", to, err)
	}
	return ans, nil
}

// storeAnswer stores an answer that changes nothing else under the
// request's idempotency key and returns it.
func (s *Service) storeAnswer(ctx context.Context, req Request, ans Answer) (Answer, error) {
	err := s.store.CompleteIdempotency(ctx, paygate.IdempotencyCompletion{
		MerchantID: req.MerchantID, Mode: req.Mode, Key: req.IdempotencyKey, StatusCode: ans.Status, Body: ans.Body,
	})
	if err != nil {
		return Answer{}, fmt.Errorf("store answer: %w", err)
	}
	return ans, nil
}
