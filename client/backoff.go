package client

import (
	"math/rand/v2"
	"time"
)

// Backoff returns how long to wait before retry n of a call (1 for the
// first retry). retryAfter is the gateway's Retry-After of the answer that
// is retried, 0 when it sent none; the client waits the larger of the two
// whatever Backoff returns.
type Backoff func(n int, retryAfter time.Duration) time.Duration

// ExponentialBackoff returns capped exponential backoff with jitter: before
// retry n the ceiling is base·2^(n-1), at most maxDelay, and the wait is
// drawn uniformly from its upper half, so that clients that failed together
// do not retry together, yet each waits at least half the ceiling.
func ExponentialBackoff(base, maxDelay time.Duration) Backoff {
	return exponential(base, maxDelay, rand.Float64)
}

// exponential is ExponentialBackoff with the random source given: random
// returns a number in [0, 1).
func exponential(base, maxDelay time.Duration, random func() float64) Backoff {
	return func(n int, _ time.Duration) time.Duration {
		ceiling := maxDelay
		if n < 1 {
			n = 1
		}
		// base·2^(n-1) without overflow: stop doubling at the cap.
		if d := base; d > 0 {
			for i := 1; i < n && d < maxDelay; i++ {
				d *= 2
			}
			ceiling = min(d, maxDelay)
		}
		half := ceiling / 2
		return half + time.Duration(random()*float64(ceiling-half))
	}
}
