// Package score keeps the success-rate router's view of its providers
// (decisions §21): for each mode, provider, currency and card brand, a
// sliding window of the provider's last attempts that say something about
// it (approved or not), and for each mode, currency and brand the share of
// recent attempts each provider received. Choose picks a route's first
// provider from those windows.
//
// Memory keeps the windows in this process; Redis shares them between
// every node through a Redis server and falls back to its own Memory while
// Redis cannot be reached.
package score

import (
	"context"
	"math/rand/v2"
	"slices"

	"github.com/paygate/paygate/internal/paygate"
)

// Defaults and limits of a success_rate route (decisions §21).
const (
	DefaultWindow     = 200
	DefaultExplore    = 5
	DefaultMinSamples = 20
	// MaxWindow is the longest window a route may keep.
	MaxWindow = 10_000
)

// Settings are a success_rate route's: the window of attempts each score
// is measured over, the percent of payments that explore another healthy
// provider, and how many attempts a provider needs before its score is
// trusted (fewer: it is explored first).
type Settings struct {
	Window     int
	Explore    int
	MinSamples int
}

// Defaults returns the settings of a route that gives none.
func Defaults() Settings {
	return Settings{Window: DefaultWindow, Explore: DefaultExplore, MinSamples: DefaultMinSamples}
}

// Outcome is what one attempt at a provider says about it.
type Outcome int

// Outcomes of an attempt. Approved and Failed count in the provider's
// window; Uncounted attempts (an issuer's decline that says nothing about
// the provider, a 3-D Secure challenge still to come) only count in the
// share of traffic.
const (
	Approved Outcome = iota + 1
	Failed
	Uncounted
)

// uncountedDeclines are the issuer declines that say nothing about the
// provider that carried them.
var uncountedDeclines = []string{
	paygate.DeclineInsufficientFunds, paygate.DeclineExpiredCard, paygate.DeclineIncorrectCVC, paygate.DeclineBlocked,
}

// Declined returns the outcome of a charge declined with the code: Failed,
// or Uncounted for a decline that says nothing about the provider.
func Declined(code string) Outcome {
	if slices.Contains(uncountedDeclines, code) {
		return Uncounted
	}
	return Failed
}

// Group is the mode, currency and card brand a score is kept for.
type Group struct {
	Mode     paygate.Mode
	Currency string
	Brand    string
}

// Stat is what a scorer knows of one provider in a group.
type Stat struct {
	// Attempts and Approved count the window's counted attempts.
	Attempts int64
	Approved int64
	// Traffic is how many of the group's recent attempts (counted or not)
	// went to the provider; Share is Traffic over the group's total.
	Traffic int64
	Share   float64
}

// Score is Approved / Attempts, 0 without attempts.
func (s Stat) Score() float64 {
	if s.Attempts == 0 {
		return 0
	}
	return float64(s.Approved) / float64(s.Attempts)
}

// Scorer keeps the windows. It is safe for concurrent use.
type Scorer interface {
	// Record adds an attempt at the provider to the group's windows, each
	// kept to window entries.
	Record(ctx context.Context, g Group, provider string, window int, o Outcome)
	// Stats fills out[i] with what is known of providers[i] in the group,
	// cheaply: it never waits on the network.
	Stats(g Group, providers []string, out []Stat)
	// Scores returns every score the scorer knows, for the database and
	// the operator (Node and UpdatedAt are left to the caller).
	Scores() []paygate.RoutingScore
}

// Rand is the random source of Choose: IntN returns a number in [0, n).
type Rand interface {
	IntN(n int) int
}

// globalRand is math/rand/v2's shared source, safe for concurrent use.
type globalRand struct{}

func (globalRand) IntN(n int) int { return rand.IntN(n) }

// DefaultRand is the process-wide random source, safe for concurrent use.
var DefaultRand Rand = globalRand{}

// Choose returns the index of the provider (of stats, one per healthy
// provider in route order) that a payment should go to first: one with
// fewer than MinSamples counted attempts, at random among those, when
// there is one; else, with probability Explore percent, another provider
// than the best at random; else the best score, the earliest in route
// order among equals. With one provider or none it returns 0.
func Choose(stats []Stat, s Settings, rnd Rand) int {
	if len(stats) <= 1 {
		return 0
	}
	under := 0
	for _, st := range stats {
		if st.Attempts < int64(s.MinSamples) {
			under++
		}
	}
	if under > 0 {
		k := 0
		if under > 1 {
			k = rnd.IntN(under)
		}
		for i, st := range stats {
			if st.Attempts < int64(s.MinSamples) {
				if k == 0 {
					return i
				}
				k--
			}
		}
	}
	best := 0
	for i := 1; i < len(stats); i++ {
		// Compared as cross products: exact, and equal scores tie.
		if stats[i].Approved*max(stats[best].Attempts, 1) > stats[best].Approved*max(stats[i].Attempts, 1) {
			best = i
		}
	}
	if s.Explore > 0 && rnd.IntN(100) < s.Explore {
		k := rnd.IntN(len(stats) - 1)
		if k >= best {
			k++
		}
		return k
	}
	return best
}
