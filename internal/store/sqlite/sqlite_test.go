package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sqlitedriver "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/sqlite"
	"github.com/paygate/paygate/internal/store/storetest"
)

func open(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, func(t *testing.T) paygate.Store {
		return open(t, filepath.Join(t.TempDir(), "paygate.db"))
	})
}

func TestPragmas(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "paygate.db"))
	for _, pool := range []string{"write", "read"} {
		t.Run(pool, func(t *testing.T) {
			db := sqlite.DBForTest(s, pool == "write")
			var journal string
			if err := db.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&journal); err != nil {
				t.Fatal(err)
			}
			if journal != "wal" {
				t.Errorf("journal_mode = %q, want wal", journal)
			}
			for pragma, want := range map[string]int{"synchronous": 2, "foreign_keys": 1, "busy_timeout": 10000} {
				var got int
				if err := db.QueryRowContext(t.Context(), "PRAGMA "+pragma).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s = %d, want %d", pragma, got, want)
				}
			}
		})
	}
}

func TestConcurrentOpensMigrateOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "paygate.db")
	const n = 8
	stores := make([]*sqlite.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = sqlite.Open(t.Context(), path) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("open %d: %v", i, errs[i])
		}
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	var applied int
	db := sqlite.DBForTest(stores[0], false)
	if err := db.QueryRowContext(t.Context(),
		"SELECT count(*) FROM goose_db_version WHERE version_id > 0").Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if applied != sqlite.MigrationCountForTest() {
		t.Errorf("%d migrations recorded, want %d (each once)", applied, sqlite.MigrationCountForTest())
	}
	// Reopening a migrated file changes nothing.
	open(t, path)
}

func TestTwoStoresShareOneFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "paygate.db")
	a, b := open(t, path), open(t, path)
	ctx := t.Context()
	now := paygate.SystemClock{}.Now()
	m := paygate.Merchant{ID: "2f1c4bd4-5f5a-4c36-9f8e-7d0a1e2b3c4d", Name: "Shared", CreatedAt: now}
	key := paygate.APIKey{ID: "a3d9e2f0-1b2c-4d5e-8f90-123456789abc", MerchantID: m.ID, Mode: paygate.ModeTest,
		Type: paygate.KeySecret, Hash: []byte("0123456789abcdef0123456789abcdef"), Hint: "smtgw_sk_test_…abcd", CreatedAt: now}
	if err := a.Commit(ctx, paygate.Unit{Ops: []paygate.Op{m, key}}); err != nil {
		t.Fatal(err)
	}
	got, err := paygate.OneMerchant(b.Merchants(ctx, paygate.MerchantQuery{ID: m.ID}))
	if err != nil {
		t.Fatalf("second store does not see the merchant: %v", err)
	}
	if got.Name != m.Name || !got.CreatedAt.Equal(m.CreatedAt) {
		t.Errorf("got %+v, want %+v", got, m)
	}
	// A revocation through one store is seen at once by the other.
	if err := b.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.APIKeyRevocation{ID: key.ID, At: now}}}); err != nil {
		t.Fatal(err)
	}
	_, _, err = a.ReserveIdempotency(ctx, paygate.IdempotencyReservation{
		MerchantID: m.ID, Mode: paygate.ModeTest, Key: "k", Fingerprint: []byte("f"), APIKeyID: key.ID, Now: now.Add(time.Second),
	})
	if paygate.ErrorCode(err) != paygate.CodeUnauthorized {
		t.Errorf("reserve with a key revoked through the other store: got %v, want UNAUTHORIZED", err)
	}
	// Both stores write concurrently without failing, and each sees the
	// other's write.
	ids := []string{id.New(), id.New()}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, s := range []*sqlite.Store{a, b} {
		wg.Go(func() {
			errs[i] = s.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.Merchant{ID: ids[i], Name: "Concurrent", CreatedAt: now}}})
		})
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("concurrent writes: %v, %v", errs[0], errs[1])
	}
	for _, s := range []*sqlite.Store{a, b} {
		for _, mid := range ids {
			if _, err := paygate.OneMerchant(s.Merchants(ctx, paygate.MerchantQuery{ID: mid})); err != nil {
				t.Errorf("merchant %s written through one store: %v", mid, err)
			}
		}
	}
}

func TestOpenRefusesBadPaths(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro"} {
		if s, err := sqlite.Open(context.Background(), path); err == nil {
			_ = s.Close()
			t.Errorf("Open(%q) succeeded, want an error", path)
		}
	}
}

func TestClosedStoreFails(t *testing.T) {
	t.Parallel()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "paygate.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Ping(t.Context()); err == nil {
		t.Error("Ping after Close succeeded")
	}
}

// helperEnv names the database file a helper process opens.
const helperEnv = "PAYGATE_SQLITE_TEST_HELPER_DB"

