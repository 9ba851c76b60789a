package postgres

import (
	"context"
	"database/sql"
	"fmt"
)

// dropLegacyCardFingerprints converts what releases before decisions §15
// stored (issue 17): they keyed the payments' card fingerprints with
// instance_secrets' 'card-fingerprint-key', kept in this very database, and
// idempotency fingerprints with a key derived from it over bodies holding
// the card number and CVV, so a copy of the database led back to the cards.
// Card and request fingerprints are now keyed by the vault, never stored.
//
// The old fingerprints cannot be recomputed (nothing here knows the cards),
// so they are dropped: payments keep an empty card fingerprint, idempotency
// records an empty fingerprint (which replays the stored answer for any
// body), and the key is deleted, in one transaction. It runs at every
// start, after the migrations, not once as a migration: a node of an older
// release still running beside a new one would store the key again, and
// the next start drops what it wrote.
//
// The old row versions stay in the tables' files until vacuumed and
// reused; the README says how to erase them (VACUUM FULL) from a database
// whose files, not only its rows, could be copied.
func dropLegacyCardFingerprints(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("drop the card fingerprints of an older release: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	res, err := tx.ExecContext(ctx, `DELETE FROM instance_secrets WHERE name = 'card-fingerprint-key'`)
	if err != nil {
		return fmt.Errorf("drop the card fingerprints of an older release: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	for _, q := range []string{
		`UPDATE payments SET card_fingerprint = '' WHERE card_fingerprint <> ''`,
		`UPDATE idempotency_keys SET fingerprint = ''::bytea WHERE length(fingerprint) > 0`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("drop the card fingerprints of an older release: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("drop the card fingerprints of an older release: %w", err)
	}
	return nil
}
