package payment

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/webhook"
)

// RefundWorker drives refunds from created through pending to succeeded or
// failed at the provider that captured the payment. Several nodes may run
// one each: the move to pending is a conditional update, so one node wins a
// refund; a refund left pending (a crash, a provider error) is retried after
// staleAfter, and providers treat the refund id as an idempotency key.
type RefundWorker struct {
	svc        *Service
	interval   time.Duration
	staleAfter time.Duration
	job        job
}

// NewRefundWorker returns a worker that polls every interval (and at once
// when a refund is created) and retries refunds stuck in pending for longer
// than staleAfter.
func (s *Service) NewRefundWorker(interval, staleAfter time.Duration) *RefundWorker {
	return &RefundWorker{svc: s, interval: interval, staleAfter: staleAfter}
}

// Start launches the worker. It returns at once.
func (w *RefundWorker) Start(ctx context.Context) error {
	w.job.start(ctx, w.interval, w.svc.refundKick, func(ctx context.Context) { w.RunOnce(ctx) })
	return nil
}

// Stop stops the worker and returns once its goroutine has exited; a refund
// in the middle of a provider call finishes that call first.
func (w *RefundWorker) Stop() { w.job.stop() }

// RunOnce processes the refunds that are due now and returns how many it
// brought to a final status.
func (w *RefundWorker) RunOnce(ctx context.Context) int {
	s := w.svc
	refunds, err := s.store.RefundsToProcess(ctx, s.clock.Now().Add(-w.staleAfter), 50)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("list refunds to process", "error", err)
		}
		return 0
	}
	n := 0
	for _, r := range refunds {
		if ctx.Err() != nil {
			return n
		}
		if w.process(ctx, r) {
			n++
		}
	}
	return n
}

func (w *RefundWorker) process(ctx context.Context, r paygate.Refund) bool {
	s := w.svc
	log := s.log.With("refund", r.ID, "merchant", r.MerchantID, "mode", string(r.Mode))
	if r.Status == paygate.RefundCreated {
		err := s.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.RefundTransition{
			ID: r.ID, MerchantID: r.MerchantID, Mode: r.Mode,
			From: paygate.RefundCreated, To: paygate.RefundPending, UpdatedAt: s.clock.Now(),
		}}})
		if errors.Is(err, paygate.ErrStateConflict) {
			return false // another node took it
		}
		if err != nil {
			log.Error("mark refund pending", "error", err)
			return false
		}
		r.Status = paygate.RefundPending
		s.metrics.RefundStatus(r.Mode, r.Status)
	}
	p, err := s.store.PaymentByID(ctx, r.MerchantID, r.Mode, r.PaymentID)
	if err != nil {
		log.Error("load refunded payment", "error", err)
		return false
	}
	prov, ok := s.router.Provider(p.Mode, p.ProviderID)
	if !ok {
		return w.finish(ctx, r, paygate.RefundResult{Status: paygate.RefundFailed, FailureReason: msgRefundNoProvider})
	}
	pctx, cancel := s.providerContext(ctx)
	start := time.Now()
	res, err := prov.Refund(pctx, paygate.RefundRequest{
		RefundID: r.ID, PaymentID: p.ID, ProviderRef: p.ProviderRef, Amount: r.Amount, Reason: r.Reason,
	})
	cancel()
	s.metrics.ProviderCall(prov.ID(), "refund", time.Since(start), res.Status == paygate.RefundFailed, err)
	if err != nil {
		pe := asProviderError(prov.ID(), err)
		log.LogAttrs(ctx, levelFor(pe), "provider refund failed; will retry", strAttr("provider", prov.ID()), strAttr("error", pe.Message))
		return false
	}
	if res.Status == paygate.RefundPending || res.Status == paygate.RefundCreated {
		return false // the provider settles later; asked again when stale
	}
	return w.finish(ctx, r, res)
}

func (w *RefundWorker) finish(ctx context.Context, r paygate.Refund, res paygate.RefundResult) bool {
	s := w.svc
	now := s.clock.Now()
	to := paygate.RefundSucceeded
	typ := paygate.EventRefundSucceeded
	var reason string
	if res.Status == paygate.RefundFailed {
		to, typ = paygate.RefundFailed, paygate.EventRefundFailed
		reason = refundErrorMessage(res.FailureReason)
		r.ErrorCode, r.ErrorMessage = string(paygate.CodeProviderError), reason
	}
	r.Status, r.UpdatedAt = to, now
	err := s.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{
		paygate.RefundTransition{
			ID: r.ID, MerchantID: r.MerchantID, Mode: r.Mode,
			From: paygate.RefundPending, To: to, ProviderRef: res.ProviderRef, FailureReason: reason,
			ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage, UpdatedAt: now,
		},
		webhook.RefundEvent(typ, r, now),
	}})
	if errors.Is(err, paygate.ErrStateConflict) {
		return false
	}
	if err != nil && ctx.Err() != nil {
		// Stopping: the refund stays pending and the next start asks the
		// provider again (the refund id is its idempotency key).
		s.log.Info("refund outcome left for the next start", "refund", r.ID)
		return false
	}
	if err != nil {
		s.log.Error("record refund outcome", "refund", r.ID, "error", err)
		return false
	}
	s.metrics.RefundStatus(r.Mode, to)
	s.log.Info("refund processed", "refund", r.ID, "merchant", r.MerchantID, "status", string(to))
	return true
}

// Messages of failed refunds that speak for the gateway rather than for a
// provider.
const (
	msgRefundFailed     = "The refund failed at the payment provider."
	msgRefundNoProvider = "The payment's provider is no longer configured; the refund could not be sent to it."
)

// maxRefundErrorMessage bounds a failed refund's errorMessage, in bytes.
const maxRefundErrorMessage = 300

// cardLikeRun is a run of digits, with spaces or dashes between them, long
// enough to be (part of) a card number: 8 digits or more.
var cardLikeRun = regexp.MustCompile(`[0-9](?:[ -]?[0-9]){7,}`)

// refundErrorMessage makes a provider's reason for failing a refund fit to
// show to the merchant (decisions §15: errorMessage): long digit runs are
// masked so that no card number can come through, control characters
// become spaces, the length is bounded at a character boundary, and an
// empty reason gets a plain one.
func refundErrorMessage(reason string) string {
	reason = strings.ToValidUTF8(reason, "")
	reason = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, reason)
	reason = cardLikeRun.ReplaceAllString(reason, "[redacted]")
	reason = strings.Join(strings.Fields(reason), " ")
	if len(reason) > maxRefundErrorMessage {
		cut := maxRefundErrorMessage
		for cut > 0 && !utf8.RuneStart(reason[cut]) {
			cut--
		}
		reason = strings.TrimSpace(reason[:cut]) + "…"
	}
	if reason == "" {
		return msgRefundFailed
	}
	return reason
}
