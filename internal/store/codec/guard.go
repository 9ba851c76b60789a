package codec

import (
	"fmt"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// GuardColumns are the columns of a guard_rules row that ScanGuardRule
// reads, in its order. enabled is PostgreSQL's boolean or SQLite's 0/1;
// window_ms and block_ms are milliseconds.
const GuardColumns = `rule, enabled, threshold, window_ms, block_ms`

// ScanGuardRule reads a row of GuardColumns.
func ScanGuardRule(row Scanner) (paygate.GuardRuleSettings, error) {
	var (
		r               paygate.GuardRuleSettings
		enabled         *bool
		windowMS, block int64
	)
	if err := row.Scan((*string)(&r.Rule), OptionalBool(&enabled), &r.Threshold, &windowMS, &block); err != nil {
		return paygate.GuardRuleSettings{}, err
	}
	if enabled == nil {
		return paygate.GuardRuleSettings{}, fmt.Errorf("codec: a guard rule's enabled is NULL")
	}
	r.Enabled = *enabled
	r.Window, r.Block = time.Duration(windowMS)*time.Millisecond, time.Duration(block)*time.Millisecond
	return r, nil
}

// GuardSettings completes the stored rules of (merchant, mode) with the
// defaults of the rules never changed, in the order of paygate.GuardRules.
// Rows of a rule this version does not know are left out.
func GuardSettings(merchantID string, mode paygate.Mode, stored []paygate.GuardRuleSettings) paygate.GuardSettings {
	s := paygate.DefaultGuardSettings(merchantID, mode)
	for i, def := range s.Rules {
		for _, r := range stored {
			if r.Rule == def.Rule {
				s.Rules[i] = r
			}
		}
	}
	return s
}

// GuardArgs are a change's values of the columns merchant_id, mode, rule,
// enabled, threshold, window_ms, block_ms, updated_at, in that order, with
// the time as each engine stores it (at).
func GuardArgs(c paygate.GuardChange, at any) []any {
	s := c.Settings
	return []any{c.MerchantID, string(c.Mode), string(s.Rule), s.Enabled, s.Threshold,
		s.Window.Milliseconds(), s.Block.Milliseconds(), at}
}
