package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Group commit. SQLite has one writer, and at synchronous=FULL every commit
// waits for an fsync of the WAL. A payment takes several write transactions
// (reservation, payment, provider ledger, outcome), so under concurrent load
// the writer spent most of its time waiting for fsyncs, one per
// transaction. Instead, one goroutine owns the writer connection: it takes
// the write transactions that are waiting (up to maxGroup), runs them one
// after the other inside one BEGIN IMMEDIATE transaction, each within its
// own SAVEPOINT, and commits them together with one fsync.
//
// Nothing is traded for it: a caller gets its result only after the COMMIT
// that made its writes durable returned. A transaction whose function fails
// is rolled back to its savepoint, alone; the others commit. If the group's
// transaction itself fails (COMMIT, or an error after which SQLite rolled
// the whole transaction back) every member gets the error and nothing of
// the group is written, as if each had failed on its own. Members see each
// other's writes exactly as if they had run one after the other, which is
// what the single writer did before. A lone transaction runs as before,
// without a savepoint.
//
// Lazy transactions (lazyTx) commit without their own fsync: the writes of
// a payment that precede its outcome on a route whose provider keeps its
// ledger in this database (plan.LazyCreate), and that ledger's
// entries. The writer runs the lazy members it gathered as a group of
// their own, first, at synchronous=NORMAL: SQLite then writes the group's
// frames to the WAL and commits without syncing it. The next durable
// commit (synchronous=FULL) fsyncs the WAL, which makes every frame before
// its own durable too, and a checkpoint syncs the WAL before copying it. A
// crash of the machine in between loses a suffix of the lazy commits,
// never a frame in the middle (the WAL's frames are checksummed in a
// chain), and so nothing that a client was told: the outcome a client is
// told of always commits durably after them. A crash of the process loses
// nothing: the frames are in the operating system's cache.

// maxGroup bounds how many transactions commit together.
const maxGroup = 64

// writeReq is one write transaction waiting for the writer.
type writeReq struct {
	ctx  context.Context
	fn   func(tx *sql.Tx) error
	solo bool // run in a transaction of its own (BaselinePayment)
	lazy bool // may commit without an fsync of its own (lazyTx)
	done chan writeResult
}

// writeResult is the outcome of one write transaction; panicked holds the
// value fn panicked with, re-raised in the caller's goroutine.
type writeResult struct {
	err      error
	panicked any
}

// runWriter is the goroutine that owns the writer connection until quit is
// closed.
func (s *Store) runWriter() {
	defer close(s.writerDone)
	for {
		var first *writeReq
		select {
		case first = <-s.writes:
		case <-s.quit:
			return
		}
		group := []*writeReq{first}
		if !first.solo {
		gather:
			for len(group) < maxGroup {
				select {
				case r := <-s.writes:
					if r.solo {
						s.runLazyFirst(group)
						group = []*writeReq{r}
						break gather
					}
					group = append(group, r)
				default:
					break gather
				}
			}
		}
		s.runLazyFirst(group)
		s.writerCheckpoint()
	}
}

// runLazyFirst runs the group's lazy members as a group of their own at
// synchronous=NORMAL, then the others at synchronous=FULL. The lazy go
// first so that they do not wait for the others' fsync; members of one
// group were submitted concurrently, so any order is one they could have
// run in.
func (s *Store) runLazyFirst(group []*writeReq) {
	var lazy, durable []*writeReq
	for _, r := range group {
		if r.lazy {
			lazy = append(lazy, r)
		} else {
			durable = append(durable, r)
		}
	}
	if len(lazy) > 0 {
		s.runGroup(lazy, false)
	}
	if len(durable) > 0 {
		s.runGroup(durable, true)
	}
}

// setSync sets the writer's synchronous pragma to FULL (durable) or NORMAL,
// unless it is known to be so already. SQLite refuses the change inside a
// transaction, so it is made between groups.
func (s *Store) setSync(full bool) error {
	want := syncNormal
	if full {
		want = syncFull
	}
	if s.writerSync == want {
		return nil
	}
	s.writerSync = syncUnknown
	if _, err := s.write.Exec("PRAGMA synchronous = " + string(want)); err != nil {
		return translate(fmt.Errorf("set synchronous to %s: %w", want, err))
	}
	s.writerSync = want
	return nil
}

// The writer connection's synchronous setting, as setSync last left it.
type syncSetting string

