package sandbox

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

var _ paygate.Inquirer = (*Provider)(nil)

// The timings of card 4000000000000705 (decisions.md section 8): the sandbox
// times the charge out after TimeoutAfter, and an inquiry reports it
// captured InquiryDelay after that.
const (
	TimeoutAfter = 2 * time.Second
	InquiryDelay = 3 * time.Second
)

// Ledger is where a sandbox keeps what it received: durable in the gateway's
// database (paygate.Store implements it), as a remote provider's records
// are, or in memory for unit tests. Entries never hold card data.
type Ledger interface {
	// Commit applies a unit of SandboxCharge operations: each stores its
	// entry unless the provider has one for the payment (the first one
	// wins).
	Commit(ctx context.Context, u paygate.Unit) error
	// SandboxChargeByPayment returns the provider's entry for the payment,
	// or a NOT_FOUND *paygate.Error when it never received the payment.
	SandboxChargeByPayment(ctx context.Context, providerID, paymentID string) (paygate.SandboxCharge, error)
}

// WithLedger keeps the sandbox's ledger in l instead of in memory. Charge
// writes each entry to l before it answers.
func WithLedger(l Ledger) Option {
	return func(p *Provider) { p.ledger, p.withOutcome = l, false }
}

// WithOutcomeLedger keeps the sandbox's ledger in the gateway's store s, the
// store that commits the payments' outcomes, and lets the gateway commit
// the entry of a charge answered at once with the outcome (decisions.md
// section 22): Charge writes nothing and hands the entry back in
// ChargeResult.Commit, so a test-mode payment costs no round trip of its
// own for the ledger. Until the outcome commits, the sandbox has not
// received the payment as far as an inquiry can tell; a crash before that
// commit leaves neither, and recovery fails the payment with nothing
// charged (or, when the payment is written in that same unit, as the
// gateway does when RecordsWithOutcome says so, there is no payment to
// recover).
//
// A charge that is not answered at once still writes its entry first, as
// WithLedger does: card 4000000000000705, whose unknown outcome recovery
// learns from the entry, and every charge of a sandbox with a latency
// (WithLatency), which simulates a remote provider holding the charge while
// the gateway waits: a caller that stops waiting, or dies, during the
// latency leaves a charge the provider received, which recovery finds
// pending and then answered, as it would at a remote provider. The latency
// dwarfs that round trip.
func WithOutcomeLedger(s Ledger) Option {
	return func(p *Provider) { p.ledger, p.withOutcome = s, true }
}

// WithFailureRate makes the share rate (0 to 1) of charges fail as a real
// outage would: ProviderUnavailable with nothing processed, which moves the
// payment to the next provider of its route and counts against the
// provider's circuit breaker (unlike the test cards).
func WithFailureRate(rate float64) Option {
	return func(p *Provider) { p.failureRate = rate }
}

// WithClock sets the clock the ledger's times come from (default: the
// system clock). Waits are real time either way.
func WithClock(c paygate.Clock) Option {
	return func(p *Provider) { p.clock = c }
}

// CardOutcomeError is an error a test card produced on purpose. It says
// nothing about the provider's health, so circuit breakers ignore it (they
// look for the CardOutcome method); everything else sees the
// *paygate.ProviderError it wraps.
type CardOutcomeError struct{ Err *paygate.ProviderError }

// Error returns the provider error's text.
func (e *CardOutcomeError) Error() string { return e.Err.Error() }

// Unwrap returns the provider error.
func (e *CardOutcomeError) Unwrap() error { return e.Err }

// CardOutcome marks the error as a simulated fate of a card.
func (e *CardOutcomeError) CardOutcome() bool { return true }

// cardOutcome wraps an error of decide.
func cardOutcome(err error) error {
	var pe *paygate.ProviderError
	if errors.As(err, &pe) {
		return &CardOutcomeError{Err: pe}
	}
	return err
}

