package provider

import (
	"github.com/paygate/paygate/internal/paygate"
)

// ApprovalOverrider is a provider whose approval rate the operator may
// change at run time, for routing experiments (decisions.md section 21):
// the sandboxes. `paygate providers set-approval` stores the rate with the
// provider's state and the Watcher of every node applies it.
type ApprovalOverrider interface {
	paygate.Provider
	// SetApprovalOverride puts rate (0 to 1) in force in place of the
	// configured approval rate.
	SetApprovalOverride(rate float64)
	// ClearApprovalOverride puts the configured approval rate back.
	ClearApprovalOverride()
	// ApprovalRate returns the rate in force.
	ApprovalRate() float64
}

// Overridable returns the provider of the mode with the id when its
// approval rate may be overridden.
func (r *Router) Overridable(mode paygate.Mode, id string) (ApprovalOverrider, bool) {
	p, ok := r.Provider(mode, id)
	if !ok {
		return nil, false
	}
	o, ok := p.(ApprovalOverrider)
	return o, ok
}

// applyApprovals puts the stored approval overrides in force on the
// router's providers that take one, and clears them on the others; it
// returns the overrides now in force by provider id, for the watcher to
// log changes.
func applyApprovals(r *Router, states []paygate.ProviderState) map[string]float64 {
	want := map[string]float64{}
	for _, s := range states {
		if s.ApprovalRate != nil {
			want[s.ProviderID] = *s.ApprovalRate
		}
	}
	applied := map[string]float64{}
	for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
		for _, p := range r.Providers(mode) {
			o, ok := p.(ApprovalOverrider)
			if !ok {
				continue
			}
			if rate, set := want[p.ID()]; set {
				o.SetApprovalOverride(rate)
				applied[p.ID()] = rate
			} else {
				o.ClearApprovalOverride()
			}
		}
	}
	return applied
}
