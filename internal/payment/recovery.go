package payment

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// Messages recovery stores on the payments it fails. They speak to the
// merchant, who may retry with a new Idempotency-Key.
const (
	msgNeverReached = "The payment did not reach the payment provider; nothing was charged. Retry with a new Idempotency-Key."
	msgNoProvider   = "The payment's provider is no longer configured; its outcome could not be confirmed."
	msgLost3DS      = "The payment needed 3-D Secure authentication, but the request was interrupted before it could start; nothing was charged."
)

// recoveryBatch bounds the payments one run takes on.
const recoveryBatch = 100

// Recovery finishes payments left in status created: those whose create
// call answered 202 (the provider's answer was unknown) and those a crash
// left behind. It takes a payment over only once the request that created it
// can no longer be working on it (its lease has passed, or the request
// handed it over by answering 202), claims it so that one node at a time
// asks about it, and asks the provider(s) for its status: the recorded
// provider, or every provider of its mode when none is recorded (the crash
// came before the answer was written). The first definite answer is written
// as the request would have written it: status, event and the stored answer
// of its idempotency key, in one transaction. A payment no provider knows is
// failed with PROVIDER_ERROR (nothing was charged). A payment some provider
// is still processing, or that a provider could not be asked about, is
// asked about again at the next run. The stored answer is written only
// where the key holds none: a request that answered 202 stored that 202,
// and its retries keep getting it (decisions §15); a request that never
// answered (its process died) left its key in flight, and retries get 409
// until recovery stores the final answer.
//
// Several nodes may run one each: claims keep them from asking about one
// payment at once, and the final write is a conditional transition, so a
// payment is finished once, with one event.
type Recovery struct {
	svc      *Service
	interval time.Duration

	job job
}

// NewRecovery returns a recovery job that runs at start and then every
// interval.
func (s *Service) NewRecovery(interval time.Duration) *Recovery {
	if interval <= 0 {
		interval = 5 * time.Second
	}
	return &Recovery{svc: s, interval: interval}
}

// Start launches the job; its first run begins at once. It returns at once.
func (r *Recovery) Start(ctx context.Context) error {
	r.job.start(ctx, r.interval, nil, r.runAll)
	return nil
}

// Stop stops the job and returns once its goroutine has exited; an inquiry
// in progress is abandoned (it changes nothing).
func (r *Recovery) Stop() { r.job.stop() }

// runAll runs batches while they come full and make progress: more may be
// waiting (after an outage), so it goes on at once. Claimed payments are
// not listed again, so this ends.
func (r *Recovery) runAll(ctx context.Context) {
	for more, _ := r.run(ctx); more && ctx.Err() == nil; {
		more, _ = r.run(ctx)
	}
}

// RunOnce takes over the payments that are due now (up to one batch) and
// returns how many it finished.
func (r *Recovery) RunOnce(ctx context.Context) int {
	_, n := r.run(ctx)
	return n
}

// run takes over one batch of due payments and returns how many it
// finished, and more: the batch was full and claims went through, so more
// payments may be due.
func (r *Recovery) run(ctx context.Context) (more bool, finished int) {
	s := r.svc
	now := s.clock.Now()
	payments, err := s.store.PaymentsToRecover(ctx, now, recoveryBatch)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("list payments to recover", "error", err)
		}
		return false, 0
	}
	// A claim lapses before the next run, so that a payment still being
	// processed is asked about again then (by this node or another).
	claimFor := r.interval * 9 / 10
	n, claims := 0, 0
	full := len(payments) == recoveryBatch
	for _, p := range payments {
		if ctx.Err() != nil {
			return false, n
		}
		at := s.clock.Now()
		claim := paygate.RecoveryClaim{MerchantID: p.MerchantID, Mode: p.Mode, PaymentID: p.ID, Now: at, Until: at.Add(claimFor)}
		err := s.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{claim}})
		if errors.Is(err, paygate.ErrStateConflict) || paygate.IsNotFound(err) {
			continue // claimed by another node, finished, or in its lease
		}
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("claim payment for recovery", "payment", p.ID, "error", err)
			}
			continue
		}
		claims++
		if r.recover(ctx, p) {
			n++
		}
	}
	return full && claims > 0, n
}