// TestHelperProcess is not a test: run by TestProcessesShareOneFile as a
// separate process, it opens the file, tries to create the one merchant
// every helper creates (under a name of its own), and prints the name of the
// merchant stored: the first write of all.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper process only")
	}
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "open: %v\n", err)
		os.Exit(3)
	}
	defer s.Close()
	const shared = "7b0e3c52-9a41-4d8e-b6f2-0c5d1e2f3a4b"
	m := paygate.Merchant{ID: shared, Name: fmt.Sprintf("pid-%d", os.Getpid()), CreatedAt: paygate.SystemClock{}.Now()}
	// Every helper but the first gets a conflict: the merchant exists.
	if err := s.Commit(t.Context(), paygate.Unit{Ops: []paygate.Op{m}}); err != nil && !errors.Is(err, paygate.ErrConflict) {
		fmt.Fprintf(os.Stderr, "create merchant: %v\n", err)
		os.Exit(4)
	}
	stored, err := paygate.OneMerchant(s.Merchants(t.Context(), paygate.MerchantQuery{ID: shared}))
	if err != nil {
		fmt.Fprintf(os.Stderr, "read merchant: %v\n", err)
		os.Exit(5)
	}
	fmt.Printf("first=%s\n", stored.Name)
}

// TestProcessesShareOneFile starts several processes that open one fresh
// file at once (as `serve` and CLI commands do): all of them migrate or wait
// for the migration, and all agree on the first merchant stored.
func TestProcessesShareOneFile(t *testing.T) {
	t.Parallel()
	if os.Getenv(helperEnv) != "" {
		t.Skip("inside a helper process")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "paygate.db")
	const n = 4
	outs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cmd := exec.CommandContext(t.Context(), exe, "-test.run=^TestHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), helperEnv+"="+path)
			out, err := cmd.Output()
			if ee, ok := err.(*exec.ExitError); ok {
				err = fmt.Errorf("%w: %s", err, ee.Stderr)
			}
			outs[i], errs[i] = string(out), err
		})
	}
	wg.Wait()
	var secrets []string
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("process %d: %v", i, errs[i])
		}
		for line := range strings.Lines(outs[i]) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "first="); ok {
				secrets = append(secrets, v)
			}
		}
	}
	if len(secrets) != n {
		t.Fatalf("got %d answers from %d processes: %q", len(secrets), n, outs)
	}
	for _, v := range secrets {
		if v != secrets[0] {
			t.Fatalf("processes disagree on the first merchant stored: %q", secrets)
		}
	}
	s := open(t, path)
	var applied int
	if err := sqlite.DBForTest(s, false).QueryRowContext(t.Context(),
		"SELECT count(*) FROM goose_db_version WHERE version_id > 0").Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if applied != sqlite.MigrationCountForTest() {
		t.Errorf("%d migrations recorded, want %d", applied, sqlite.MigrationCountForTest())
	}
}

// lockFile takes the file's write lock from a connection of its own, as
// another process would, and holds it until the test ends.
func lockFile(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(0)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatalf("take the write lock: %v", err)
	}
	t.Cleanup(func() { _ = tx.Rollback(); _ = db.Close() })
}

func TestWriteTransactionsBeginImmediate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "paygate.db")
	s := open(t, path)
	// A write transaction of the store holds the write lock from its start,
	// before it has written anything.
	tx, err := sqlite.DBForTest(s, true).BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	other, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(0)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	otherTx, err := other.BeginTx(t.Context(), nil)
	if err == nil {
		_ = otherTx.Rollback()
		t.Fatal("a second writer began while the store's write transaction was open")
	}
	var se *sqlitedriver.Error
	if !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY {
		t.Fatalf("second writer: got %v, want SQLITE_BUSY", err)
	}
}

func TestBusyIsServiceUnavailable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "paygate.db")
	s, err := sqlite.OpenWithBusyTimeoutForTest(t.Context(), path, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	lockFile(t, path)
	err = s.Commit(t.Context(), paygate.Unit{Ops: []paygate.Op{paygate.Merchant{ID: "m", Name: "n", CreatedAt: paygate.SystemClock{}.Now()}}})
	if paygate.ErrorCode(err) != paygate.CodeServiceUnavailable {
		t.Fatalf("write while another process holds the lock: got %v, want SERVICE_UNAVAILABLE", err)
	}
	// Reads are not blocked by a writer (WAL).
	if _, err := paygate.OneMerchant(s.Merchants(t.Context(), paygate.MerchantQuery{ID: "m"})); !paygate.IsNotFound(err) {
		t.Fatalf("read while another process holds the write lock: got %v, want NOT_FOUND", err)
	}
}

func TestOnEvents(t *testing.T) {
	t.Parallel()
	storetest.CheckOnEvents(t, func(t *testing.T, onEvents func()) paygate.Store {
		s, err := sqlite.OpenWith(t.Context(), filepath.Join(t.TempDir(), "paygate.db"), sqlite.Options{OnEvents: onEvents})
		if err != nil {
			t.Fatalf("OpenWith: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