// Charge simulates a remote provider's charge. A context already done, or a
// simulated outage (WithFailureRate), is ProviderUnavailable with nothing
// processed. Otherwise the charge is decided from the test-card table (see
// decide) and, unless the card makes the provider unavailable, recorded in
// the ledger: written before anything is answered (from then on the
// provider has received it; a ledger that cannot be written leaves that
// unknown: ProviderUnknownOutcome), or, with WithOutcomeLedger and a charge
// answered at once, handed back in the result's Commit for the gateway to
// write with the outcome, with a card's error too. The answer comes after the latency. A context that
// ends before it is ProviderUnknownOutcome; card 4000000000000705 answers
// ProviderUnknownOutcome after TimeoutAfter on purpose. Errors that a test
// card chose are *CardOutcomeError; the others are *paygate.ProviderError.
//
// The payment id is the provider's idempotency key: a repeated charge of a
// payment gets the answer of the entry written first. With
// WithOutcomeLedger, Charge does not read the ledger (the gateway charges a
// payment once per provider), and the entry committed first is kept.
func (p *Provider) Charge(ctx context.Context, req paygate.ChargeRequest) (paygate.ChargeResult, error) {
	if ctx.Err() != nil {
		return paygate.ChargeResult{}, p.fail(paygate.ProviderUnavailable, msgCancelled)
	}
	if p.failureRate > 0 && rand.Float64() < p.failureRate {
		return paygate.ChargeResult{}, p.fail(paygate.ProviderUnavailable, msgOutage)
	}
	res, err := p.decide(ctx, req)
	var pe *paygate.ProviderError
	if err != nil && (!errors.As(err, &pe) || pe.Kind == paygate.ProviderUnavailable) {
		return paygate.ChargeResult{}, cardOutcome(err) // not received: nothing to record
	}
	timesOut := req.Card.Number.Reveal() == CardTimeout

	now := p.clock.Now()
	answerAt := now.Add(p.latency)
	entry := paygate.SandboxCharge{
		ProviderID: p.id, PaymentID: req.PaymentID, Mode: req.Mode, Amount: req.Amount,
		ReadyAt: answerAt, CreatedAt: now,
	}
	if timesOut {
		entry.ReadyAt = answerAt.Add(TimeoutAfter + InquiryDelay)
		answerAt = answerAt.Add(TimeoutAfter)
	}
	if pe != nil {
		entry.Outcome, entry.Message = paygate.SandboxErrored, pe.Message
	} else {
		entry.Outcome, entry.ProviderRef = outcomeOf(res.Status), res.ProviderRef
		entry.DeclineCode, entry.Message = res.DeclineCode, res.Message
	}
	stored := entry
	var commit []paygate.Op // the entry, when the outcome's unit writes it
	switch {
	case req.PaymentID == "":
	case p.RecordsWithOutcome(req):
		commit = []paygate.Op{entry} // answered at once: see WithOutcomeLedger
	default:
		if stored, err = p.record(ctx, entry); err != nil {
			// The write may have happened all the same: the outcome is
			// unknown, as a remote provider's would be when it fails
			// while recording a request. Recovery asks the ledger later.
			return paygate.ChargeResult{}, p.fail(paygate.ProviderUnknownOutcome, msgLedgerDown)
		}
	}
	if stored.Outcome != entry.Outcome {
		// A repeated charge of a payment decided otherwise before: the
		// payment id is the idempotency key, the first answer holds.
		res, pe = resultOf(stored), nil
		if stored.Outcome == paygate.SandboxErrored {
			pe = p.fail(paygate.ProviderFailed, stored.Message).(*paygate.ProviderError)
		}
		answerAt, timesOut = stored.ReadyAt, false
	}

	if err := p.waitUntil(ctx, answerAt); err != nil {
		// Received, but the caller stopped waiting: the outcome is unknown
		// to it. Not a card's doing: a real timeout.
		return paygate.ChargeResult{Commit: commit}, p.fail(paygate.ProviderUnknownOutcome, msgTimeout)
	}
	switch {
	case timesOut:
		return paygate.ChargeResult{}, cardOutcome(p.fail(paygate.ProviderUnknownOutcome, msgTimeout))
	case pe != nil:
		return paygate.ChargeResult{Commit: commit}, cardOutcome(pe)
	}
	res.Commit = commit
	return res, nil
}

// RecordsWithOutcome reports, before the call, whether Charge of req writes
// nothing itself and hands its ledger entry back in ChargeResult.Commit, to
// be committed with the payment's outcome: with WithOutcomeLedger, for a
// charge answered at once. Card 4000000000000705 and a sandbox with a
// latency write their entry during Charge, so the gateway stores the
// payment before calling (decisions.md section 22: recovery must find it);
// with RecordsWithOutcome true it may instead call first and write the
// payment once, with its outcome and the entry.
func (p *Provider) RecordsWithOutcome(req paygate.ChargeRequest) bool {
	return p.withOutcome && p.latency <= 0 && req.PaymentID != "" && req.Card.Number.Reveal() != CardTimeout
}