// recover asks about one claimed payment and finishes it when the answer
// is definite. It reports whether the payment was finished.
func (r *Recovery) recover(ctx context.Context, p paygate.Payment) bool {
	s := r.svc
	log := s.log.With(attrPayment(p))
	candidates, missing := r.candidates(p)
	if missing {
		log.Error("recovery: the payment's provider is no longer configured; failing it", "provider", p.ProviderID)
		return r.finish(ctx, p, paygate.ChargeResult{}, p.ProviderID,
			&paygate.ProviderError{Kind: paygate.ProviderFailed, Provider: p.ProviderID, Message: msgNoProvider})
	}
	undecided := false
	for _, prov := range candidates {
		inq, ok := prov.(paygate.Inquirer)
		if !ok {
			undecided = true
			log.Error("recovery: the provider cannot be asked for a payment's status; resolve it by hand", "provider", prov.ID())
			continue
		}
		ictx, cancel := context.WithTimeout(ctx, s.providerTimeout)
		start := time.Now()
		ans, err := inq.Inquire(ictx, p.ID)
		cancel()
		s.metrics.ProviderCall(prov.ID(), "inquire", time.Since(start), false, err)
		if err != nil {
			undecided = true
			if ctx.Err() == nil {
				pe := asProviderError(prov.ID(), err)
				log.Warn("recovery: status inquiry failed; will ask again", "provider", prov.ID(), "error", pe.Message)
			}
			continue
		}
		switch ans.Status {
		case paygate.InquiryUnknown:
			continue
		case paygate.InquiryPending:
			undecided = true
			log.Debug("recovery: the provider is still processing the payment", "provider", prov.ID())
		case paygate.InquiryErrored:
			return r.finish(ctx, p, paygate.ChargeResult{}, prov.ID(),
				&paygate.ProviderError{Kind: paygate.ProviderFailed, Provider: prov.ID(), Message: ans.Message})
		case paygate.InquiryAnswered:
			if ans.Result.Status == paygate.PaymentPending3DS {
				// No challenge was ever shown, so nothing was charged.
				return r.finish(ctx, p, paygate.ChargeResult{}, prov.ID(),
					&paygate.ProviderError{Kind: paygate.ProviderFailed, Provider: prov.ID(), Message: msgLost3DS})
			}
			return r.finish(ctx, p, ans.Result, prov.ID(), nil)
		}
	}
	if undecided || ctx.Err() != nil {
		return false
	}
	// No provider that could have received the payment knows it.
	return r.finish(ctx, p, paygate.ChargeResult{}, p.ProviderID,
		&paygate.ProviderError{Kind: paygate.ProviderFailed, Provider: p.ProviderID, Message: msgNeverReached})
}

// candidates lists the providers to ask: the recorded one (missing is true
// when it is no longer configured), or every provider of the payment's mode
// when none is recorded, drained or not.
func (r *Recovery) candidates(p paygate.Payment) (providers []paygate.Provider, missing bool) {
	s := r.svc
	if p.ProviderID != "" {
		prov, ok := s.router.Provider(p.Mode, p.ProviderID)
		if !ok {
			return nil, true
		}
		return []paygate.Provider{prov}, false
	}
	if l, ok := s.router.(interface {
		Providers(paygate.Mode) []paygate.Provider
	}); ok {
		return l.Providers(p.Mode), false
	}
	for _, routed := range s.router.Route(p.Mode, p.Amount.Currency) {
		if prov, ok := s.router.Provider(p.Mode, routed.ID()); ok {
			providers = append(providers, prov)
		}
	}
	return providers, false
}

// finish writes the outcome exactly as the create call does, answer
// included, and reports whether this call wrote it.
func (r *Recovery) finish(ctx context.Context, p paygate.Payment, res paygate.ChargeResult, providerID string, perr *paygate.ProviderError) bool {
	s := r.svc
	before := p.Status
	if id := s.settleRecoveredCard(ctx, p, res, perr); id != "" { // saveCard (storedcard.go)
		p.StoredCardID = id
	}
	out, err := s.finishCharge(ctx, p, res, providerID, perr, "")
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			s.log.Error("recovery: record the payment's outcome", "payment", p.ID, "error", err)
		}
		return false
	}
	if out.Payment != nil {
		s.metrics.Recovered(out.Payment.Status)
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "payment recovered", attrPayment(p),
		strAttr("from", string(before)), strAttr("provider", providerID), slog.Int("answer", out.answer.Status))
	return true
}
