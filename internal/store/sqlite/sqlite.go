// Package sqlite implements paygate.Store on an embedded SQLite file, with
// the pure-Go driver modernc.org/sqlite.
//
// The file is shared safely by several processes (a running `serve` and CLI
// commands): it runs in WAL mode with synchronous=FULL (a commit is durable
// before it is acknowledged), foreign keys on, and a busy timeout. Writes go
// through one connection and begin with BEGIN IMMEDIATE, so a write
// transaction holds the database's single write lock from its first
// statement and never fails half-way with a lock upgrade; reads use a
// separate pool and see every committed write.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/paygate/paygate/internal/paygate"
)

var _ paygate.Store = (*Store)(nil)

// busyTimeout is how long a statement waits for another connection or
// process to release the write lock before failing with SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// Store is a paygate.Store on one SQLite file.
type Store struct {
	write *sql.DB // one connection; transactions BEGIN IMMEDIATE
	read  *sql.DB // read-only connections

	// The writer goroutine owns write (groupcommit.go).
	writes     chan *writeReq
	quit       chan struct{}
	writerDone chan struct{}
	groups     atomic.Int64 // transactions of more than one member, for tests
	writerSync syncSetting  // the writer's synchronous pragma (groupcommit.go)

	// ckpt checkpoints the WAL in the background (checkpoint.go).
	ckpt                 *sql.DB
	checkpointerDone     chan struct{}
	lastWriterCheckpoint time.Time // owned by the writer goroutine

	closeOnce sync.Once
	closeErr  error

	onEvents func() // Options.OnEvents
}

// Options are the settings of a store that the wiring chooses.
type Options struct {
	// OnEvents, when set, is called after every commit that wrote outbox
	// events (store.Options.OnEvents says why). It must not block.
	OnEvents func()
}

// Open opens (creating it when missing) the database file at path, applies
// pending migrations, and returns the store. Several processes may open the
// same file at once; each waits for the others' migrations.
func Open(ctx context.Context, path string) (*Store, error) {
	return OpenWith(ctx, path, Options{})
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, path string, o Options) (*Store, error) {
	s, err := open(ctx, path, busyTimeout)
	if err != nil {
		return nil, err
	}
	s.onEvents = o.OnEvents
	return s, nil
}

// open is Open with a chosen busy timeout (tests shorten it).
func open(ctx context.Context, path string, busy time.Duration) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, errors.New("sqlite: the database path must not contain '?' or '#'")
	}
	if strings.HasPrefix(path, "file:") {
		return nil, errors.New("sqlite: give a file path, not a file: URI")
	}
	if path == ":memory:" {
		return nil, errors.New("sqlite: an in-memory database cannot be shared between connections; give a file path")
	}
	if err := secureFiles(path); err != nil {
		return nil, err
	}

	// The writer never checkpoints the WAL itself (checkpoint.go). Its page
	// cache holds a group's dirty pages (groupcommit.go): with the default
	// 2 MB, SQLite spilled them to the WAL before the commit, which wrote
	// them again. Its temporary files are kept in memory: every member of
	// a group runs in a SAVEPOINT, so the first change of a page in each
	// member copies the page to the sub-journal, a temporary file by
	// default, which cost the writer a pwrite per page (11% of the
	// server's CPU at 500 payments/s).
	write, err := openCached(dsn(path, true, busy)+
		"&_pragma=wal_autocheckpoint%280%29&_pragma=cache_size%28-32768%29&_pragma=temp_store%28MEMORY%29", false)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxIdleTime(0)
	write.SetConnMaxLifetime(0)

	if err := migrate(ctx, path, busy); err != nil {
		_ = write.Close()
		return nil, err
	}

	read, err := openCached(dsn(path, false, busy), true)
	if err != nil {
		_ = write.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)

	ckpt, err := sql.Open("sqlite", path+"?"+checkpointDSN(busy))
	if err != nil {
		_ = write.Close()
		_ = read.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	ckpt.SetMaxOpenConns(1)
	s := &Store{write: write, read: read, ckpt: ckpt,
		writes: make(chan *writeReq), quit: make(chan struct{}), writerDone: make(chan struct{}),
		writerSync:       syncFull,
		checkpointerDone: make(chan struct{})}
	go s.runWriter()
	go s.runCheckpointer()
	if err := s.Ping(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return s, nil
}

// dsn returns the driver's data source name for path. Writers begin their
// transactions IMMEDIATE; readers are query_only. The driver runs
// busy_timeout first, then the other pragmas, on every new connection.
func dsn(path string, writer bool, busy time.Duration) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(FULL)")
	if writer {
		// journal_mode is a property of the file: the writer sets it once
		// per connection (a no-op when it is already WAL).
		q.Add("_pragma", "journal_mode(WAL)")
		// Deleted content (a used token's sealed card, a purged row) is
		// overwritten with zeros rather than left in free space; the
		// tokens are crypto-shredded besides (payment/token.go).
		q.Add("_pragma", "secure_delete(1)")
		q.Set("_txlock", "immediate")
	} else {
		q.Add("_pragma", "query_only(1)")
	}
	return path + "?" + q.Encode()
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.read.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return translate(err)
	}
	return nil
}

// Close releases both connection pools. It may be called more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.quit)
		<-s.writerDone
		<-s.checkpointerDone
		s.closeErr = errors.Join(s.write.Close(), s.read.Close(), s.ckpt.Close())
	})
	return s.closeErr
}

// inReadTx runs fn in a read transaction on the read pool, so that its
// queries see one snapshot.
func (s *Store) inReadTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return translate(err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(tx); err != nil {
		return translate(err)
	}
	return nil
}

// translate turns driver errors into the errors of the paygate.Store
// contract, by SQLite result code: unique and primary key violations are
// paygate.ErrConflict; a foreign key violation is NOT_FOUND (the referenced
// row does not exist); a lock that could not be taken within the busy
// timeout, or a file that cannot be opened, is SERVICE_UNAVAILABLE.
// paygate errors and context errors pass through; anything else is wrapped
// as an internal error.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var pe *paygate.Error
	if errors.As(err, &pe) || errors.Is(err, paygate.ErrConflict) || errors.Is(err, paygate.ErrStateConflict) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code()
		switch code {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %v", paygate.ErrConflict, err)
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return paygate.Errorf(paygate.CodeNotFound, "", "a referenced resource does not exist")
		}
		switch code & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_CANTOPEN:
			return paygate.Errorf(paygate.CodeServiceUnavailable, "", "the database is busy or unavailable; retry")
		}
	}
	return fmt.Errorf("sqlite: %w", err)
}

// notFound is the NOT_FOUND error of a resource kind.
func notFound(what string) error {
	return paygate.Errorf(paygate.CodeNotFound, "", "no such %s", what)
}

// micros converts a time to its stored form, unix microseconds.
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros converts a stored time back; it is in UTC.
func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

// nullMicros converts an optional time to its stored form.
func nullMicros(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: micros(*t), Valid: true}
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}
