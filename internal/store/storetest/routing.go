package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// handOver records the provider of a created payment, as the create call
// does when the provider's answer is unknown (202): the payment stays
// created and names its provider.
func handOver(t *testing.T, s paygate.Store, p paygate.Payment, providerID string, when time.Time) paygate.Payment {
	t.Helper()
	must(t, s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
		ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
		From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentCreated,
		ProviderID: providerID, UpdatedAt: when,
	}, nil, nil)))
	got, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
	must(t, err)
	return got
}

// recoverIDs lists the ids PaymentsToRecover returns at now.
func recoverIDs(t *testing.T, s paygate.Store, now time.Time, limit int) []string {
	t.Helper()
	ps, err := s.PaymentsToRecover(ctx(t), now, limit)
	must(t, err)
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	return ids
}

// recordSandboxCharge commits the entry, as a sandbox provider's charge
// does, and returns the provider's stored entry for the payment.
func recordSandboxCharge(t *testing.T, s paygate.Store, c paygate.SandboxCharge) (paygate.SandboxCharge, error) {
	if err := commitOp(ctx(t), s, c); err != nil {
		return paygate.SandboxCharge{}, err
	}
	return s.SandboxChargeByPayment(ctx(t), c.ProviderID, c.PaymentID)
}

func sandboxChargeValue(providerID, paymentID string, created time.Time) paygate.SandboxCharge {
	return paygate.SandboxCharge{
		ProviderID: providerID, PaymentID: paymentID, Mode: paygate.ModeTest,
		Amount:  paygate.Money{Amount: 1050, Currency: "EUR"},
		Outcome: paygate.SandboxDeclined, ProviderRef: "sbx_" + paymentID[:8],
		DeclineCode: paygate.DeclineInsufficientFunds, Message: "Your card has insufficient funds.",
		ReadyAt: created.Add(3 * time.Second), CreatedAt: created,
	}
}

