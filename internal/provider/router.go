package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/sony/gobreaker/v2"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/connector"
	"github.com/paygate/paygate/internal/provider/score"
)

// ChargeBudget is how long after a payment's creation its charge may still
// be sent to a provider. A call is cut off at the budget's end, and none
// starts after it, so that no charge is on its way to a provider once the
// payment's lease (paygate.PaymentLease) has passed and the recovery job
// may ask the providers about it: an inquiry that finds nothing is then
// final. The margin covers clock differences between nodes.
const ChargeBudget = 15 * time.Second

var _ paygate.Router = (*Router)(nil)

// Member is one provider of a Router with its settings.
type Member struct {
	Mode     paygate.Mode
	Provider paygate.Provider
	Kind     string
	Timeout  time.Duration
	Breaker  BreakerConfig
}

// Router is the paygate.Router of a running gateway. Route returns a
// currency's route from the Table without the providers that are drained
// (SetDrained) or whose circuit breaker is open, each wrapped so that its
// charges have a deadline and feed its breaker. When that leaves nothing, it
// returns the route's providers as refusing stand-ins, so that the payment
// fails with "no provider is available" rather than "no provider serves".
//
// Provider and Providers return the providers themselves, unwrapped: a
// payment a provider processed goes back to it for capture, void, refund, 3-D
// Secure and status inquiries whether it is drained or not, through every
// optional interface the provider implements.
//
// A Router is safe for concurrent use.
type Router struct {
	table   *Table
	members map[paygate.Mode]map[string]*guarded
	sorted  map[paygate.Mode][]*guarded
	drained atomic.Pointer[map[string]bool]
	changed chan struct{}
	log     *slog.Logger
	now     func() time.Time
	metrics atomic.Pointer[Metrics] // SetMetrics; nil: none
	// scorer keeps the success_rate routes' windows (SetScorer); rnd
	// draws their exploration (SetRand).
	scorer atomic.Pointer[score.Scorer]
	rnd    atomic.Pointer[score.Rand]
}

// NewRouter returns a Router over the table. members gives the settings of
// providers (by mode and id) and may add providers that are in no route,
// kept for the payments they processed; a provider of the table without a
// member gets the default timeout and breaker. It fails when a member has
// no provider or two members share a mode and id.
func NewRouter(table *Table, members []Member, log *slog.Logger) (*Router, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Router{
		table:   table,
		members: map[paygate.Mode]map[string]*guarded{},
		sorted:  map[paygate.Mode][]*guarded{},
		changed: make(chan struct{}, 1),
		log:     log,
		now:     time.Now,
	}
	r.drained.Store(&map[string]bool{})
	r.SetScorer(nil)
	r.SetRand(nil)
	add := func(m Member) error {
		if m.Provider == nil || m.Provider.ID() == "" || !m.Mode.Valid() {
			return errors.New("provider: a router member needs a mode and a provider with an id")
		}
		if r.members[m.Mode] == nil {
			r.members[m.Mode] = map[string]*guarded{}
		}
		if _, dup := r.members[m.Mode][m.Provider.ID()]; dup {
			return fmt.Errorf("provider: %s mode: two members with id %s", m.Mode, m.Provider.ID())
		}
		g := r.guard(m)
		r.members[m.Mode][g.id] = g
		r.sorted[m.Mode] = append(r.sorted[m.Mode], g)
		return nil
	}
	for _, m := range members {
		if err := add(m); err != nil {
			return nil, err
		}
	}
	for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
		for _, p := range table.Providers(mode) {
			if g, ok := r.members[mode][p.ID()]; ok {
				if !same(g.p, p) {
					return nil, fmt.Errorf("provider: %s mode: the member %s is not the table's provider", mode, p.ID())
				}
				continue
			}
			if err := add(Member{Mode: mode, Provider: p, Timeout: DefaultTimeout, Breaker: DefaultBreaker()}); err != nil {
				return nil, err
			}
		}
	}
	for mode := range r.sorted {
		slices.SortFunc(r.sorted[mode], func(a, b *guarded) int { return strings.Compare(a.id, b.id) })
	}
	return r, nil
}

