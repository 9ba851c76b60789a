package main

import (
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider"
)

// liveProviders returns how many providers serve live payments now: those
// the routing configures for live mode that are not drained. The dashboard
// asks it on each live Overview (dashboard.Config.LiveProviders).
func liveProviders(router *provider.Router) func() int {
	return func() int {
		n := 0
		for _, p := range router.Providers(paygate.ModeLive) {
			if !router.Drained(p.ID()) {
				n++
			}
		}
		return n
	}
}
