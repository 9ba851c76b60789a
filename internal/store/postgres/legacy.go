package postgres

import (
	"context"
	"database/sql"
	"fmt"
)

// deleteLegacyCardFingerprintKey finishes, at every start, what migration
// 00007 starts (decisions §15, issue 17). Releases before it keyed card and
// request fingerprints with instance_secrets' 'card-fingerprint-key', so a
// copy of the database led back to the cards; 00007 dropped those
// fingerprints and the key. A node of the older release still running
// stores its key again: it is deleted here. Fingerprints written under it
// meanwhile are left: without the key they lead nowhere, and they cannot be
// told from this release's.
//
// The old row versions stay in the tables' files until vacuumed and
// reused; the README says how to erase them (VACUUM FULL) from a database
// whose files, not only its rows, could be copied.
func deleteLegacyCardFingerprintKey(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `DELETE FROM instance_secrets WHERE name = 'card-fingerprint-key'`); err != nil {
		return fmt.Errorf("delete an older release's card fingerprint key: %w", err)
	}
	return nil
}