// Route returns the providers to try for a currency, in order: the route's
// providers that are not drained, whose breaker is not open, and that
// accept the currency. See Router. A success_rate route is ordered as for
// a card of no known brand (RouteCard).
func (r *Router) Route(mode paygate.Mode, currency string) []paygate.Provider {
	return r.RouteCard(mode, currency, "")
}

// RouteCard is Route for a card of the brand. When the currency's route
// has strategy success_rate (decisions §21), one of the available
// providers is chosen first from the scores of the route's providers for
// the currency and brand (score.Choose): a provider with an open breaker
// or drained is never chosen whatever its score; the others follow in
// route order, for failover. The charges of a success_rate route feed
// those scores.
func (r *Router) RouteCard(mode paygate.Mode, currency, brand string) []paygate.Provider {
	currency = strings.ToUpper(currency)
	static := r.table.Route(mode, currency)
	drained := *r.drained.Load()
	out := make([]paygate.Provider, 0, len(static))
	var sc *scoring
	if set, ok := r.table.SuccessRate(mode, currency); ok {
		sc = &scoring{group: score.Group{Mode: mode, Currency: currency, Brand: brand}, settings: set}
	}
	for _, p := range static {
		g := r.members[mode][p.ID()]
		if g == nil || drained[g.id] || g.cb.State() == gobreaker.StateOpen || !accepts(g.p, currency) {
			continue
		}
		out = append(out, &routed{g: g, sc: sc})
	}
	if sc != nil && len(out) > 1 {
		r.choose(sc, out)
	}
	if len(out) > 1 {
		// The entry tried first, with others behind it (after choose:
		// the position the payment really tries it at).
		out[0].(*routed).head = true
	}
	if len(out) > 0 || len(static) == 0 {
		return out
	}
	for _, p := range static {
		g := r.members[mode][p.ID()]
		if g == nil {
			continue
		}
		reason := "The payment provider is temporarily out of rotation."
		switch {
		case drained[g.id]:
			reason = "The payment provider is drained by the operator."
		case !accepts(g.p, currency):
			reason = "The payment provider does not serve this currency."
		}
		out = append(out, g.route(reason))
	}
	return out
}

// Provider returns the provider with the id in the mode, unwrapped, drained
// or not.
func (r *Router) Provider(mode paygate.Mode, id string) (paygate.Provider, bool) {
	g, ok := r.members[mode][id]
	if !ok {
		return nil, false
	}
	return g.p, true
}

// Providers lists every provider of the mode, unwrapped, sorted by id: the
// ones a payment of the mode may have been sent to.
func (r *Router) Providers(mode paygate.Mode) []paygate.Provider {
	out := make([]paygate.Provider, len(r.sorted[mode]))
	for i, g := range r.sorted[mode] {
		out[i] = g.p
	}
	return out
}

// Table returns the static routing table.
func (r *Router) Table() *Table { return r.table }

// SetDrained replaces the set of drained provider ids (in every mode).
func (r *Router) SetDrained(ids map[string]bool) {
	cp := make(map[string]bool, len(ids))
	for id, d := range ids {
		if d {
			cp[id] = true
		}
	}
	old := r.drained.Swap(&cp)
	for id := range cp {
		if !(*old)[id] {
			r.log.Warn("provider drained: out of every route", "provider", id)
		}
	}
	for id := range *old {
		if !cp[id] {
			r.log.Info("provider restored: back in its routes", "provider", id)
		}
	}
}

// Drained reports whether the provider id is drained.
func (r *Router) Drained(id string) bool { return (*r.drained.Load())[id] }

// Changed is signalled (without blocking, coalesced) when a breaker
// changes state.
func (r *Router) Changed() <-chan struct{} { return r.changed }

// Status is a provider's current state on this node.
type Status struct {
	Mode       paygate.Mode
	ID         string
	Kind       string
	Currencies []string // nil: every currency
	Timeout    time.Duration
	Drained    bool
	Breaker    paygate.BreakerState
	Since      time.Time // when the breaker entered its state
}

// Statuses lists every provider's state, by mode then id.
func (r *Router) Statuses() []Status {
	var out []Status
	for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
		for _, g := range r.sorted[mode] {
			out = append(out, Status{
				Mode: mode, ID: g.id, Kind: g.kind, Currencies: currenciesOf(g.p), Timeout: g.timeout,
				Drained: r.Drained(g.id), Breaker: breakerState(g.cb.State()), Since: time.UnixMicro(g.since.Load()).UTC(),
			})
		}
	}
	return out
}

