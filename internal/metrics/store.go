package metrics

import (
	"context"
	"database/sql"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// outboxTimeout bounds the count of pending deliveries at a scrape.
const outboxTimeout = 5 * time.Second

// What the engines report, found by type assertion on the store (serve
// hands over the engine itself, not a decorator).
type (
	// pgxPool is the PostgreSQL store: one pgx pool.
	pgxPool interface{ PoolStat() *pgxpool.Stat }
	// sqlPools is the SQLite store: a pool of readers and the writer's
	// one connection.
	sqlPools interface {
		DBStats() (read, write sql.DBStats)
	}
	// outbox counts the webhook deliveries still pending, of every
	// merchant: an operator's figure, no merchant's data.
	outbox interface {
		PendingDeliveries(ctx context.Context) (int64, error)
	}
)

// poolStats is one connection pool at a scrape.
type poolStats struct {
	name        string
	inUse, idle int64
	max         int64
	waits       int64
	waitTime    time.Duration
}

// WatchStore adds the store's connection pools (paygate_db_*) and the
// webhook outbox (paygate_webhook_outbox_pending) to the scrape, read at
// each scrape, when the store reports them; it says which it found.
func (m *Metrics) WatchStore(st any) (pools, pending bool) {
	if m == nil {
		return false, false
	}
	c := &storeCollector{}
	switch s := st.(type) {
	case pgxPool:
		c.pools = func() []poolStats {
			p := s.PoolStat()
			return []poolStats{{
				name: "main", inUse: int64(p.AcquiredConns()), idle: int64(p.IdleConns()), max: int64(p.MaxConns()),
				waits: p.EmptyAcquireCount(), waitTime: p.EmptyAcquireWaitTime(),
			}}
		}
	case sqlPools:
		c.pools = func() []poolStats {
			r, w := s.DBStats()
			return []poolStats{fromSQL("read", r), fromSQL("write", w)}
		}
	}
	if o, ok := st.(outbox); ok {
		c.pending = o.PendingDeliveries
	}
	if c.pools == nil && c.pending == nil {
		return false, false
	}
	c.describe()
	m.reg.MustRegister(c)
	return c.pools != nil, c.pending != nil
}

func fromSQL(name string, s sql.DBStats) poolStats {
	return poolStats{
		name: name, inUse: int64(s.InUse), idle: int64(s.Idle), max: int64(s.MaxOpenConnections),
		waits: s.WaitCount, waitTime: s.WaitDuration,
	}
}

// storeCollector reads the store at each scrape.
type storeCollector struct {
	pools   func() []poolStats
	pending func(ctx context.Context) (int64, error)

	inUse, idle, max, waits, waitSeconds, outboxPending *prometheus.Desc
}

func (c *storeCollector) describe() {
	pool := []string{"pool"}
	c.inUse = prometheus.NewDesc("paygate_db_connections_in_use", "Database connections in use, by pool (PostgreSQL: main; SQLite: read, write).", pool, nil)
	c.idle = prometheus.NewDesc("paygate_db_connections_idle", "Database connections open and idle, by pool.", pool, nil)
	c.max = prometheus.NewDesc("paygate_db_connections_max", "Most database connections the pool opens (0: no limit).", pool, nil)
	c.waits = prometheus.NewDesc("paygate_db_wait_total", "Connection acquisitions that had to wait for one to be free, by pool.", pool, nil)
	c.waitSeconds = prometheus.NewDesc("paygate_db_wait_seconds_total", "Time spent waiting for a free database connection, by pool.", pool, nil)
	c.outboxPending = prometheus.NewDesc("paygate_webhook_outbox_pending", "Webhook deliveries pending in the database (every node's), due now or later.", nil, nil)
}

// Describe sends the descriptions of the series the store reports.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	if c.pools != nil {
		ch <- c.inUse
		ch <- c.idle
		ch <- c.max
		ch <- c.waits
		ch <- c.waitSeconds
	}
	if c.pending != nil {
		ch <- c.outboxPending
	}
}

// Collect reads the pools and counts the outbox. A count that fails (the
// database is down) is reported as the scrape's error, and the other
// series are still served.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	if c.pools != nil {
		for _, p := range c.pools() {
			ch <- prometheus.MustNewConstMetric(c.inUse, prometheus.GaugeValue, float64(p.inUse), p.name)
			ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(p.idle), p.name)
			ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(p.max), p.name)
			ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(p.waits), p.name)
			ch <- prometheus.MustNewConstMetric(c.waitSeconds, prometheus.CounterValue, p.waitTime.Seconds(), p.name)
		}
	}
	if c.pending != nil {
		ctx, cancel := context.WithTimeout(context.Background(), outboxTimeout)
		defer cancel()
		n, err := c.pending(ctx)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.outboxPending, err)
			return
		}
		ch <- prometheus.MustNewConstMetric(c.outboxPending, prometheus.GaugeValue, float64(n))
	}
}
