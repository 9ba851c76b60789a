package webhook

import (
	"math/rand/v2"
	"time"
)

// DefaultSchedule is the retry schedule of decisions.md section 11: the
// wait before each attempt, the first before the first attempt, each next
// one after the previous attempt failed.
func DefaultSchedule() Schedule {
	return Schedule{0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
		5 * time.Hour, 10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour}
}

// Schedule lists the wait before each delivery attempt. Its length is the
// number of attempts: after the last one fails, the delivery is failed.
type Schedule []time.Duration

// FirstWait is the wait between an event and its first attempt.
func (s Schedule) FirstWait() time.Duration {
	if len(s) == 0 {
		return 0
	}
	return s[0]
}

// Retry returns the wait after failed attempt number n (from 1) before the
// next attempt, with jitter applied; ok is false when attempt n was the
// last.
func (s Schedule) Retry(n int, jitter func(time.Duration) time.Duration) (wait time.Duration, ok bool) {
	if n < 1 || n >= len(s) {
		return 0, false
	}
	return jitter(s[n]), true
}

// jitterFraction bounds the jitter: a wait w becomes a random wait in
// [w - w/10, w + w/10].
const jitterFraction = 10

// Jitter spreads a wait by up to a tenth either way, so that the retries of
// many deliveries that failed together (a receiver's outage) do not all
// come back at the same instant. A zero wait stays zero.
func Jitter(w time.Duration) time.Duration {
	if w <= 0 {
		return 0
	}
	spread := w / jitterFraction
	if spread <= 0 {
		return w
	}
	return w - spread + rand.N(2*spread+1)
}
