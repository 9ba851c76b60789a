// Package postgres is the paygate.Store on PostgreSQL, through pgx.
//
// Every method is one SQL statement, or one pipelined batch that PostgreSQL
// runs as one implicit transaction: one round trip, no transaction held
// across anything but SQL. Races are settled by the database: unique keys,
// INSERT ... ON CONFLICT, and conditional UPDATEs whose WHERE clause is
// re-checked on the newest row version under READ COMMITTED.
//
// The schema lives in versioned SQL files (migrations/) applied by goose on
// Open, under a PostgreSQL advisory lock, so several nodes may start at once.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/tracing"
)

//go:embed migrations/*.sql
var migrations embed.FS

// defaultMaxConns is the pool size when the URL sets none. No connection is
// held across a provider call, so a payment holds one for a few short
// statements only: eight sustain well over a thousand payments a second on
// a local database, and every node's pool adds up against PostgreSQL's
// max_connections (100 by default). Measured with paygate bench on two
// shared cores (BENCHMARKS.md): 32 connections gave the same throughput as
// 6 to 8 with a p99 half again as long (the database's backends and the
// gateway competing for the cores); 4 lost a sixth of the throughput.
const defaultMaxConns = 8

// Store is the paygate.Store on PostgreSQL. It is safe for concurrent use by
// many goroutines and many nodes sharing one database.
type Store struct {
	pool     *pgxpool.Pool
	onEvents func() // Options.OnEvents
	guard    *guardCache
}

// Options are the settings of a store that the wiring chooses.
type Options struct {
	// OnEvents, when set, is called after every commit that wrote outbox
	// events (store.Options.OnEvents says why). It must not block.
	OnEvents func()
}

var _ paygate.Store = (*Store)(nil)

// skipFlushWait, queued first in a batch (one implicit transaction), lets
// that transaction commit without waiting for its WAL flush. It is for the
// writes that precede a request's durable one (a reservation, a payment on
// a gateway-ledger route, a sandbox's ledger entry): the later synchronous
// commit flushes all earlier WAL, so they are durable before any client is
// told anything that rests on them. Each use says why it may.
const skipFlushWait = `SELECT set_config('synchronous_commit', 'off', true)`

// Open connects to the database at url (postgres://...), applies pending
// migrations, and returns the store.
//
// Query parameters of the URL that pgx does not know are session settings:
// search_path=myschema puts the tables, and goose's version table, in that
// schema, which must exist. pool_max_conns and the other pgxpool parameters
// size the pool. Sessions run at READ COMMITTED unless the URL sets
// default_transaction_isolation.
//
// Open refuses a database whose synchronous_commit is off: a 2xx must mean
// the change is durable. Errors: SERVICE_UNAVAILABLE when the database cannot
// be reached; anything else (a bad URL, a failed migration) is internal.
func Open(ctx context.Context, url string) (*Store, error) {
	return OpenWith(ctx, url, Options{})
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, url string, o Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse the database URL: %w", err)
	}
	params := cfg.ConnConfig.RuntimeParams
	if _, ok := params["application_name"]; !ok {
		params["application_name"] = "paygate"
	}
	// The races are settled by READ COMMITTED semantics: a conditional
	// UPDATE or ON CONFLICT re-checks its condition on the newest row
	// version, and each statement of a batch reads a fresh snapshot. Under a
	// stricter server default the same races would surface as serialization
	// failures (answered SERVICE_UNAVAILABLE) instead.
	if _, ok := params["default_transaction_isolation"]; !ok {
		params["default_transaction_isolation"] = "read committed"
	}
	if err := migrate(ctx, cfg.ConnConfig); err != nil {
		return nil, translate(fmt.Errorf("migrate: %w", err))
	}
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		// Scanned times come back in UTC, as paygate.Normalize makes them.
		c.TypeMap().RegisterType(&pgtype.Type{
			Name:  "timestamptz",
			OID:   pgtype.TimestamptzOID,
			Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC},
		})
		return nil
	}
	if tracing.Enabled() {
		cfg.ConnConfig.Tracer = queryTracer{} // a span per round trip (trace.go)
	}
	// pgxpool's default is four connections (or one per CPU): too few for
	// the dozens of short statements in flight at once (defaultMaxConns).
	// The URL's pool_max_conns still wins.
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, translate(fmt.Errorf("connect: %w", err))
	}
	var syncCommit string
	if err := pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&syncCommit); err != nil {
		pool.Close()
		return nil, translate(fmt.Errorf("read synchronous_commit: %w", err))
	}
	if syncCommit == "off" {
		pool.Close()
		return nil, errors.New("postgres: synchronous_commit is off; paygate needs durable commits (set it to on)")
	}
	return &Store{pool: pool, onEvents: o.OnEvents, guard: newGuardCache(cfg.ConnConfig.Copy())}, nil
}

