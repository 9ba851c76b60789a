package payment

import (
	"context"
	"fmt"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/webhook"
)

// Refund creates a refund in status created, with its refund.created event
// and its stored answer in one transaction, and wakes the refund worker,
// which takes it through the provider. Errors (nothing stored): NOT_FOUND
// for an unknown payment, INVALID_REQUEST with param transactionId (not
// captured), currency (differs from the payment's) or amount (more than
// remains refundable).
func (s *Service) Refund(ctx context.Context, req Request, in RefundInput) (Result, error) {
	now := s.clock.Now()
	r := paygate.Refund{
		ID:         id.New(),
		MerchantID: req.MerchantID,
		Mode:       req.Mode,
		PaymentID:  in.PaymentID,
		Amount:     in.Amount,
		AmountText: in.AmountText,
		Reason:     in.Reason,
		Status:     paygate.RefundCreated,
		CreatedAt:  now,
		UpdatedAt:  now,
	}
	res := s.result(Result{Kind: RefundCreated, Refund: &r})
	ev := webhook.RefundEvent(paygate.EventRefundCreated, r, now)
	u := paygate.Unit{Ops: []paygate.Op{paygate.NewRefund{Refund: r}, ev}}
	u.AddCompletion(req.completion(res))
	err := s.store.Commit(ctx, u)
	if err != nil {
		if code := paygate.ErrorCode(err); code == paygate.CodeNotFound || code == paygate.CodeInvalidRequest {
			return Result{}, err
		}
		return Result{}, fmt.Errorf("create refund: %w", err)
	}
	s.metrics.RefundStatus(r.Mode, r.Status)
	select {
	case s.refundKick <- struct{}{}:
	default:
	}
	return res, nil
}

// UpsertCustomer creates or updates a customer and stores the answer under
// the request's key. An upsert is idempotent by nature, so a crash between
// the two writes only leaves the key in flight until its lease passes.
func (s *Service) UpsertCustomer(ctx context.Context, req Request, externalID string, email *string, metadata []byte) (Result, error) {
	now := s.clock.Now()
	c, err := s.store.UpsertCustomer(ctx, paygate.CustomerUpsert{
		NewID: id.New(), MerchantID: req.MerchantID, Mode: req.Mode,
		ExternalID: externalID, Email: email, Metadata: metadata, Now: now,
	})
	if err != nil {
		return Result{}, fmt.Errorf("upsert customer: %w", err)
	}
	return s.storeResult(ctx, req, Result{Kind: CustomerSaved, Customer: &c})
}
