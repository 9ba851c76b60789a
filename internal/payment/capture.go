package payment

import (
	"context"
	"errors"
	"fmt"
	"time"

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
func (s *Service) Capture(ctx context.Context, req Request, in CaptureInput) (Result, error) {
	p, err := s.store.PaymentByID(ctx, req.MerchantID, req.Mode, in.PaymentID)
	if err != nil {
		return Result{}, err
	}
	if p.Status != paygate.PaymentAuthorized {
		return Result{}, notAuthorized(p)
	}
	amount := p.Amount.Amount
	if in.AmountText != "" {
		m, perr := money.Parse(in.AmountText, p.Amount.Currency)
		if perr != nil {
			return Result{}, perr
		}
		if m.Amount > p.Amount.Amount {
			return Result{}, paygate.Errorf(paygate.CodeInvalidRequest, "amount", "amount exceeds the authorized amount")
		}
		amount = m.Amount
	}
	return s.settleAuthorized(ctx, req, p, paygate.PaymentCaptured, amount)
}

// Void cancels an authorized payment and sends payment.voided. Errors as
// Capture.
func (s *Service) Void(ctx context.Context, req Request, paymentID string) (Result, error) {
	p, err := s.store.PaymentByID(ctx, req.MerchantID, req.Mode, paymentID)
	if err != nil {
		return Result{}, err
	}
	if p.Status != paygate.PaymentAuthorized {
		return Result{}, notAuthorized(p)
	}
	return s.settleAuthorized(ctx, req, p, paygate.PaymentVoided, 0)
}

func notAuthorized(p paygate.Payment) error {
	return paygate.Errorf(paygate.CodeInvalidRequest, "", "payment is %s; only an authorized payment can be captured or voided", p.Status)
}

// settleAuthorized asks the provider to capture or void, then writes the
// new status, its event and the answer in one transaction.
func (s *Service) settleAuthorized(ctx context.Context, req Request, p paygate.Payment, to paygate.PaymentStatus, amount int64) (Result, error) {
	prov, ok := s.router.Provider(p.Mode, p.ProviderID)
	if !ok {
		return s.storeResult(ctx, req, Result{Kind: PaymentProviderError, Payment: &p, Message: fmt.Sprintf("provider %s is no longer configured", p.ProviderID)})
	}
	op := paygate.PaymentOp{PaymentID: p.ID, ProviderRef: p.ProviderRef, Amount: paygate.Money{Amount: amount, Currency: p.Amount.Currency}}
	pctx, cancel := s.providerContext(ctx)
	var err error
	start := time.Now()
	if to == paygate.PaymentCaptured {
		err = prov.Capture(pctx, op)
	} else {
		err = prov.Void(pctx, op)
	}
	cancel()
	s.metrics.ProviderCall(prov.ID(), settleOperation(to), time.Since(start), false, err)
	if err != nil {
		pe := asProviderError(prov.ID(), err)
		s.log.LogAttrs(ctx, levelFor(pe), "provider call failed", attrPayment(p), strAttr("operation", string(to)), strAttr("error", pe.Message))
		return s.storeResult(ctx, req, Result{Kind: PaymentProviderError, Payment: &p, Message: pe.Message})
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
	res := s.result(Result{Kind: PaymentUpdated, Payment: &p})
	err = s.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{t, ev, *req.completion(res)}})
	if errors.Is(err, paygate.ErrStateConflict) {
		cur, rerr := s.store.PaymentByID(ctx, p.MerchantID, p.Mode, p.ID)
		if rerr != nil {
			return Result{}, rerr
		}
		return Result{}, notAuthorized(cur)
	}
	if err != nil {
		return Result{}, fmt.Errorf("record %s: %w", to, err)
	}
	s.metrics.PaymentStatus(p.Mode, p.ProviderID, to)
	return res, nil
}

// storeResult stores the answer of a result that changes nothing else
// under the request's idempotency key and returns the result.
func (s *Service) storeResult(ctx context.Context, req Request, r Result) (Result, error) {
	r = s.result(r)
	if err := s.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{*req.completion(r)}}); err != nil {
		return Result{}, fmt.Errorf("store answer: %w", err)
	}
	return r, nil
}

// completion is the storing of r's answer under the request's key.
func (req Request) completion(r Result) *paygate.IdempotencyCompletion {
	return &paygate.IdempotencyCompletion{
		MerchantID: req.MerchantID, Mode: req.Mode, Key: req.IdempotencyKey, StatusCode: r.answer.Status, Body: r.answer.Body,
	}
}
