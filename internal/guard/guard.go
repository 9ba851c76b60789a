// Package guard is the card-testing guard (decisions §20): per merchant and
// mode, rules count declined payments (CARD_DECLINED only) of one card from
// one address (card_ip), of one card (card), of one customer (customer) and
// of distinct cards from one address (ip_cards) over sliding windows, and
// block further attempts once a rule's threshold is reached.
//
// The counters live in Redis when it is configured, so that every node
// sees every decline, and in process otherwise (Counter). The settings are
// read from the store on every attempt, so that a change takes effect on
// the next payment on every node. A failure of either never blocks a
// payment: the guard fails open, logs (at most once a minute) and counts
// the failure (Metrics.GuardError).
package guard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// Counter keeps the declines and blocks of the rules. Implementations:
// Memory (one process) and Redis (shared by every node).
type Counter interface {
	// Check reports which of the rules blocks an attempt at now: the index
	// of the first whose block is active, or whose declines within its
	// window have reached its threshold (its block then starts at now and
	// its declines are forgotten, so that the block lasts exactly Block);
	// -1 when none does. An error means nothing was decided.
	Check(ctx context.Context, now time.Time, rules []Key) (int, error)
	// Record counts a decline at now under every key (Key.Member names it:
	// the same member counted twice is one entry, which is how ip_cards
	// counts distinct cards).
	Record(ctx context.Context, now time.Time, rules []Key) error
}

// Key is one rule's counter for one subject (a card, a card and an
// address, a customer, an address).
type Key struct {
	// Name identifies the counter: merchant, mode, rule and a hash of the
	// subject.
	Name      string
	Threshold int
	Window    time.Duration
	Block     time.Duration
	// Member names a decline in Record: the attempt's id, or the card's
	// fingerprint for ip_cards.
	Member string
}

// Settings reads a merchant's rules (paygate.Store implements it).
type Settings interface {
	GuardSettings(ctx context.Context, merchantID string, mode paygate.Mode) (paygate.GuardSettings, error)
}

// Metrics receives the guard's failures (internal/metrics implements it).
type Metrics interface {
	// GuardError counts a check or a record that failed open.
	GuardError()
}

// Config holds what a Guard needs.
type Config struct {
	Settings Settings // required
	Counter  Counter  // nil: a new Memory
	Clock    paygate.Clock
	Logger   *slog.Logger
	Metrics  Metrics
}

// Guard is the card-testing guard. It is safe for concurrent use.
type Guard struct {
	settings Settings
	counter  Counter
	clock    paygate.Clock
	log      *slog.Logger
	metrics  Metrics

	mu       sync.Mutex
	loggedAt time.Time // last failure logged
}

// New returns a guard. It panics without Settings, a wiring mistake.
func New(cfg Config) *Guard {
	if cfg.Settings == nil {
		panic("guard.New: Settings is required")
	}
	if cfg.Counter == nil {
		cfg.Counter = NewMemory()
	}
	if cfg.Clock == nil {
		cfg.Clock = paygate.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Guard{settings: cfg.Settings, counter: cfg.Counter, clock: cfg.Clock, log: cfg.Logger, metrics: cfg.Metrics}
}

// Check decides whether the attempt may reach a provider: it returns the
// rule that blocks it, or "" when none does. A failure to read the
// settings or the counters allows the attempt (fail open).
func (g *Guard) Check(ctx context.Context, a paygate.GuardAttempt) paygate.GuardRule {
	set, err := g.readSettings(ctx, a)
	if err != nil {
		g.failed(ctx, "read the guard's settings", err)
		return ""
	}
	rules, keys := keysOf(set, a)
	if len(keys) == 0 {
		return ""
	}
	i, err := g.counter.Check(ctx, g.clock.Now(), keys)
	if err != nil {
		g.failed(ctx, "check the guard's counters", err)
		return ""
	}
	if i < 0 || i >= len(rules) {
		return ""
	}
	return rules[i]
}

// Declined counts a CARD_DECLINED answer of a provider to the attempt
// (never a provider failure, nor a blocked attempt: the caller only calls
// it for a decline). A failure is logged and counted, and the decline is
// lost.
func (g *Guard) Declined(ctx context.Context, a paygate.GuardAttempt) {
	set, err := g.readSettings(ctx, a)
	if err != nil {
		g.failed(ctx, "read the guard's settings", err)
		return
	}
	_, keys := keysOf(set, a)
	if len(keys) == 0 {
		return
	}
	if err := g.counter.Record(ctx, g.clock.Now(), keys); err != nil {
		g.failed(ctx, "record a decline", err)
	}
}

// settingsTimeout bounds the read of the settings: the callers' contexts
// outlive the client (a decline must be counted even when the client hung
// up), and a store that does not answer must not hold a payment.
const settingsTimeout = time.Second

// readSettings reads the settings of the attempt's merchant and mode
// within settingsTimeout.
func (g *Guard) readSettings(ctx context.Context, a paygate.GuardAttempt) (paygate.GuardSettings, error) {
	ctx, cancel := context.WithTimeout(ctx, settingsTimeout)
	defer cancel()
	return g.settings.GuardSettings(ctx, a.MerchantID, a.Mode)
}

// failed counts a failure and logs it, at most once a minute.
func (g *Guard) failed(ctx context.Context, what string, err error) {
	if g.metrics != nil {
		g.metrics.GuardError()
	}
	now := time.Now()
	g.mu.Lock()
	quiet := !g.loggedAt.IsZero() && now.Sub(g.loggedAt) < time.Minute
	if !quiet {
		g.loggedAt = now
	}
	g.mu.Unlock()
	if !quiet {
		g.log.LogAttrs(ctx, slog.LevelWarn, "card-testing guard failed open: payments are not guarded",
			slog.String("operation", what), slog.String("error", err.Error()))
	}
}

// keysOf returns the enabled rules that apply to the attempt, and their
// counters' keys, in the order of paygate.GuardRules. A rule whose subject
// is unknown (no customer, no address, no card) does not apply.
func keysOf(set paygate.GuardSettings, a paygate.GuardAttempt) ([]paygate.GuardRule, []Key) {
	var rules []paygate.GuardRule
	var keys []Key
	for _, r := range paygate.GuardRules {
		s := set.Rule(r)
		if !s.Enabled {
			continue
		}
		var subject string
		member := a.ID
		if member == "" {
			member = rand.Text()
		}
		switch r {
		case paygate.GuardCardIP:
			if a.Card == "" || a.Addr == "" {
				continue
			}
			subject = a.Card + "\x00" + a.Addr
		case paygate.GuardCard:
			subject = a.Card
		case paygate.GuardCustomer:
			subject = a.Customer
		case paygate.GuardIPCards:
			if a.Card == "" {
				continue
			}
			subject, member = a.Addr, a.Card
		}
		if subject == "" {
			continue
		}
		rules = append(rules, r)
		keys = append(keys, Key{
			Name:      keyName(a.MerchantID, a.Mode, r, subject),
			Threshold: s.Threshold, Window: s.Window, Block: s.Block, Member: member,
		})
	}
	return rules, keys
}

// keyName names a counter. The subject is hashed: a customer id or an
// address is the merchant's data, and a hash bounds the key's length.
func keyName(merchantID string, mode paygate.Mode, r paygate.GuardRule, subject string) string {
	h := sha256.Sum256([]byte(subject))
	return merchantID + ":" + string(mode) + ":" + string(r) + ":" + hex.EncodeToString(h[:16])
}