// migrate applies the embedded migrations with goose over a short-lived
// database/sql handle. The session advisory lock is keyed by the current
// schema (advisory locks are per database already), so nodes starting at
// once on one schema migrate one after the other, while different schemas
// (parallel tests, several installations in one database) do not wait for
// each other.
func migrate(ctx context.Context, cc *pgx.ConnConfig) error {
	db := stdlib.OpenDB(*cc.Copy())
	defer db.Close()

	var schema *string
	if err := db.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return err
	}
	if schema == nil {
		return errors.New("the search_path names no existing schema")
	}
	locker, err := lock.NewPostgresSessionLocker(
		lock.WithLockID(migrationLockID(*schema)),
		// Poll every second for up to five minutes: another node's
		// migrations take well under a second.
		lock.WithLockTimeout(1, 300),
	)
	if err != nil {
		return err
	}
	files, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, files,
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return err
	}
	return deleteLegacyCardFingerprintKey(ctx, db)
}

// migrationLockID is the advisory lock key of the schema's migrations.
func migrationLockID(schema string) int64 {
	h := fnv.New64a()
	_, _ = io.WriteString(h, "paygate/migrate/"+schema)
	return int64(h.Sum64())
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	return translate(s.pool.Ping(ctx))
}

// Close releases the connections. It waits for connections in use to be
// returned.
func (s *Store) Close() error {
	s.guard.close()
	s.pool.Close()
	return nil
}

// --- errors -----------------------------------------------------------------

// translate maps driver errors to the store contract by SQLSTATE and error
// type, never by text. The driver error stays wrapped for the log.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		// The caller gave up; nothing is wrong with the database.
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch code := pgErr.Code; {
		case code == "23505": // unique_violation
			return fmt.Errorf("postgres: %w: %w", paygate.ErrConflict, err)
		case unavailableCode(code):
			return unavailable(err)
		}
		return fmt.Errorf("postgres: %w", err)
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		return unavailable(err)
	}
	return fmt.Errorf("postgres: %w", err)
}

// unavailable is SERVICE_UNAVAILABLE caused by err: the database cannot
// serve now, and a retry later may succeed.
func unavailable(err error) error {
	return fmt.Errorf("postgres: %w: %w", err, &paygate.Error{
		Code:    paygate.CodeServiceUnavailable,
		Message: "The service is temporarily unavailable. Retry later.",
	})
}

// unavailableCode reports whether a SQLSTATE means the database cannot serve
// now but a retry later may succeed.
func unavailableCode(code string) bool {
	switch code {
	case "57P01", "57P02", "57P03", // admin shutdown, crash shutdown, cannot connect now
		"57014", // query canceled: statement_timeout under load
		"25006", // read-only transaction: a standby after failover
		"40001", // serialization failure
		"40P01": // deadlock detected
		return true
	}
	if len(code) < 2 {
		return false
	}
	switch code[:2] {
	case "08", // connection exception
		"53": // insufficient resources: too many connections, disk full, out of memory
		return true
	}
	return false
}

// notFound is the NOT_FOUND answer for a missing resource of the kind.
func notFound(kind string) error {
	return paygate.Errorf(paygate.CodeNotFound, "", "No such %s.", kind)
}

// --- conversions --------------------------------------------------------------

// nullText is s as a query argument, NULL when s is empty.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullTime is t as a query argument, NULL when t is zero.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// nullLimit is a LIMIT argument: NULL (no limit) when n is not positive.
func nullLimit(n int) any {
	if n <= 0 {
		return nil
	}
	return n
}

// jsonObject is a JSON object as stored: "{}" when none was given.
func jsonObject(b []byte) string {
	if len(b) == 0 {
		return "{}"
	}
	return string(b)
}
