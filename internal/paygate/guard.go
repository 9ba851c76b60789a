package paygate

import (
	"context"
	"fmt"
	"time"
)

// GuardRule names one rule of the card-testing guard (decisions §20).
type GuardRule string

// The rules of the card-testing guard, in the order they are shown and
// checked (GuardRules).
const (
	// GuardCardIP counts declines of one card from one client address.
	GuardCardIP GuardRule = "card_ip"
	// GuardCard counts declines of one card, whoever pays.
	GuardCard GuardRule = "card"
	// GuardCustomer counts declines of one customerId.
	GuardCustomer GuardRule = "customer"
	// GuardIPCards counts distinct declined cards from one client address.
	GuardIPCards GuardRule = "ip_cards"
)

// GuardRules are the guard's rules in their order.
var GuardRules = []GuardRule{GuardCardIP, GuardCard, GuardCustomer, GuardIPCards}

// DeclineBlocked is the decline code of a payment the card-testing guard
// blocked before any provider saw it.
const DeclineBlocked = "blocked"

// AuditGuardChanged is the audit action of a change of the guard's
// settings.
const AuditGuardChanged = "guard.changed"

// Bounds of a rule's settings, checked by GuardRuleSettings.Validate.
const (
	MaxGuardThreshold = 10000
	MaxGuardDuration  = 720 * time.Hour
)

// GuardRuleSettings is one rule of a merchant's guard in one mode: when
// Enabled, Threshold declines within Window reach the provider and the
// next attempt is blocked for Block.
type GuardRuleSettings struct {
	Rule      GuardRule
	Enabled   bool
	Threshold int
	Window    time.Duration
	Block     time.Duration
}

// Validate checks the settings: a known rule, a threshold of 1 to
// MaxGuardThreshold, a window and a block of 1 s to MaxGuardDuration.
// Errors: INVALID_REQUEST with param rule, threshold, window or block.
func (r GuardRuleSettings) Validate() error {
	known := false
	for _, k := range GuardRules {
		known = known || k == r.Rule
	}
	switch {
	case !known:
		return Errorf(CodeInvalidRequest, "rule", "rule must be one of card_ip, card, customer, ip_cards")
	case r.Threshold < 1 || r.Threshold > MaxGuardThreshold:
		return Errorf(CodeInvalidRequest, "threshold", "threshold must be between 1 and %d", MaxGuardThreshold)
	case r.Window < time.Second || r.Window > MaxGuardDuration:
		return Errorf(CodeInvalidRequest, "window", "window must be between 1s and %s", MaxGuardDuration)
	case r.Block < time.Second || r.Block > MaxGuardDuration:
		return Errorf(CodeInvalidRequest, "block", "block must be between 1s and %s", MaxGuardDuration)
	}
	return nil
}

// GuardSettings are a merchant's guard rules in one mode, one per rule in
// the order of GuardRules.
type GuardSettings struct {
	MerchantID string
	Mode       Mode
	Rules      []GuardRuleSettings
}

// Rule returns the settings of rule r (the default when s lacks it).
func (s GuardSettings) Rule(r GuardRule) GuardRuleSettings {
	for _, x := range s.Rules {
		if x.Rule == r {
			return x
		}
	}
	return DefaultGuardRule(s.Mode, r)
}

// Active reports whether any rule is enabled.
func (s GuardSettings) Active() bool {
	for _, x := range s.Rules {
		if x.Enabled {
			return true
		}
	}
	return false
}

// DefaultGuardRule is rule r as it is before anyone changed it (decisions
// §20): on in live mode, off in test mode; card_ip 3 in 1h, card 5 in 1h,
// customer 10 in 1h, ip_cards 5 in 10m; every block 1h.
func DefaultGuardRule(mode Mode, r GuardRule) GuardRuleSettings {
	s := GuardRuleSettings{Rule: r, Enabled: mode == ModeLive, Window: time.Hour, Block: time.Hour}
	switch r {
	case GuardCardIP:
		s.Threshold = 3
	case GuardCard:
		s.Threshold = 5
	case GuardCustomer:
		s.Threshold = 10
	case GuardIPCards:
		s.Threshold, s.Window = 5, 10*time.Minute
	}
	return s
}

// DefaultGuardSettings are every rule's defaults for the mode.
func DefaultGuardSettings(merchantID string, mode Mode) GuardSettings {
	s := GuardSettings{MerchantID: merchantID, Mode: mode}
	for _, r := range GuardRules {
		s.Rules = append(s.Rules, DefaultGuardRule(mode, r))
	}
	return s
}

// GuardStore is the part of Store for the card-testing guard's settings.
// A change is a unit operation (GuardChange).
type GuardStore interface {
	// GuardSettings returns the guard's settings of (merchant, mode): the
	// stored ones, and the default of every rule never changed, in the
	// order of GuardRules. A merchant that does not exist has the defaults
	// (the guard reads settings on the payment path, after the key named
	// the merchant).
	GuardSettings(ctx context.Context, merchantID string, mode Mode) (GuardSettings, error)
}

// GuardChange is a unit operation: it stores the settings of one rule of
// (MerchantID, Mode), replacing what was stored. It fails the unit with
// NOT_FOUND when the merchant does not exist and with INVALID_REQUEST when
// the settings are not valid (GuardRuleSettings.Validate); a caller audits
// it with an AuditEntry of action AuditGuardChanged in the same unit.
type GuardChange struct {
	MerchantID string
	Mode       Mode
	Settings   GuardRuleSettings
	At         time.Time
}

func (GuardChange) unitOp() {}

// Describe is a short note of the change for the audit log.
func (c GuardChange) Describe() string {
	s := c.Settings
	return fmt.Sprintf("%s: enabled=%t threshold=%d window=%s block=%s", s.Rule, s.Enabled, s.Threshold, s.Window, s.Block)
}

// GuardAttempt is a card payment attempt as the card-testing guard sees it:
// who pays with which card from where. Card is the card's keyed
// fingerprint (decisions §15), never its number; Customer the request's
// customerId ("" when none); Addr the client address (section 15).
type GuardAttempt struct {
	MerchantID string
	Mode       Mode
	Card       string
	Customer   string
	Addr       string
	// ID names the attempt (the payment's id): a decline is counted once.
	ID string
}
