package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/sandbox"
)

// groupTest opens a store with a scratch table and holds its writer busy
// until release is called, so that the transactions submitted meanwhile
// queue up and commit as one group.
func groupTest(t *testing.T) (s *Store, release func()) {
	t.Helper()
	return groupTestAt(t, filepath.Join(t.TempDir(), "paygate.db"))
}

func groupTestAt(t *testing.T, path string) (s *Store, release func()) {
	t.Helper()
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.inTx(t.Context(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`CREATE TABLE scratch (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return s, holdWriter(s, s.inTx)
}

// holdWriter keeps the writer busy in a transaction run by run until the
// returned release is called.
func holdWriter(s *Store, run func(context.Context, func(*sql.Tx) error) error) (release func()) {
	started, gate := make(chan struct{}), make(chan struct{})
	go func() {
		_ = run(context.Background(), func(*sql.Tx) error {
			close(started)
			<-gate
			return nil
		})
	}()
	<-started
	return func() { close(gate) }
}

// submitAll starts each fn in its own goroutine, waits until they all wait
// for the writer, releases it, and returns each call's error.
func submitAll(t *testing.T, s *Store, release func(), fns []func(tx *sql.Tx) error) []error {
	t.Helper()
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.inTx(context.Background(), fn)
		}()
	}
	time.Sleep(100 * time.Millisecond) // every goroutine is blocked sending to the writer
	release()
	wg.Wait()
	return errs
}

func insert(id int) func(tx *sql.Tx) error {
	return func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO scratch (id, v) VALUES (?, 'x')`, id)
		return err
	}
}

func stored(t *testing.T, s *Store) map[int]bool {
	t.Helper()
	rows, err := s.read.Query(`SELECT id FROM scratch`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	ids := map[int]bool{}
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids[id] = true
	}
	return ids
}

// A failing member is rolled back alone: a function error after a write,
// and a statement error (a duplicate key), while the others commit.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	s, release := groupTest(t)
	errBoom := errors.New("boom")
	var fns []func(tx *sql.Tx) error
	want := map[int]bool{}
	for i := range 40 {
		switch i % 4 {
		case 1: // writes, then fails: nothing of it stays
			fns = append(fns, func(tx *sql.Tx) error {
				if err := insert(1000 + i)(tx); err != nil {
					return err
				}
				return errBoom
			})
		case 2: // writes, then hits a duplicate key
			fns = append(fns, func(tx *sql.Tx) error {
				if err := insert(2000 + i)(tx); err != nil {
					return err
				}
				return insert(2000 + i)(tx) // the same key again
			})
		default:
			fns = append(fns, insert(i))
			want[i] = true
		}
	}
	groups := s.groups.Load()
	errs := submitAll(t, s, release, fns)
	if s.groups.Load() == groups {
		t.Fatal("no group of several transactions formed")
	}
	for i, err := range errs {
		switch {
		case i%4 == 1 && !errors.Is(err, errBoom):
			t.Errorf("member %d: %v, want boom", i, err)
		case i%4 == 2 && err == nil:
			t.Errorf("member %d: no error for a duplicate key", i)
		case i%4 != 1 && i%4 != 2 && err != nil:
			t.Errorf("member %d: %v", i, err)
		}
	}
	if got := stored(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stored %v, want %v", got, want)
	}
}

// A member that ends the whole transaction (as an interrupted statement
// does) fails alone: the others run again and commit.
func TestGroupCommitAbortedGroup(t *testing.T) {
	s, release := groupTest(t)
	fns := []func(tx *sql.Tx) error{insert(1), insert(2), func(tx *sql.Tx) error {
		if err := insert(3)(tx); err != nil {
			return err
		}
		_, err := tx.Exec(`ROLLBACK`)
		return err
	}, insert(4), insert(5)}
	groups := s.groups.Load()
	errs := submitAll(t, s, release, fns)
	if s.groups.Load() == groups {
		t.Fatal("no group of several transactions formed")
	}
	for i, err := range errs {
		if (i == 2) != (err != nil) {
			t.Errorf("member %d: %v", i, err)
		}
	}
	if got, want := fmt.Sprint(stored(t, s)), fmt.Sprint(map[int]bool{1: true, 2: true, 4: true, 5: true}); got != want {
		t.Errorf("stored %v, want %v", got, want)
	}
}

