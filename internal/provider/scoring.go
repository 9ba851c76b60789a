package provider

import (
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/score"
)

// scoring is what the entries of one success_rate route share: the group
// their charges are scored in and the route's settings.
type scoring struct {
	group    score.Group
	settings score.Settings
}

// SetScorer makes the router keep its success_rate routes' scores in s (a
// score.Redis shares them between nodes); nil keeps them in this process
// (score.Memory, the default). Call it before the router serves payments:
// the scores kept so far stay with the old scorer.
func (r *Router) SetScorer(s score.Scorer) {
	if s == nil {
		s = score.NewMemory()
	}
	r.scorer.Store(&s)
}

// Scorer returns the router's scorer.
func (r *Router) Scorer() score.Scorer { return *r.scorer.Load() }

// SetRand sets the random source of the success_rate routes' exploration
// (deterministic tests); nil is score.DefaultRand. The source must be safe
// for concurrent use when payments run concurrently.
func (r *Router) SetRand(rnd score.Rand) {
	if rnd == nil {
		rnd = score.DefaultRand
	}
	r.rnd.Store(&rnd)
}

// choose moves the provider the scores choose to the front of out (the
// route's available entries, in route order), keeping the others' order.
func (r *Router) choose(sc *scoring, out []paygate.Provider) {
	var idBuf [8]string
	var statBuf [8]score.Stat
	ids, stats := idBuf[:0], statBuf[:0]
	for _, p := range out {
		ids = append(ids, p.ID())
		stats = append(stats, score.Stat{})
	}
	r.Scorer().Stats(sc.group, ids, stats)
	i := score.Choose(stats, sc.settings, *r.rnd.Load())
	if i == 0 {
		return
	}
	chosen := out[i]
	copy(out[1:i+1], out[:i])
	out[0] = chosen
}

// scoreOutcome is what a charge's answer says of its provider, false when
// it says nothing: whatever the circuit breakers ignore
// (excludedFromBreaker), that is a caller that hung up or any error a test
// card produced on purpose (decisions §12: 0259's unavailability, 0119's
// PROVIDER_ERROR, 0705's timeout), which would otherwise teach the scores a
// simulated fate. Other errors and timeouts are failures; a decline is one
// unless the issuer's reason says nothing of the provider
// (score.Declined); a 3-D Secure challenge still to come is traffic only
// (its outcome after the challenge is not fed back).
func scoreOutcome(res paygate.ChargeResult, err error) (score.Outcome, bool) {
	if err != nil {
		if excludedFromBreaker(err) {
			return 0, false
		}
		return score.Failed, true
	}
	switch res.Status {
	case paygate.PaymentCaptured, paygate.PaymentAuthorized:
		return score.Approved, true
	case paygate.PaymentFailed:
		return score.Declined(res.DeclineCode), true
	}
	return score.Uncounted, true
}