// record writes the entry unless the ledger has one for the payment, and
// returns the ledger's entry: the first one wins (entries never change
// once written, so the read after the write finds the winner).
func (p *Provider) record(ctx context.Context, entry paygate.SandboxCharge) (paygate.SandboxCharge, error) {
	if err := p.ledger.Commit(ctx, paygate.Unit{Ops: []paygate.Op{entry}}); err != nil {
		return paygate.SandboxCharge{}, err
	}
	return p.ledger.SandboxChargeByPayment(ctx, entry.ProviderID, entry.PaymentID)
}

// Inquire reports what the sandbox's ledger knows of the payment: unknown
// when it never received it (with WithOutcomeLedger: when the payment's
// outcome, which writes the entry, never committed), pending until the charge's processing time has
// passed, then its outcome. Errors: ProviderUnavailable when ctx is done or
// the ledger cannot be read (ask again later).
func (p *Provider) Inquire(ctx context.Context, paymentID string) (paygate.Inquiry, error) {
	if ctx.Err() != nil {
		return paygate.Inquiry{}, p.fail(paygate.ProviderUnavailable, msgCancelled)
	}
	c, err := p.ledger.SandboxChargeByPayment(ctx, p.id, paymentID)
	if paygate.IsNotFound(err) {
		return paygate.Inquiry{Status: paygate.InquiryUnknown}, nil
	}
	if err != nil {
		return paygate.Inquiry{}, p.fail(paygate.ProviderUnavailable, msgRecordsDown)
	}
	if p.clock.Now().Before(c.ReadyAt) {
		return paygate.Inquiry{Status: paygate.InquiryPending}, nil
	}
	if c.Outcome == paygate.SandboxErrored {
		return paygate.Inquiry{Status: paygate.InquiryErrored, Message: c.Message}, nil
	}
	return paygate.Inquiry{Status: paygate.InquiryAnswered, Result: resultOf(c)}, nil
}

// waitUntil waits until the clock says t, or ctx ends (its error).
func (p *Provider) waitUntil(ctx context.Context, t time.Time) error {
	d := t.Sub(p.clock.Now())
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// outcomeOf is the ledger's name of a charge result's status.
func outcomeOf(s paygate.PaymentStatus) paygate.SandboxOutcome {
	switch s {
	case paygate.PaymentAuthorized:
		return paygate.SandboxAuthorized
	case paygate.PaymentPending3DS:
		return paygate.SandboxPending3DS
	case paygate.PaymentFailed:
		return paygate.SandboxDeclined
	default:
		return paygate.SandboxCaptured
	}
}

// resultOf is the charge result a ledger entry records (the errored outcome
// has none).
func resultOf(c paygate.SandboxCharge) paygate.ChargeResult {
	res := paygate.ChargeResult{ProviderRef: c.ProviderRef}
	switch c.Outcome {
	case paygate.SandboxAuthorized:
		res.Status = paygate.PaymentAuthorized
	case paygate.SandboxPending3DS:
		res.Status = paygate.PaymentPending3DS
	case paygate.SandboxDeclined:
		res.Status, res.DeclineCode, res.Message = paygate.PaymentFailed, c.DeclineCode, c.Message
	default:
		res.Status = paygate.PaymentCaptured
	}
	return res
}

// MemoryLedger is a Ledger in memory, for tests and for sandboxes built
// without a database. It is safe for concurrent use.
type MemoryLedger struct {
	mu      sync.Mutex
	entries map[[2]string]paygate.SandboxCharge
}

var _ Ledger = (*MemoryLedger)(nil)

// NewMemoryLedger returns an empty ledger.
func NewMemoryLedger() *MemoryLedger {
	return &MemoryLedger{entries: make(map[[2]string]paygate.SandboxCharge)}
}

// Commit stores the entry of each SandboxCharge operation unless an entry
// exists; the unit is all or nothing: any other operation fails it before
// anything is stored.
func (l *MemoryLedger) Commit(_ context.Context, u paygate.Unit) error {
	for i, op := range u.Ops {
		if _, ok := op.(paygate.SandboxCharge); !ok {
			return fmt.Errorf("sandbox ledger: operation %d of the unit: %T is not a sandbox charge", i, op)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, op := range u.Ops {
		c := op.(paygate.SandboxCharge)
		k := [2]string{c.ProviderID, c.PaymentID}
		if _, ok := l.entries[k]; !ok {
			l.entries[k] = c
		}
	}
	return nil
}

// SandboxChargeByPayment returns the entry, or NOT_FOUND.
func (l *MemoryLedger) SandboxChargeByPayment(_ context.Context, providerID, paymentID string) (paygate.SandboxCharge, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.entries[[2]string{providerID, paymentID}]; ok {
		return c, nil
	}
	return paygate.SandboxCharge{}, paygate.Errorf(paygate.CodeNotFound, "", "no such sandbox charge")
}
