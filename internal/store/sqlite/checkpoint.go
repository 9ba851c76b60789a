package sqlite

import (
	"context"
	"fmt"
	"net/url"
	"time"
)

// WAL checkpoints run in the background, on a connection of their own.
//
// By default the connection that commits when the WAL passes 1000 pages
// copies the WAL back into the database file and fsyncs it, inside its
// commit: with one writer that stalled every write for the length of a
// checkpoint. The writer therefore has wal_autocheckpoint off, and a
// goroutine runs a PASSIVE checkpoint every checkpointInterval: it copies
// what no reader still needs, without taking the write lock, so writers go
// on meanwhile. The writer finishes the job now and then (writerCheckpoint).
// Other processes on the file (CLI commands) keep SQLite's default.

// checkpointInterval is how often the WAL is checkpointed.
const checkpointInterval = 200 * time.Millisecond

// checkpointDSN is the query of the checkpoint connection's DSN.
func checkpointDSN(busy time.Duration) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "synchronous(FULL)")
	return q.Encode()
}

// runCheckpointer checkpoints the WAL until quit is closed, then once more.
func (s *Store) runCheckpointer() {
	defer close(s.checkpointerDone)
	t := time.NewTicker(checkpointInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.quit:
			<-s.writerDone
			s.checkpoint()
			return
		}
		s.checkpoint()
	}
}

// checkpoint runs one PASSIVE checkpoint. A failure is left for the next
// one: the WAL keeps every commit durable whether or not it is
// checkpointed.
func (s *Store) checkpoint() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var busy, logFrames, checkpointed int
	_ = s.ckpt.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &checkpointed)
}

// writerCheckpointInterval is how often the writer goroutine, between two
// groups, finishes the checkpoint itself.
//
// The background checkpoint runs while the writer appends, so it never
// catches up with the end of the WAL, and SQLite starts the WAL over only
// when a write begins after a checkpoint that copied all of it: under
// steady load the WAL grew without end (half a gigabyte in ten seconds)
// and everything slowed down with it. Between two groups nothing is being
// appended, so a PASSIVE checkpoint there copies the rest (little: the
// background one did the bulk) and the next commit starts the WAL over. A
// RESTART checkpoint from the background connection was tried: it blocks
// the writer while it waits for readers, for seconds under load.
const writerCheckpointInterval = 250 * time.Millisecond

// writerCheckpoint runs on the writer goroutine between groups.
func (s *Store) writerCheckpoint() {
	if time.Since(s.lastWriterCheckpoint) < writerCheckpointInterval {
		return
	}
	s.lastWriterCheckpoint = time.Now()
	var busy, logFrames, checkpointed int
	_ = s.write.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &checkpointed)
}