// currenciesOf returns what a provider says it accepts (sandboxes do), nil
// for every currency or when it does not say.
func currenciesOf(p paygate.Provider) []string {
	if c, ok := p.(interface{ Currencies() []string }); ok {
		return c.Currencies()
	}
	return nil
}

// accepts reports whether a provider takes payments in the currency, when
// it says (sandboxes do); a provider that does not say takes every one.
func accepts(p paygate.Provider, currency string) bool {
	if s, ok := p.(interface{ Serves(string) bool }); ok {
		return s.Serves(currency)
	}
	return true
}

func breakerState(s gobreaker.State) paygate.BreakerState {
	switch s {
	case gobreaker.StateOpen:
		return paygate.BreakerOpen
	case gobreaker.StateHalfOpen:
		return paygate.BreakerHalfOpen
	default:
		return paygate.BreakerClosed
	}
}

// guarded is a provider with its deadline and circuit breaker.
type guarded struct {
	id      string
	mode    paygate.Mode
	kind    string
	p       paygate.Provider
	timeout time.Duration
	cb      *gobreaker.CircuitBreaker[paygate.ChargeResult]
	since   atomic.Int64 // unix microseconds of the last state change
	router  *Router
}

func (r *Router) guard(m Member) *guarded {
	g := &guarded{id: m.Provider.ID(), mode: m.Mode, kind: m.Kind, p: m.Provider, timeout: m.Timeout, router: r}
	if g.timeout <= 0 || g.timeout > MaxTimeout {
		g.timeout = DefaultTimeout
	}
	b := m.Breaker
	if b.Failures == 0 {
		b.Failures = DefaultBreakerFailures
	}
	if b.OpenFor <= 0 {
		b.OpenFor = DefaultBreakerOpenFor
	}
	if b.Probes == 0 {
		b.Probes = DefaultBreakerProbes
	}
	g.since.Store(r.now().UnixMicro())
	g.cb = gobreaker.NewCircuitBreaker[paygate.ChargeResult](gobreaker.Settings{
		Name:        string(m.Mode) + "/" + g.id,
		MaxRequests: b.Probes,
		Timeout:     b.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= b.Failures },
		IsSuccessful: func(err error) bool {
			return err == nil
		},
		IsExcluded: excludedFromBreaker,
		// Called with the breaker's lock held: no call back into it.
		OnStateChange: func(_ string, from, to gobreaker.State) {
			g.since.Store(r.now().UnixMicro())
			lvl := slog.LevelInfo
			if to == gobreaker.StateOpen {
				lvl = slog.LevelWarn
			}
			r.log.Log(context.Background(), lvl, "provider circuit breaker changed state",
				"provider", g.id, "mode", string(g.mode), "from", string(breakerState(from)), "to", string(breakerState(to)))
			r.observer().BreakerState(g.id, breakerState(to))
			select {
			case r.changed <- struct{}{}:
			default:
			}
		},
	})
	return g
}

// cardOutcome is implemented by errors that a test card produced on
// purpose (sandbox.CardOutcomeError): they say nothing of a provider's
// health.
type cardOutcome interface{ CardOutcome() bool }

// excludedFromBreaker tells the errors that neither count for nor against a
// provider: a test card's simulated fate, and a call the caller abandoned.
func excludedFromBreaker(err error) bool {
	var co cardOutcome
	if errors.As(err, &co) && co.CardOutcome() {
		return true
	}
	return errors.Is(err, context.Canceled)
}

// route returns the provider as a route entry; a non-empty reason makes it
// refuse every charge (nothing processed).
func (g *guarded) route(refuse string) paygate.Provider {
	return &routed{g: g, refuse: refuse}
}

// routed is a provider as Route hands it out: charges go through the
// breaker with their deadline; everything else goes to the provider.
type routed struct {
	g      *guarded
	refuse string
	// sc is set for the entries of a success_rate route: the outcome of
	// each charge goes to the scorer.
	sc *scoring
	// head is set on the route's first entry when others follow it: its
	// charges tell the provider so (connector.WithRoutePosition).
	head bool
}

