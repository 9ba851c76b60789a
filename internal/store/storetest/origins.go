package storetest

import (
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// originsCases covers paygate.OriginsStore and the OriginsChange
// operation: the origins allowed to embed a merchant's card fields, per
// merchant and mode (decisions §19).
func originsCases() []testCase {
	return []testCase{
		{"NoneByDefault", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
				got, err := s.AllowedOrigins(ctx(t), f.merchant.ID, mode)
				must(t, err)
				if got == nil || len(got) != 0 {
					t.Errorf("origins of a new merchant in %s mode: %#v, want an empty list", mode, got)
				}
			}
			got, err := s.AllowedOrigins(ctx(t), newID(), paygate.ModeLive)
			must(t, err)
			if got == nil || len(got) != 0 {
				t.Errorf("origins of an unknown merchant: %#v, want an empty list", got)
			}
		}},
		{"ReplaceAudited", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			c := paygate.OriginsChange{MerchantID: f.merchant.ID, Mode: paygate.ModeLive, At: at(time.Minute),
				Origins: []string{"https://shop.example", "https://www.shop.example:8443"}}
			audit := paygate.AuditEntry{ID: newID(), MerchantID: f.merchant.ID, Mode: paygate.ModeLive, Email: "cli",
				Action: paygate.AuditOriginsChanged, Detail: c.Describe(), CreatedAt: at(time.Minute)}
			must(t, commit(ctx(t), s, c, audit))
			got, err := s.AllowedOrigins(ctx(t), f.merchant.ID, paygate.ModeLive)
			must(t, err)
			equal(t, "origins after the change", c.Origins, got)
			// Only that merchant and mode changed.
			got, err = s.AllowedOrigins(ctx(t), f.merchant.ID, paygate.ModeTest)
			must(t, err)
			equal(t, "the other mode", []string{}, got)
			got, err = s.AllowedOrigins(ctx(t), other.merchant.ID, paygate.ModeLive)
			must(t, err)
			equal(t, "another merchant", []string{}, got)
			log, err := s.AuditLog(ctx(t), paygate.AuditQuery{MerchantID: f.merchant.ID})
			must(t, err)
			if len(log) != 1 || log[0].Action != paygate.AuditOriginsChanged {
				t.Errorf("audit log %+v, want one origins.changed entry", log)
			}

			// A second change replaces the list, in its order.
			c.Origins, c.At = []string{"https://b.example", "https://a.example"}, at(2*time.Minute)
			must(t, commit(ctx(t), s, c))
			got, err = s.AllowedOrigins(ctx(t), f.merchant.ID, paygate.ModeLive)
			must(t, err)
			equal(t, "origins after the second change", c.Origins, got)
			// An empty list clears it.
			c.Origins, c.At = nil, at(3*time.Minute)
			must(t, commit(ctx(t), s, c))
			got, err = s.AllowedOrigins(ctx(t), f.merchant.ID, paygate.ModeLive)
			must(t, err)
			equal(t, "origins after clearing", []string{}, got)
		}},
		{"Refusals", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			ghost := paygate.OriginsChange{MerchantID: newID(), Mode: paygate.ModeTest, Origins: []string{"https://a.example"}, At: base}
			wantNotFound(t, commit(ctx(t), s, ghost))
			must(t, commit(ctx(t), s, paygate.OriginsChange{MerchantID: f.merchant.ID, Mode: paygate.ModeLive,
				Origins: []string{"https://kept.example"}, At: base}))
			for _, bad := range [][]string{
				{"http://shop.example"},                         // live mode takes https only
				{"https://shop.example/checkout"},               // a path
				{"https://*.shop.example"},                      // a wildcard
				{"https://Shop.example"},                        // not normalized
				{"https://a.example", "https://a.example"},      // twice
				{"https://a.example:443"},                       // the default port is dropped
				{"https://a.example;frame-ancestors *"},         // CSP injection
				{"https://a.example", "javascript:alert(1)//x"}, // not http(s)
			} {
				// The unit fails whole: the audit entry before it is not
				// written either.
				audit := paygate.AuditEntry{ID: newID(), MerchantID: f.merchant.ID, Mode: paygate.ModeLive, Email: "cli",
					Action: paygate.AuditOriginsChanged, CreatedAt: base}
				err := commit(ctx(t), s, audit, paygate.OriginsChange{MerchantID: f.merchant.ID, Mode: paygate.ModeLive, Origins: bad, At: base})
				wantCode(t, err, paygate.CodeInvalidRequest, "origins")
			}
			log, err := s.AuditLog(ctx(t), paygate.AuditQuery{MerchantID: f.merchant.ID})
			must(t, err)
			if len(log) != 0 {
				t.Errorf("audit log %+v after refused units, want none", log)
			}
			got, err := s.AllowedOrigins(ctx(t), f.merchant.ID, paygate.ModeLive)
			must(t, err)
			equal(t, "origins after refusals", []string{"https://kept.example"}, got)
		}},
	}
}