const (
	syncUnknown syncSetting = ""
	syncNormal  syncSetting = "NORMAL"
	syncFull    syncSetting = "FULL" // what the writer's DSN sets
)

// inTx runs fn in a write transaction (BEGIN IMMEDIATE), possibly together
// with other callers' transactions (see above), and returns once its writes
// are committed or rolled back. Errors are translated. fn's statements run
// to completion even if ctx ends meanwhile (an interrupted statement would
// roll back the whole group); a ctx that ends before fn starts fails it
// with nothing written.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.submit(ctx, &writeReq{fn: fn})
}

// lazyTx is inTx for a transaction that may commit without an fsync of its
// own (see above): its writes are durable once a later durable commit
// returns, and are lost, with every later lazy commit, if the machine
// crashes first.
func (s *Store) lazyTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.submit(ctx, &writeReq{fn: fn, lazy: true})
}

// soloTx is inTx in a transaction of its own, never grouped.
func (s *Store) soloTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.submit(ctx, &writeReq{fn: fn, solo: true})
}

func (s *Store) submit(ctx context.Context, req *writeReq) (err error) {
	span := startWrite(ctx, req.lazy) // trace.go
	defer func() { endSpan(span, err) }()
	req.ctx, req.done = ctx, make(chan writeResult, 1)
	select {
	case s.writes <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.quit:
		return errors.New("sqlite: the store is closed")
	}
	res := <-req.done
	if res.panicked != nil {
		panic(res.panicked)
	}
	return res.err
}

// runGroup runs the group's transactions in one database transaction,
// committed at synchronous=FULL when durable (else NORMAL), and answers each
// member.
func (s *Store) runGroup(group []*writeReq, durable bool) {
	results := make([]writeResult, len(group))
	defer func() {
		for i, r := range group {
			r.done <- results[i]
		}
	}()
	if err := s.setSync(durable); err != nil && durable {
		// Committing now could acknowledge writes that are not durable.
		// (Failing to relax the setting leaves it as durable as before.)
		for i := range results {
			results[i].err = err
		}
		return
	}
	if len(group) == 1 {
		results[0] = s.runAlone(group[0])
		return
	}
	// The group's transaction belongs to no caller: a caller that gives up
	// must not roll back the others' writes.
	tx, err := s.write.BeginTx(context.Background(), nil)
	if err != nil {
		for i := range results {
			results[i].err = translate(err)
		}
		return
	}
	s.groups.Add(1)
	for i, r := range group {
		if _, err = tx.Exec("SAVEPOINT member"); err != nil {
			break
		}
		results[i] = runFn(r, tx)
		if results[i].err == nil && results[i].panicked == nil {
			_, err = tx.Exec("RELEASE member")
		} else if _, err = tx.Exec("ROLLBACK TO member"); err == nil {
			_, err = tx.Exec("RELEASE member")
		}
		if err != nil {
			// SQLite rolled the whole transaction back (a statement
			// interrupted because its caller gave up, an I/O error):
			// this member keeps its own error, the others run again,
			// each alone, since nothing of theirs was written.
			_ = tx.Rollback()
			if results[i].err == nil && results[i].panicked == nil {
				results[i].err = translate(err)
			}
			for j := range group {
				if j != i {
					results[j] = s.runAlone(group[j])
				}
			}
			return
		}
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		_ = tx.Rollback()
		for i := range results {
			if results[i].panicked == nil {
				results[i].err = translate(err)
			}
		}
	}
}

// runAlone runs one member in a transaction of its own.
func (s *Store) runAlone(r *writeReq) writeResult {
	tx, err := s.write.BeginTx(context.Background(), nil)
	if err != nil {
		return writeResult{err: translate(err)}
	}
	res := runFn(r, tx)
	if res.err != nil || res.panicked != nil {
		_ = tx.Rollback()
		return res
	}
	if err := tx.Commit(); err != nil {
		return writeResult{err: translate(err)}
	}
	return res
}

// runFn runs one member's function, translating its error and catching a
// panic for its caller.
func runFn(r *writeReq, tx *sql.Tx) (res writeResult) {
	if err := r.ctx.Err(); err != nil {
		return writeResult{err: err}
	}
	defer func() {
		if v := recover(); v != nil {
			res = writeResult{panicked: v}
		}
	}()
	if err := r.fn(tx); err != nil {
		return writeResult{err: translate(err)}
	}
	return writeResult{}
}
