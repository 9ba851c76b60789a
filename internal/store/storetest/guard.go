package storetest

import (
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// guardCases covers paygate.GuardStore and the GuardChange operation: the
// card-testing guard's settings per merchant and mode (decisions §20).
func guardCases() []testCase {
	return []testCase{
		{"Defaults", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
				got, err := s.GuardSettings(ctx(t), f.merchant.ID, mode)
				must(t, err)
				equal(t, "defaults of "+string(mode), paygate.DefaultGuardSettings(f.merchant.ID, mode), got)
			}
			// A merchant that does not exist reads as the defaults.
			got, err := s.GuardSettings(ctx(t), newID(), paygate.ModeLive)
			must(t, err)
			if !got.Active() || len(got.Rules) != 4 {
				t.Errorf("unknown merchant's live settings: %+v, want the defaults", got)
			}
		}},
		{"ChangeAudited", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			c := paygate.GuardChange{MerchantID: f.merchant.ID, Mode: paygate.ModeTest, At: at(time.Minute),
				Settings: paygate.GuardRuleSettings{Rule: paygate.GuardCard, Enabled: true, Threshold: 2,
					Window: 90 * time.Second, Block: 3 * time.Hour}}
			audit := paygate.AuditEntry{ID: newID(), MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Email: "cli",
				Action: paygate.AuditGuardChanged, Target: string(paygate.GuardCard), Detail: c.Describe(), CreatedAt: at(time.Minute)}
			must(t, commit(ctx(t), s, c, audit))

			want := paygate.DefaultGuardSettings(f.merchant.ID, paygate.ModeTest)
			want.Rules[1] = c.Settings
			got, err := s.GuardSettings(ctx(t), f.merchant.ID, paygate.ModeTest)
			must(t, err)
			equal(t, "settings after the change", want, got)
			// Only that merchant and mode changed.
			got, err = s.GuardSettings(ctx(t), f.merchant.ID, paygate.ModeLive)
			must(t, err)
			equal(t, "the other mode", paygate.DefaultGuardSettings(f.merchant.ID, paygate.ModeLive), got)
			got, err = s.GuardSettings(ctx(t), other.merchant.ID, paygate.ModeTest)
			must(t, err)
			equal(t, "another merchant", paygate.DefaultGuardSettings(other.merchant.ID, paygate.ModeTest), got)
			log, err := s.AuditLog(ctx(t), paygate.AuditQuery{MerchantID: f.merchant.ID})
			must(t, err)
			if len(log) != 1 || log[0].Action != paygate.AuditGuardChanged {
				t.Errorf("audit log %+v, want one guard.changed entry", log)
			}

			// A second change replaces the first.
			c.Settings.Enabled, c.Settings.Threshold, c.At = false, 7, at(2*time.Minute)
			must(t, commit(ctx(t), s, c))
			want.Rules[1] = c.Settings
			got, err = s.GuardSettings(ctx(t), f.merchant.ID, paygate.ModeTest)
			must(t, err)
			equal(t, "settings after the second change", want, got)
		}},
		{"Refusals", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			ok := paygate.GuardRuleSettings{Rule: paygate.GuardCardIP, Enabled: true, Threshold: 3, Window: time.Hour, Block: time.Hour}
			ghost := paygate.GuardChange{MerchantID: newID(), Mode: paygate.ModeLive, Settings: ok, At: base}
			wantNotFound(t, commit(ctx(t), s, ghost))

			for _, c := range []struct {
				param string
				edit  func(*paygate.GuardRuleSettings)
			}{
				{"rule", func(r *paygate.GuardRuleSettings) { r.Rule = "card_country" }},
				{"threshold", func(r *paygate.GuardRuleSettings) { r.Threshold = 0 }},
				{"window", func(r *paygate.GuardRuleSettings) { r.Window = 0 }},
				{"block", func(r *paygate.GuardRuleSettings) { r.Block = -time.Second }},
			} {
				bad := ok
				c.edit(&bad)
				// The unit fails whole: the audit entry before it is not
				// written either.
				audit := paygate.AuditEntry{ID: newID(), MerchantID: f.merchant.ID, Mode: paygate.ModeLive, Email: "cli",
					Action: paygate.AuditGuardChanged, CreatedAt: base}
				err := commit(ctx(t), s, audit, paygate.GuardChange{MerchantID: f.merchant.ID, Mode: paygate.ModeLive, Settings: bad, At: base})
				wantCode(t, err, paygate.CodeInvalidRequest, c.param)
			}
			log, err := s.AuditLog(ctx(t), paygate.AuditQuery{MerchantID: f.merchant.ID})
			must(t, err)
			if len(log) != 0 {
				t.Errorf("audit log %+v after refused units, want none", log)
			}
			got, err := s.GuardSettings(ctx(t), f.merchant.ID, paygate.ModeLive)
			must(t, err)
			equal(t, "settings after refusals", paygate.DefaultGuardSettings(f.merchant.ID, paygate.ModeLive), got)
		}},
	}
}