func (r *routed) ID() string { return r.g.id }

// LedgerInGateway says what the provider behind the breaker says, so that
// the wrapper does not hide the connector's declaration from the store
// (store/plan.GatewayLedger decides how a payment's insert commits).
func (r *routed) LedgerInGateway() bool {
	l, ok := r.g.p.(interface{ LedgerInGateway() bool })
	return ok && l.LedgerInGateway()
}

// RecordsWithOutcome says what the provider behind the breaker says, for
// the same reason (payment.OutcomeRecorder: whether a charge may be made
// before its payment is stored). A refused entry sends nothing, but it
// answers as its provider would, so that whether a payment is stored
// before its call does not depend on a breaker's state.
func (r *routed) RecordsWithOutcome(req paygate.ChargeRequest) bool {
	o, ok := r.g.p.(interface {
		RecordsWithOutcome(paygate.ChargeRequest) bool
	})
	return ok && o.RecordsWithOutcome(req)
}

// Charge charges through the breaker, within the provider's timeout and the
// payment's ChargeBudget. A refused, broken-open or over-budget call is
// ProviderUnavailable with nothing sent.
func (r *routed) Charge(ctx context.Context, req paygate.ChargeRequest) (res paygate.ChargeResult, err error) {
	g := r.g
	ctx, span := g.startCall(ctx, "charge", req.PaymentID) // tracing.go
	defer func() { endCall(span, res.Status, err) }()
	if r.refuse != "" {
		return paygate.ChargeResult{}, g.unavailable(r.refuse)
	}
	ctx = connector.WithRoutePosition(ctx, r.head)
	now := g.router.now()
	deadline := chargeStart(req.PaymentID, now).Add(ChargeBudget)
	if !now.Before(deadline) {
		return paygate.ChargeResult{}, g.unavailable("The payment's time for provider calls is spent.")
	}
	if d := now.Add(g.timeout); d.Before(deadline) {
		deadline = d
	}
	res, err = g.cb.Execute(func() (paygate.ChargeResult, error) {
		cctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		start := time.Now()
		res, err := g.p.Charge(cctx, req)
		var pe *paygate.ProviderError
		if err != nil && !errors.As(err, &pe) && cctx.Err() != nil && ctx.Err() == nil {
			// A connector that answered its context's error: our deadline
			// passed after the request was sent.
			err = &paygate.ProviderError{Kind: paygate.ProviderUnknownOutcome, Provider: g.id, Message: "The payment provider did not answer in time."}
		}
		g.router.observer().ProviderCall(g.id, "charge", time.Since(start), res.Status == paygate.PaymentFailed, err)
		return res, err
	})
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return paygate.ChargeResult{}, g.unavailable("The payment provider is temporarily out of rotation.")
	}
	if r.sc != nil {
		if o, ok := scoreOutcome(res, err); ok {
			g.router.Scorer().Record(ctx, r.sc.group, g.id, r.sc.settings.Window, o)
		}
	}
	return res, err
}

func (r *routed) Capture(ctx context.Context, op paygate.PaymentOp) error {
	return r.g.p.Capture(ctx, op)
}

func (r *routed) Void(ctx context.Context, op paygate.PaymentOp) error {
	return r.g.p.Void(ctx, op)
}

func (r *routed) Refund(ctx context.Context, req paygate.RefundRequest) (paygate.RefundResult, error) {
	return r.g.p.Refund(ctx, req)
}

func (g *guarded) unavailable(msg string) error {
	return &paygate.ProviderError{Kind: paygate.ProviderUnavailable, Provider: g.id, Message: msg}
}

// chargeStart is when the payment was created: the time in its UUIDv7 id
// (minted with the payment), or now for an id of another form. A time
// after now (another node's clock ahead) counts as now.
func chargeStart(paymentID string, now time.Time) time.Time {
	u, err := uuid.Parse(paymentID)
	if err != nil || u.Version() != 7 {
		return now
	}
	sec, nsec := u.Time().UnixTime()
	t := time.Unix(sec, nsec)
	if t.After(now) {
		return now
	}
	return t
}
