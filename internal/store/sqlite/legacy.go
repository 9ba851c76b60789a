package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Names in instance_secrets of an older release's card fingerprint key,
// and of the note that what it keyed must still be erased from the file.
const (
	legacyFingerprintKey = "card-fingerprint-key"
	legacyErasePending   = "card-fingerprint-key-erase"
)

// eraseAttempts bounds how often an open tries to erase, each try waiting
// up to the busy timeout for other connections.
const eraseAttempts = 3

// eraseLegacyCardFingerprints finishes, at every open, what migration
// 00007 starts (decisions §15, issue 17). Releases before it keyed card and
// request fingerprints with instance_secrets' 'card-fingerprint-key', so a
// copy of the file led back to the cards; 00007 dropped those fingerprints
// and the key. Two things remain:
//
//   - A node of the older release still running stores its key again. It
//     is deleted here. Fingerprints written under it meanwhile are left:
//     without the key they lead nowhere, and they cannot be told from this
//     release's.
//   - Deleted and overwritten content stays in SQLite's free pages and in
//     the WAL, where a byte scan of the file finds it. After a drop (00007
//     or a deletion here notes it as pending, in the same transaction) the
//     file is rebuilt (VACUUM) and the WAL emptied; the note is removed
//     only once both succeeded, so an open that could not (another process
//     kept the file busy) is followed by one that does.
func eraseLegacyCardFingerprints(ctx context.Context, db *sql.DB) error {
	pending, err := func() (bool, error) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return false, err
		}
		defer func() { _ = tx.Rollback() }()
		res, err := tx.ExecContext(ctx, `DELETE FROM instance_secrets WHERE name = ?`, legacyFingerprintKey)
		if err != nil {
			return false, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return false, err
		} else if n > 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO instance_secrets (name, value) VALUES (?, x'00') ON CONFLICT (name) DO NOTHING`, legacyErasePending); err != nil {
				return false, err
			}
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM instance_secrets WHERE name = ?`, legacyErasePending).Scan(&n); err != nil {
			return false, err
		}
		return n > 0, tx.Commit()
	}()
	if err != nil || !pending {
		return wrapErase(err)
	}
	var errs []error
	for attempt := range eraseAttempts {
		err := vacuumAndTruncate(ctx, db)
		if err == nil {
			_, err = db.ExecContext(ctx, `DELETE FROM instance_secrets WHERE name = ?`, legacyErasePending)
			return wrapErase(err)
		}
		errs = append(errs, err)
		select {
		case <-ctx.Done():
			return wrapErase(errors.Join(append(errs, ctx.Err())...))
		case <-time.After(time.Duration(attempt+1) * 100 * time.Millisecond):
		}
	}
	return wrapErase(fmt.Errorf("another process keeps the database busy; stop it and start again: %w", errors.Join(errs...)))
}

// vacuumAndTruncate rebuilds the file and empties the WAL. A checkpoint
// that other connections keep from finishing does not fail: it reports
// busy, which is an error here.
func vacuumAndTruncate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `VACUUM`); err != nil {
		return err
	}
	var busy, logFrames, checkpointed int
	if err := db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &checkpointed); err != nil {
		return err
	}
	if busy != 0 {
		return errors.New("the WAL checkpoint was blocked by another connection")
	}
	return nil
}

func wrapErase(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("erase an older release's card fingerprints: %w", err)
}
