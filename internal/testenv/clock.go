package testenv

import (
	"sync"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// Clock is a paygate.Clock that a test moves by hand; it never moves by
// itself, so a test about expiry, leases or schedules says exactly how much
// time passes instead of sleeping. It is safe for concurrent use: the code
// under test may read it from its own goroutines while the test moves it.
// Like paygate.SystemClock it shows UTC at microsecond precision, so a time
// it gives survives a round trip through either database unchanged.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

var _ paygate.Clock = (*Clock)(nil)

// NewClock returns a Clock showing t.
func NewClock(t time.Time) *Clock { return &Clock{t: paygate.Normalize(t)} }

// Now returns the time the clock shows.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set makes the clock show t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = paygate.Normalize(t)
}

// Add moves the clock forward by d (backward when d is negative).
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
