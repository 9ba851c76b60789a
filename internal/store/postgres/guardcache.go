package postgres

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/paygate"
)

// guardChannel is the channel on which a unit that changes the guard's
// settings notifies every node (pg_notify, delivered at its commit).
const guardChannel = "paygate_guard_rules"

// guardCache keeps the card-testing guard's settings this store has read,
// so that a payment does not pay a round trip for them (decisions §22: a
// sandbox payment is one round trip). An entry is trusted only while a
// connection of its own LISTENs on guardChannel: every change notifies at
// its commit, and a notification empties the cache, so a change reaches
// every node within the notification's delivery (milliseconds), which is
// decisions §20's "on the next payment, on every node" in practice. While
// the listener is down (not started yet, a lost connection), nothing is
// cached and each read goes to the database.
//
// The listener starts on the first read, so that a store that never
// guards a payment never holds the extra connection. An entry is also
// forgotten guardCacheMaxAge after its read: a backstop for a listener
// that cannot hear (a connection broken without a word, a pooler such as
// PgBouncer in transaction mode, a change written by hand in SQL).
type guardCache struct {
	cfg    *pgx.ConnConfig // the listener's connection
	maxAge time.Duration   // guardCacheMaxAge; tests set it longer

	mu        sync.Mutex
	started   bool
	closed    bool // after close, no listener starts again
	listening bool
	// gen changes whenever what is cached may have gone stale (a
	// notification, the listener starting or stopping): a read that began
	// under another generation is not cached.
	gen    uint64
	m      map[guardKey]guardEntry
	cancel context.CancelFunc
	done   chan struct{}
}

// guardCacheMaxAge is how long an entry is trusted at most.
const guardCacheMaxAge = 5 * time.Second

type guardEntry struct {
	set    paygate.GuardSettings
	readAt time.Time
}

type guardKey struct {
	merchantID string
	mode       paygate.Mode
}

func newGuardCache(cfg *pgx.ConnConfig) *guardCache {
	return &guardCache{cfg: cfg, maxAge: guardCacheMaxAge, m: map[guardKey]guardEntry{}}
}

// get returns the cached settings of k, or the generation under which a
// read from the database may be cached (put).
func (c *guardCache) get(k guardKey) (paygate.GuardSettings, bool, uint64) {
	if c == nil { // a Store made without OpenWith (tests): no cache
		return paygate.GuardSettings{}, false, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started && !c.closed {
		c.start()
	}
	if e, ok := c.m[k]; ok && c.listening && time.Since(e.readAt) < c.maxAge {
		return e.set, true, c.gen
	}
	return paygate.GuardSettings{}, false, c.gen
}

// put caches s, read from the database under generation gen from readAt
// on, unless the listener is down or something changed since the read
// began.
func (c *guardCache) put(k guardKey, gen uint64, readAt time.Time, s paygate.GuardSettings) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.listening && c.gen == gen {
		c.m[k] = guardEntry{set: s, readAt: readAt}
	}
}

// forget empties the cache and starts a new generation; listening says
// whether the listener hears changes from now on.
func (c *guardCache) forget(listening bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listening = listening
	c.gen++
	clear(c.m)
}

// invalidate empties the cache and starts a new generation, the listener
// as it is.
func (c *guardCache) invalidate() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.m)
}

// start runs the listener (c.mu held).
func (c *guardCache) start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.started, c.cancel, c.done = true, cancel, make(chan struct{})
	go c.run(ctx)
}

// close stops the listener and waits for it.
func (c *guardCache) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.closed = true
	started, cancel, done := c.started, c.cancel, c.done
	c.mu.Unlock()
	if started {
		cancel()
		<-done
	}
}

// run listens until ctx ends, connecting again a second after a failure.
// It warns once when the listener goes down and once when it is back, not
// at every failed attempt.
func (c *guardCache) run(ctx context.Context) {
	defer close(c.done)
	down := false
	for {
		err := c.listen(ctx, func() {
			if down {
				slog.Info("postgres: the guard's settings listener is back; settings are cached again")
				down = false
			}
		})
		c.forget(false)
		if ctx.Err() != nil {
			return
		}
		if !down {
			slog.Warn("postgres: the guard's settings listener stopped; settings are read for every payment until it is back",
				"error", err)
			down = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// listen opens the listener's connection, LISTENs, and empties the cache
// at each notification until the connection fails or ctx ends.
func (c *guardCache) listen(ctx context.Context, up func()) error {
	conn, err := pgx.ConnectConfig(ctx, c.cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+guardChannel); err != nil {
		return err
	}
	// From here on every change is heard: what is read from now on may be
	// cached, what was read before may not.
	c.forget(true)
	up()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		c.forget(true)
	}
}
