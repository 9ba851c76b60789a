package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// dropLegacyCardFingerprints converts what releases before decisions §15
// stored (issue 17): they keyed the payments' card fingerprints with
// instance_secrets' 'card-fingerprint-key', kept in this very file, and
// idempotency fingerprints with a key derived from it over bodies holding
// the card number and CVV, so a copy of the file led back to the cards.
// Card and request fingerprints are now keyed by the vault, never stored.
//
// The old fingerprints cannot be recomputed (nothing here knows the cards),
// so they are dropped: payments keep an empty card fingerprint, idempotency
// records an empty fingerprint (which replays the stored answer for any
// body), and the key is deleted. It runs at every open, not once as a
// migration: a node of an older release still running beside a new one
// would store the key again, and the next open drops what it wrote.
//
// Deleted and overwritten content stays in SQLite's free pages and in the
// WAL, where a byte scan of the file finds it, so after a drop the file is
// rebuilt (VACUUM) and the WAL emptied.
func dropLegacyCardFingerprints(ctx context.Context, db *sql.DB) error {
	dropped, err := func() (bool, error) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return false, err
		}
		defer func() { _ = tx.Rollback() }()
		res, err := tx.ExecContext(ctx, `DELETE FROM instance_secrets WHERE name = 'card-fingerprint-key'`)
		if err != nil {
			return false, err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return false, err
		}
		for _, q := range []string{
			`UPDATE payments SET card_fingerprint = '' WHERE card_fingerprint <> ''`,
			`UPDATE idempotency_keys SET fingerprint = x'' WHERE length(fingerprint) > 0`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return false, err
			}
		}
		return true, tx.Commit()
	}()
	if err != nil {
		return fmt.Errorf("drop the card fingerprints of an older release: %w", err)
	}
	if !dropped {
		return nil
	}
	// The drop is committed: should another process hold the file past
	// the busy timeout, try again here, since a later open finds nothing
	// left to drop and would not erase it.
	var errs []error
	for attempt := range migrationAttempts {
		_, err := db.ExecContext(ctx, `VACUUM`)
		if err == nil {
			_, err = db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
		}
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("erase the card fingerprints of an older release: %w", errors.Join(append(errs, ctx.Err())...))
		case <-time.After(time.Duration(attempt+1) * 100 * time.Millisecond):
		}
	}
	return fmt.Errorf("erase the card fingerprints of an older release: %w", errors.Join(errs...))
}