func routingCases() []testCase {
	return []testCase{
		{"ProviderStatesEmpty", func(t *testing.T, s paygate.Store) {
			got, err := s.ProviderStates(ctx(t))
			must(t, err)
			if len(got) != 0 {
				t.Fatalf("a fresh store has provider states %+v", got)
			}
		}},
		{"DrainAndRestore", func(t *testing.T, s paygate.Store) {
			// set commits a ProviderDrain and reads the provider's stored
			// state back.
			set := func(id string, drained bool, when time.Time) (paygate.ProviderState, error) {
				if err := commitOp(ctx(t), s, paygate.ProviderDrain{ProviderID: id, Drained: drained, At: when}); err != nil {
					return paygate.ProviderState{}, err
				}
				states, err := s.ProviderStates(ctx(t))
				for _, st := range states {
					if st.ProviderID == id {
						return st, err
					}
				}
				t.Fatalf("no state of %s after a ProviderDrain: %+v", id, states)
				return paygate.ProviderState{}, err
			}
			st, err := set("sandbox-eu", true, at(time.Minute))
			must(t, err)
			drained := paygate.ProviderState{ProviderID: "sandbox-eu", Drained: true, UpdatedAt: at(time.Minute)}
			equal(t, "drained state", drained, st)
			// Draining again keeps the time it was drained.
			st, err = set("sandbox-eu", true, at(2*time.Minute))
			must(t, err)
			equal(t, "drained again", drained, st)
			_, err = set("sandbox-apac", false, at(3*time.Minute))
			must(t, err)
			got, err := s.ProviderStates(ctx(t))
			must(t, err)
			equal(t, "states", []paygate.ProviderState{
				{ProviderID: "sandbox-apac", Drained: false, UpdatedAt: at(3 * time.Minute)},
				drained,
			}, got)
			st, err = set("sandbox-eu", false, at(4*time.Minute))
			must(t, err)
			restored := paygate.ProviderState{ProviderID: "sandbox-eu", Drained: false, UpdatedAt: at(4 * time.Minute)}
			equal(t, "restored state", restored, st)
			got, err = s.ProviderStates(ctx(t))
			must(t, err)
			equal(t, "states after restore", []paygate.ProviderState{
				{ProviderID: "sandbox-apac", Drained: false, UpdatedAt: at(3 * time.Minute)},
				restored,
			}, got)
		}},
		{"SandboxApprovalOverride", func(t *testing.T, s paygate.Store) {
			stateOf := func(id string) paygate.ProviderState {
				t.Helper()
				states, err := s.ProviderStates(ctx(t))
				must(t, err)
				for _, st := range states {
					if st.ProviderID == id {
						return st
					}
				}
				t.Fatalf("no state of %s: %+v", id, states)
				return paygate.ProviderState{}
			}
			rate := func(r float64) *float64 { return &r }
			when := func(d time.Duration) *time.Time { t := at(d); return &t }
			// A provider without a state gets one, not drained, never
			// drained or restored (no DrainChangedAt).
			must(t, commitOp(ctx(t), s, paygate.SandboxApproval{ProviderID: "sandbox-a", Rate: rate(0.6), At: at(time.Minute)}))
			equal(t, "override of a provider without a state", paygate.ProviderState{
				ProviderID: "sandbox-a", UpdatedAt: time.Unix(0, 0).UTC(), ApprovalRate: rate(0.6), ApprovalAt: when(time.Minute),
			}, stateOf("sandbox-a"))
			if c := stateOf("sandbox-a").DrainChangedAt(); c != nil {
				t.Fatalf("a provider only overridden has a drain change at %s", c)
			}
			// A drain keeps the override; a new override keeps the drain.
			must(t, commitOp(ctx(t), s, paygate.ProviderDrain{ProviderID: "sandbox-a", Drained: true, At: at(2 * time.Minute)}))
			must(t, commitOp(ctx(t), s, paygate.SandboxApproval{ProviderID: "sandbox-a", Rate: rate(0.95), At: at(3 * time.Minute)}))
			equal(t, "override of a drained provider", paygate.ProviderState{
				ProviderID: "sandbox-a", Drained: true, UpdatedAt: at(2 * time.Minute), ApprovalRate: rate(0.95), ApprovalAt: when(3 * time.Minute),
			}, stateOf("sandbox-a"))
			// The bounds are stored exactly.
			must(t, commitOp(ctx(t), s, paygate.SandboxApproval{ProviderID: "sandbox-b", Rate: rate(0), At: at(4 * time.Minute)}))
			equal(t, "rate 0", rate(0), stateOf("sandbox-b").ApprovalRate)
			// Clearing forgets rate and time, and keeps the drain.
			must(t, commitOp(ctx(t), s, paygate.SandboxApproval{ProviderID: "sandbox-a", At: at(5 * time.Minute)}))
			equal(t, "cleared override", paygate.ProviderState{
				ProviderID: "sandbox-a", Drained: true, UpdatedAt: at(2 * time.Minute),
			}, stateOf("sandbox-a"))
			// A rate out of 0..1 is refused by the schema, as a last guard.
			if err := commitOp(ctx(t), s, paygate.SandboxApproval{ProviderID: "sandbox-b", Rate: rate(1.5), At: at(6 * time.Minute)}); err == nil {
				t.Fatal("a rate of 1.5 was stored")
			}
			equal(t, "rate after a refused write", rate(0), stateOf("sandbox-b").ApprovalRate)
		}},
		{"BreakerReports", func(t *testing.T, s paygate.Store) {
			a := []paygate.BreakerReport{
				{Node: "a", Mode: paygate.ModeTest, ProviderID: "sandbox-eu", State: paygate.BreakerOpen, Since: at(time.Second)},
				{Node: "a", Mode: paygate.ModeTest, ProviderID: "sandbox-global", State: paygate.BreakerClosed, Since: base},
			}
			b := []paygate.BreakerReport{
				{Node: "b", Mode: paygate.ModeTest, ProviderID: "sandbox-eu", State: paygate.BreakerHalfOpen, Since: at(2 * time.Second)},
				{Node: "b", Mode: paygate.ModeLive, ProviderID: "sandbox-eu", State: paygate.BreakerClosed, Since: base},
			}
			must(t, commitOp(ctx(t), s, paygate.BreakerReplacement{Node: "a", Reports: a, At: at(time.Minute)}))
			must(t, commitOp(ctx(t), s, paygate.BreakerReplacement{Node: "b", Reports: b, At: at(2 * time.Minute)}))
			stamp := func(rs []paygate.BreakerReport, when time.Time) []paygate.BreakerReport {
				out := make([]paygate.BreakerReport, len(rs))
				for i, r := range rs {
					r.ReportedAt = when
					out[i] = r
				}
				return out
			}
			sa, sb := stamp(a, at(time.Minute)), stamp(b, at(2*time.Minute))
			got, err := s.BreakerReports(ctx(t), base)
			must(t, err)
			// Sorted by provider, mode, node.
			equal(t, "reports", []paygate.BreakerReport{sb[1], sa[0], sb[0], sa[1]}, got)
			got, err = s.BreakerReports(ctx(t), at(2*time.Minute))
			must(t, err)
			equal(t, "reports since b's", []paygate.BreakerReport{sb[1], sb[0]}, got)

			// A new report replaces every report of the node.
			a2 := []paygate.BreakerReport{{Node: "a", Mode: paygate.ModeTest, ProviderID: "sandbox-eu", State: paygate.BreakerClosed, Since: at(3 * time.Minute)}}
			must(t, commitOp(ctx(t), s, paygate.BreakerReplacement{Node: "a", Reports: a2, At: at(3 * time.Minute)}))
			got, err = s.BreakerReports(ctx(t), base)
			must(t, err)
			equal(t, "reports after a's new report", []paygate.BreakerReport{sb[1], stamp(a2, at(3*time.Minute))[0], sb[0]}, got)

			// No reports forget the node; the two nodes go in one unit.
			must(t, commitOp(ctx(t), s, paygate.BreakerReplacement{Node: "b"},
				paygate.BreakerReplacement{Node: "a", At: at(4 * time.Minute)}))
			got, err = s.BreakerReports(ctx(t), base)
			must(t, err)
			if len(got) != 0 {
				t.Fatalf("reports after forgetting b and an empty report of a: %+v", got)
			}
		}},
		{"RoutingScores", func(t *testing.T, s paygate.Store) {
			score := func(node string, mode paygate.Mode, prov, cur, brand string, attempts, approved int64, share float64) paygate.RoutingScore {
				sc := 0.0
				if attempts > 0 {
					sc = float64(approved) / float64(attempts)
				}
				return paygate.RoutingScore{Mode: mode, ProviderID: prov, Currency: cur, Brand: brand,
					Attempts: attempts, Approved: approved, Score: sc, Share: share, Node: node}
			}
			stamp := func(rs []paygate.RoutingScore, when time.Time) []paygate.RoutingScore {
				out := make([]paygate.RoutingScore, len(rs))
				for i, r := range rs {
					r.UpdatedAt = when
					out[i] = r
				}
				return out
			}
			test := paygate.ModeTest
			got, err := s.RoutingScores(ctx(t), test, base)
			must(t, err)
			if got == nil || len(got) != 0 {
				t.Fatalf("scores before any report: %#v, want an empty list", got)
			}
			a := []paygate.RoutingScore{
				score("a", paygate.ModeTest, "sandbox-b", "EUR", "visa", 200, 120, 0.25),
				score("a", paygate.ModeTest, "sandbox-a", "EUR", "visa", 200, 190, 0.75),
				score("a", paygate.ModeTest, "sandbox-a", "EUR", "mastercard", 3, 0, 1),
				score("a", paygate.ModeLive, "adyen", "EUR", "visa", 0, 0, 0),
			}
			b := []paygate.RoutingScore{
				score("b", paygate.ModeTest, "sandbox-a", "EUR", "visa", 180, 171, 0.7),
				score("b", paygate.ModeTest, "sandbox-a", "USD", "visa", 10, 5, 1),
			}
			must(t, commitOp(ctx(t), s, paygate.RoutingScoreReplacement{Node: "a", Scores: a, At: at(time.Minute)}))
			must(t, commitOp(ctx(t), s, paygate.RoutingScoreReplacement{Node: "b", Scores: b, At: at(2 * time.Minute)}))
			sa, sb := stamp(a, at(time.Minute)), stamp(b, at(2*time.Minute))
			got, err = s.RoutingScores(ctx(t), test, base)
			must(t, err)
			// Per (currency, brand) of the mode, one node's whole snapshot,
			// the latest: b's for EUR visa (its sandbox-a alone, never mixed
			// with a's sandbox-b), a's for EUR mastercard; sorted by
			// currency, brand, provider. The live score is not there.
			equal(t, "scores", []paygate.RoutingScore{sa[2], sb[0], sb[1]}, got)
			got, err = s.RoutingScores(ctx(t), paygate.ModeLive, base)
			must(t, err)
			equal(t, "live scores", []paygate.RoutingScore{sa[3]}, got)
			got, err = s.RoutingScores(ctx(t), test, at(2*time.Minute))
			must(t, err)
			equal(t, "scores since b's", []paygate.RoutingScore{sb[0], sb[1]}, got)

			// A node's new report replaces all its scores: a's newer EUR visa
			// snapshot wins over b's.
			a2 := []paygate.RoutingScore{
				score("a", paygate.ModeTest, "sandbox-a", "EUR", "visa", 200, 150, 0.5),
				score("a", paygate.ModeTest, "sandbox-b", "EUR", "visa", 200, 100, 0.5),
			}
			must(t, commitOp(ctx(t), s, paygate.RoutingScoreReplacement{Node: "a", Scores: a2, At: at(3 * time.Minute)}))
			got, err = s.RoutingScores(ctx(t), test, base)
			must(t, err)
			sa2 := stamp(a2, at(3*time.Minute))
			equal(t, "scores after a's new report", []paygate.RoutingScore{sa2[0], sa2[1], sb[1]}, got)

			// A heartbeat stamps the node's scores again without changing
			// them: b's EUR visa snapshot is the latest again.
			must(t, commitOp(ctx(t), s, paygate.RoutingScoreReplacement{Node: "b", Heartbeat: true, At: at(4 * time.Minute)}))
			got, err = s.RoutingScores(ctx(t), test, base)
			must(t, err)
			sb4 := stamp(b, at(4*time.Minute))
			equal(t, "scores after b's heartbeat", []paygate.RoutingScore{sb4[0], sb4[1]}, got)

			// Any report deletes the scores of nodes silent since
			// ForgetBefore (a crashed node never withdraws its own).
			must(t, commitOp(ctx(t), s, paygate.RoutingScoreReplacement{Node: "b", Heartbeat: true, At: at(5 * time.Minute),
				ForgetBefore: at(4 * time.Minute)}))
			got, err = s.RoutingScores(ctx(t), test, at(3*time.Minute))
			must(t, err)
			equal(t, "scores after forgetting a", stamp(b, at(5*time.Minute)), got)
			got, err = s.RoutingScores(ctx(t), test, base)
			must(t, err)
			equal(t, "a's old scores are gone", stamp(b, at(5*time.Minute)), got)
			// A report never forgets its own node's rows, however long the
			// node was silent: its heartbeat stamps them again.
			must(t, commitOp(ctx(t), s, paygate.RoutingScoreReplacement{Node: "b", Heartbeat: true, At: at(5*time.Minute + 30*time.Second),
				ForgetBefore: at(5*time.Minute + 10*time.Second)}))
			got, err = s.RoutingScores(ctx(t), test, base)
			must(t, err)
			equal(t, "b's scores after its late heartbeat", stamp(b, at(5*time.Minute+30*time.Second)), got)

			// No scores forget the node; two nodes in one unit.
			must(t, commitOp(ctx(t), s, paygate.RoutingScoreReplacement{Node: "b"},
				paygate.RoutingScoreReplacement{Node: "a", At: at(6 * time.Minute)}))
			for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
				got, err = s.RoutingScores(ctx(t), mode, base)
				must(t, err)
				if len(got) != 0 {
					t.Fatalf("%s scores after forgetting both nodes: %+v", mode, got)
				}
			}
		}},
		{"SandboxLedger", func(t *testing.T, s paygate.Store) {
			pay := newID()
			_, err := s.SandboxChargeByPayment(ctx(t), "sandbox-eu", pay)
			wantNotFound(t, err)
			c := sandboxChargeValue("sandbox-eu", pay, at(time.Minute))
			got, err := recordSandboxCharge(t, s, c)
			must(t, err)
			equal(t, "recorded entry", c, got)
			got, err = s.SandboxChargeByPayment(ctx(t), "sandbox-eu", pay)
			must(t, err)
			equal(t, "stored entry", c, got)

			// The first entry wins: a repeated charge gets the first answer.
			again := c
			again.Outcome, again.DeclineCode, again.Message = paygate.SandboxCaptured, "", ""
			again.ReadyAt, again.CreatedAt = at(time.Hour), at(time.Hour)
			got, err = recordSandboxCharge(t, s, again)
			must(t, err)
			equal(t, "entry after a repeat", c, got)

			// Each provider has its own ledger.
			_, err = s.SandboxChargeByPayment(ctx(t), "sandbox-global", pay)
			wantNotFound(t, err)
			other := sandboxChargeValue("sandbox-global", pay, at(2*time.Minute))
			other.Outcome, other.DeclineCode, other.Message = paygate.SandboxErrored, "", "The payment provider could not process the payment."
			got, err = recordSandboxCharge(t, s, other)
			must(t, err)
			equal(t, "other provider's entry", other, got)
			got, err = s.SandboxChargeByPayment(ctx(t), "sandbox-eu", pay)
			must(t, err)
			equal(t, "first provider's entry after the other's", c, got)
		}},
		{"SandboxLedgerConcurrentRecordsAgree", func(t *testing.T, s paygate.Store) {
			pay := newID()
			const n = 8
			var wg sync.WaitGroup
			results := make([]paygate.SandboxCharge, n)
			errs := make([]error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := sandboxChargeValue("sandbox-eu", pay, at(time.Duration(i)*time.Second))
					results[i], errs[i] = recordSandboxCharge(t, s, c)
				}()
			}
			wg.Wait()
			for i := range n {
				must(t, errs[i])
				equal(t, "concurrent record", results[0], results[i])
			}
			stored, err := s.SandboxChargeByPayment(ctx(t), "sandbox-eu", pay)
			must(t, err)
			equal(t, "stored entry", results[0], stored)
		}},
		{"PaymentsToRecover", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			// Created at base+1m..: leases end 20 s later.
			old := f.newPayment(t, paygate.ModeTest, at(time.Minute))
			foreign := other.newPayment(t, paygate.ModeLive, at(time.Minute+time.Second))
			young := f.newPayment(t, paygate.ModeTest, at(2*time.Minute))
			handed := handOver(t, s, f.newPayment(t, paygate.ModeLive, at(2*time.Minute+time.Second)), "sandbox-eu", at(2*time.Minute+3*time.Second))
			done := f.newPayment(t, paygate.ModeTest, at(30*time.Second))
			must(t, s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
				ID: done.ID, MerchantID: done.MerchantID, Mode: done.Mode,
				From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentFailed,
				ErrorCode: "PROVIDER_ERROR", ErrorMessage: "x", UpdatedAt: at(31 * time.Second),
			}, nil, nil)))

			now := at(2*time.Minute + 5*time.Second) // young's and handed's leases run
			equal(t, "to recover", []string{old.ID, foreign.ID, handed.ID}, recoverIDs(t, s, now, 0))
			equal(t, "to recover, limited", []string{old.ID, foreign.ID}, recoverIDs(t, s, now, 2))
			// The lease ends exactly at LeaseUntil.
			equal(t, "to recover when young's lease ends", []string{old.ID, foreign.ID, young.ID, handed.ID},
				recoverIDs(t, s, young.LeaseUntil, 0))

			got, err := s.PaymentsToRecover(ctx(t), now, 1)
			must(t, err)
			equal(t, "recoverable payment", old, got[0])
			got, err = s.PaymentsToRecover(ctx(t), now, 0)
			must(t, err)
			equal(t, "handed-over payment", handed, got[2])
		}},
		{"ClaimPaymentRecovery", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Minute))
			young := f.newPayment(t, paygate.ModeTest, at(2*time.Minute))
			now := at(2*time.Minute + time.Second)

			claim := func(p paygate.Payment, merchantID string, mode paygate.Mode, now, until time.Time) bool {
				t.Helper()
				err := commitOp(ctx(t), s, paygate.RecoveryClaim{MerchantID: merchantID, Mode: mode, PaymentID: p.ID, Now: now, Until: until})
				if errors.Is(err, paygate.ErrStateConflict) || paygate.IsNotFound(err) {
					return false
				}
				must(t, err)
				return true
			}
			if claim(young, f.merchant.ID, paygate.ModeTest, now, now.Add(time.Minute)) {
				t.Fatal("claimed a payment whose lease runs")
			}
			if claim(p, f.merchant.ID, paygate.ModeLive, now, now.Add(time.Minute)) || claim(p, newID(), paygate.ModeTest, now, now.Add(time.Minute)) {
				t.Fatal("claimed a payment of another mode or merchant")
			}
			if claim(paygate.Payment{ID: newID()}, f.merchant.ID, paygate.ModeTest, now, now.Add(time.Minute)) {
				t.Fatal("claimed a payment that does not exist")
			}
			until := now.Add(10 * time.Second)
			if !claim(p, f.merchant.ID, paygate.ModeTest, now, until) {
				t.Fatal("could not claim a recoverable payment")
			}
			if claim(p, f.merchant.ID, paygate.ModeTest, now.Add(time.Second), now.Add(time.Minute)) {
				t.Fatal("claimed a payment twice")
			}
			equal(t, "to recover while claimed", []string{}, recoverIDs(t, s, until.Add(-time.Microsecond), 0))
			equal(t, "to recover once the claim ended", []string{p.ID}, recoverIDs(t, s, until, 0))
			if !claim(p, f.merchant.ID, paygate.ModeTest, until, until.Add(time.Minute)) {
				t.Fatal("could not claim again once the claim ended")
			}

			// A payment that reached a final status is no longer claimable.
			must(t, s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
				ID: young.ID, MerchantID: young.MerchantID, Mode: young.Mode,
				From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentCaptured,
				ProviderID: "sandbox-eu", UpdatedAt: now,
			}, nil, nil)))
			if claim(young, f.merchant.ID, paygate.ModeTest, at(time.Hour), at(2*time.Hour)) {
				t.Fatal("claimed a captured payment")
			}

			// A payment handed over by its request is claimable in its lease.
			handed := handOver(t, s, f.newPayment(t, paygate.ModeTest, at(3*time.Minute)), "sandbox-eu", at(3*time.Minute+2*time.Second))
			if !claim(handed, f.merchant.ID, paygate.ModeTest, at(3*time.Minute+3*time.Second), at(3*time.Minute+8*time.Second)) {
				t.Fatal("could not claim a handed-over payment in its lease")
			}
		}},
		{"RecoveryClaimRefusals", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Minute))
			q := f.newPayment(t, paygate.ModeTest, at(time.Minute))
			young := f.newPayment(t, paygate.ModeTest, at(2*time.Minute))
			now := at(2*time.Minute + time.Second)
			claim := func(p paygate.Payment, mode paygate.Mode) paygate.RecoveryClaim {
				return paygate.RecoveryClaim{MerchantID: p.MerchantID, Mode: mode, PaymentID: p.ID, Now: now, Until: now.Add(time.Minute)}
			}
			wantIs(t, commitOp(ctx(t), s, claim(young, young.Mode)), paygate.ErrStateConflict)
			wantNotFound(t, commitOp(ctx(t), s, claim(p, paygate.ModeLive)))
			// A unit with a good claim and a refused one claims nothing.
			wantIs(t, commitOp(ctx(t), s, claim(p, p.Mode), claim(young, young.Mode)), paygate.ErrStateConflict)
			wantNotFound(t, commitOp(ctx(t), s, claim(p, p.Mode), claim(paygate.Payment{ID: newID(), MerchantID: p.MerchantID}, p.Mode)))
			equal(t, "to recover after refused units", []string{p.ID, q.ID}, recoverIDs(t, s, now, 0))
			// Two claims of one payment in one unit: the second is refused.
			wantIs(t, commitOp(ctx(t), s, claim(q, q.Mode), claim(q, q.Mode)), paygate.ErrStateConflict)
			must(t, commitOp(ctx(t), s, claim(p, p.Mode), claim(q, q.Mode)))
			equal(t, "to recover after the claims", []string{}, recoverIDs(t, s, now, 0))
		}},
		{"ClaimPaymentRecoveryConcurrentClaimsOnce", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Minute))
			now := at(time.Hour)
			const n = 8
			var wg sync.WaitGroup
			var mu sync.Mutex
			wins := 0
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := commitOp(ctx(t), s, paygate.RecoveryClaim{MerchantID: p.MerchantID, Mode: p.Mode, PaymentID: p.ID, Now: now, Until: now.Add(time.Minute)})
					if err != nil && !errors.Is(err, paygate.ErrStateConflict) {
						t.Error(err)
						return
					}
					if err == nil {
						mu.Lock()
						wins++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if wins != 1 {
				t.Fatalf("%d concurrent claims won, want 1", wins)
			}
		}},
	}
}
