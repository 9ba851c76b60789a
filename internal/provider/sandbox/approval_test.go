package sandbox

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/connector"
)

// approvedShare charges n payments of a card outside the test-card table
// and returns the share captured; every other answer must be a
// generic_decline.
func approvedShare(t *testing.T, p *Provider, n int, prefix string) float64 {
	t.Helper()
	captured := 0
	for i := range n {
		req := charge("4111111111111111", "EUR")
		req.PaymentID = fmt.Sprintf("%s-%d", prefix, i)
		res, err := p.Charge(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case res.Status == paygate.PaymentCaptured:
			captured++
		case res.Status != paygate.PaymentFailed || res.DeclineCode != paygate.DeclineGeneric || res.Message != msgApprovalDecline:
			t.Fatalf("charge %d: %+v, want captured or a generic decline", i, res)
		}
	}
	return float64(captured) / float64(n)
}

func TestApprovalRateShare(t *testing.T) {
	t.Parallel()
	if got := approvedShare(t, New("sandbox-eu", nil), 200, "default"); got != 1 {
		t.Fatalf("default approval: share %v, want 1", got)
	}
	if got := approvedShare(t, New("sandbox-eu", nil, WithApprovalRate(0)), 200, "zero"); got != 0 {
		t.Fatalf("rate 0: share %v", got)
	}
	// 4000 draws: the standard deviation of the share is under 0.008.
	for _, rate := range []float64{0.6, 0.95} {
		got := approvedShare(t, New("sandbox-eu", nil, WithApprovalRate(rate)), 4000, "rate")
		if math.Abs(got-rate) > 0.04 {
			t.Fatalf("rate %v: share %v", rate, got)
		}
	}
}

// TestApprovalRateKeepsTestCards: the table answers as always, even at 0.
func TestApprovalRateKeepsTestCards(t *testing.T) {
	t.Parallel()
	p := New("sandbox-eu", nil, WithApprovalRate(0))
	for _, c := range []struct {
		number string
		status paygate.PaymentStatus
	}{
		{CardVisa, paygate.PaymentCaptured}, {CardMastercard, paygate.PaymentCaptured}, {CardAmex, paygate.PaymentCaptured},
		{CardAuthorize, paygate.PaymentAuthorized}, {CardRefundFails, paygate.PaymentCaptured},
		{CardFailover, paygate.PaymentCaptured}, {Card3DS, paygate.PaymentPending3DS},
	} {
		res, err := p.Charge(context.Background(), charge(c.number, "EUR"))
		if err != nil || res.Status != c.status {
			t.Fatalf("card %s…: %+v, %v; want %s", c.number[:6], res, err, c.status)
		}
	}
	res, err := p.Charge(context.Background(), charge(CardInsufficientFunds, "EUR"))
	if err != nil || res.DeclineCode != paygate.DeclineInsufficientFunds {
		t.Fatalf("insufficient funds card: %+v, %v", res, err)
	}
}

// TestApprovalDrawReproducible: one payment gets one answer from one
// provider however often it is charged, and fresh providers built alike
// answer a sequence of payments alike; another provider draws otherwise.
func TestApprovalDrawReproducible(t *testing.T) {
	t.Parallel()
	answers := func(id string) []paygate.PaymentStatus {
		p := New(id, nil, WithApprovalRate(0.5))
		var out []paygate.PaymentStatus
		for i := range 64 {
			req := charge("4111111111111111", "EUR")
			req.PaymentID = fmt.Sprintf("pay_%d", i)
			a, errA := p.Charge(context.Background(), req)
			b, errB := New(id, nil, WithApprovalRate(0.5)).Charge(context.Background(), req)
			if errA != nil || errB != nil || a.Status != b.Status {
				t.Fatalf("payment %d: %v/%v then %v/%v", i, a.Status, errA, b.Status, errB)
			}
			out = append(out, a.Status)
		}
		return out
	}
	eu, eu2, us := answers("sandbox-eu"), answers("sandbox-eu"), answers("sandbox-us")
	if fmt.Sprint(eu) != fmt.Sprint(eu2) {
		t.Fatal("two runs over the same payment ids answered differently")
	}
	if fmt.Sprint(eu) == fmt.Sprint(us) {
		t.Fatal("two providers drew the same 64 answers")
	}
}

func TestApprovalOverride(t *testing.T) {
	t.Parallel()
	p := New("sandbox-eu", nil, WithApprovalRate(1))
	p.SetApprovalOverride(0)
	if got := p.ApprovalRate(); got != 0 {
		t.Fatalf("ApprovalRate with an override of 0 = %v", got)
	}
	if got := approvedShare(t, p, 50, "over"); got != 0 {
		t.Fatalf("override 0: share %v", got)
	}
	p.ClearApprovalOverride()
	if got := approvedShare(t, p, 50, "cleared"); got != 1 {
		t.Fatalf("override cleared: share %v", got)
	}
	p.SetApprovalOverride(7) // clamped
	if got := p.ApprovalRate(); got != 1 {
		t.Fatalf("override 7 in force as %v", got)
	}
}

// TestApprovalRateSetting: the configuration's sandbox.approvalRate
// reaches the provider; without it the rate is 1.
func TestApprovalRateSetting(t *testing.T) {
	t.Parallel()
	built := func(rate *connector.Rate) *Provider {
		s := &Settings{}
		s.Sandbox.ApprovalRate = rate
		p, err := build(connector.Entry{ID: "sb", Kind: Kind, Mode: paygate.ModeTest, Settings: s}, connector.Env{})
		if err != nil {
			t.Fatal(err)
		}
		return p.(*Provider)
	}
	if got := built(nil).ApprovalRate(); got != 1 {
		t.Fatalf("no approvalRate: %v, want 1", got)
	}
	r := connector.Rate(0.25)
	if got := built(&r).ApprovalRate(); got != 0.25 {
		t.Fatalf("approvalRate 0.25: %v", got)
	}
}