// A panic reaches its caller; the other members commit.
func TestGroupCommitPanic(t *testing.T) {
	s, release := groupTest(t)
	var got any
	fns := []func(tx *sql.Tx) error{insert(1), insert(2)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { got = recover() }()
		_ = s.inTx(context.Background(), func(tx *sql.Tx) error {
			_ = insert(3)(tx)
			panic("member panic")
		})
	}()
	errs := submitAll(t, s, release, fns)
	wg.Wait()
	if got != "member panic" {
		t.Errorf("recovered %v, want the member's panic", got)
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("member %d: %v", i, err)
		}
	}
	if got, want := fmt.Sprint(stored(t, s)), fmt.Sprint(map[int]bool{1: true, 2: true}); got != want {
		t.Errorf("stored %v, want %v", got, want)
	}
}

// A caller whose context ended before its turn writes nothing.
func TestGroupCommitCanceledBeforeTurn(t *testing.T) {
	s, release := groupTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.inTx(ctx, insert(7)) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("canceled caller: %v", err)
	}
	release()
	if err := s.inTx(context.Background(), insert(8)); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(stored(t, s)), fmt.Sprint(map[int]bool{8: true}); got != want {
		t.Errorf("stored %v, want %v", got, want)
	}
}

// The writer leaves checkpoints to the background checkpointer, which
// copies committed pages into the database file.
func TestBackgroundCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "paygate.db")
	s, release := groupTestAt(t, path)
	release()
	var auto int
	if err := s.write.QueryRow("PRAGMA wal_autocheckpoint").Scan(&auto); err != nil || auto != 0 {
		t.Fatalf("writer wal_autocheckpoint = %d, %v; want 0", auto, err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := s.inTx(context.Background(), func(tx *sql.Tx) error {
			_, err := tx.Exec(`INSERT INTO scratch (id, v) VALUES (?, ?)`, i, strings.Repeat("x", 2000))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		after, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if after.Size() > before.Size()+200*2000 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("database file %d bytes after 200 rows of 2 kB (was %d): not checkpointed", after.Size(), before.Size())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The writer keeps its temporary files, the savepoint sub-journals of
// every group member among them, in memory (sqlite.go).
func TestWriterTempStoreInMemory(t *testing.T) {
	s, release := groupTestAt(t, filepath.Join(t.TempDir(), "paygate.db"))
	release()
	var store int
	if err := s.write.QueryRow("PRAGMA temp_store").Scan(&store); err != nil || store != 2 {
		t.Fatalf("writer temp_store = %d, %v; want 2 (MEMORY)", store, err)
	}
}

// Lazy members commit as a group of their own, before the durable ones they
// were gathered with, at synchronous=NORMAL; the durable ones at FULL. The
// setting inside each member's transaction is the one its commit uses.
func TestLazyMembersCommitFirstWithoutSync(t *testing.T) {
	s, release := groupTest(t)
	var (
		mu    sync.Mutex
		order []string
	)
	member := func(id int, lazy bool) func() error {
		return func() error {
			run := s.inTx
			if lazy {
				run = s.lazyTx
			}
			return run(context.Background(), func(tx *sql.Tx) error {
				var level int
				if err := tx.QueryRow(`PRAGMA synchronous`).Scan(&level); err != nil {
					return err
				}
				mu.Lock()
				order = append(order, fmt.Sprintf("%v:%d", lazy, level))
				mu.Unlock()
				return insert(id)(tx)
			})
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 12)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = member(i, i%2 == 0)()
		}()
	}
	time.Sleep(100 * time.Millisecond) // every goroutine waits for the writer
	release()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
	}
	want := strings.Repeat("true:1 ", 6) + strings.Repeat("false:2 ", 6)
	if got := strings.Join(order, " ") + " "; got != want {
		t.Errorf("members ran as %q, want the lazy ones first at NORMAL (1), then the others at FULL (2): %q", got, want)
	}
	if n := len(stored(t, s)); n != 12 {
		t.Errorf("%d rows stored, want 12", n)
	}

	// Alone, one after the other, each commits at its own setting.
	for i, lazy := range []bool{true, false, true, true, false} {
		order = nil
		if err := member(100+i, lazy)(); err != nil {
			t.Fatal(err)
		}
		level := "2"
		if lazy {
			level = "1"
		}
		if want := fmt.Sprintf("%v:%s", lazy, level); order[0] != want {
			t.Errorf("alone, call %d ran as %s, want %s", i, order[0], want)
		}
	}
}

// Whatever the order in which the writer gathers them, and even when a solo
// transaction (BaselinePayment) cuts a gathering short, durable members
// commit at synchronous=FULL and lazy ones at NORMAL. The writer is held by
// a lazy transaction, so that it starts each round at NORMAL.
func TestDurableMembersNeverCommitRelaxed(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "paygate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	level := func(tx *sql.Tx) (int, error) {
		var l int
		err := tx.QueryRow(`PRAGMA synchronous`).Scan(&l)
		return l, err
	}
	for round := range 20 {
		release := holdWriter(s, s.lazyTx)
		kinds := []string{"solo"}
		for i := range 12 {
			kinds = append(kinds, map[bool]string{true: "lazy", false: "durable"}[i%2 == 0])
		}
		levels := make([]int, len(kinds))
		errs := make([]error, len(kinds))
		var wg sync.WaitGroup
		for i, kind := range kinds {
			run := map[string]func(context.Context, func(*sql.Tx) error) error{
				"solo": s.soloTx, "lazy": s.lazyTx, "durable": s.inTx}[kind]
			wg.Go(func() {
				errs[i] = run(context.Background(), func(tx *sql.Tx) (err error) {
					levels[i], err = level(tx)
					return err
				})
			})
		}
		time.Sleep(50 * time.Millisecond) // every goroutine waits for the writer
		release()
		wg.Wait()
		for i, kind := range kinds {
			want := 2
			if kind == "lazy" {
				want = 1
			}
			if errs[i] != nil || levels[i] != want {
				t.Fatalf("round %d: a %s member ran at synchronous=%d (err %v), want %d", round, kind, levels[i], errs[i], want)
			}
		}
	}
}

// The store's writes commit at the setting their role allows: a payment
// inserted for a route with a remote provider and its outcome at FULL; a
// payment inserted for a route of sandboxes, a reservation on its own and a
// sandbox's ledger entry at NORMAL. Each call runs alone on an idle writer,
// which it leaves at the setting it committed with.
func TestWhichWritesCommitLazily(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "paygate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx, now := t.Context(), time.Now().UTC()
	if err := s.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.Merchant{ID: "m", Name: "n", CreatedAt: now}}}); err != nil {
		t.Fatal(err)
	}
	newPayment := func(route ...paygate.Provider) string {
		p := paygate.Payment{ID: id.New(), MerchantID: "m", Mode: paygate.ModeTest, Method: paygate.MethodCard,
			Amount: paygate.Money{Amount: 1000, Currency: "EUR"}, AmountText: "10.00", Metadata: []byte("{}"),
			LeaseUntil: now.Add(time.Minute), CreatedAt: now, UpdatedAt: now}
		if _, err := s.CreatePayment(ctx, paygate.NewPayment{Payment: p, CustomerExternalID: "c",
			NewCustomerID: id.New(), Route: route}); err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	check := func(what string, want syncSetting) {
		t.Helper()
		if s.writerSync != want { // written by the writer before it answered
			t.Errorf("%s committed at %q, want %q", what, s.writerSync, want)
		}
	}

	remote := newPayment(sandbox.New("sandbox-eu", nil), remoteProvider{})
	check("a payment that may go to a remote provider", syncFull)
	sandboxed := newPayment(sandbox.New("sandbox-eu", nil))
	check("a payment for a sandbox", syncNormal)
	if err := s.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.SandboxCharge{ProviderID: "sandbox", PaymentID: sandboxed,
		Mode: paygate.ModeTest, Amount: paygate.Money{Amount: 1000, Currency: "EUR"},
		Outcome: paygate.SandboxCaptured, ReadyAt: now, CreatedAt: now}}}); err != nil {
		t.Fatal(err)
	}
	check("a sandbox ledger entry", syncNormal)
	for _, pid := range []string{sandboxed, remote} {
		if err := s.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.PaymentTransition{ID: pid, MerchantID: "m", Mode: paygate.ModeTest,
			From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentFailed, UpdatedAt: now}}}); err != nil {
			t.Fatal(err)
		}
		check("an outcome", syncFull)
	}
	if _, _, err := s.ReserveIdempotency(ctx, paygate.IdempotencyReservation{MerchantID: "m", Mode: paygate.ModeTest,
		Key: "k", Fingerprint: []byte("f"), Now: now}); err != nil {
		t.Fatal(err)
	}
	check("a reservation", syncNormal)
}

// remoteProvider is a provider that keeps its records outside the gateway:
// it does not declare plan.GatewayLedger. The store never calls it.
type remoteProvider struct{ paygate.Provider }

func (remoteProvider) ID() string { return "remote" }
