package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// insertMerchant inserts a merchant. A duplicate id is paygate.ErrConflict.
func insertMerchant(ctx context.Context, tx *sql.Tx, m paygate.Merchant) error {
	_, err := tx.ExecContext(ctx,
		`INSERT INTO merchants (`+merchantColumns+`) VALUES (?, ?, ?)`,
		m.ID, m.Name, micros(m.CreatedAt))
	return err
}

// Merchants lists merchants oldest first (by creation, then insertion),
// the one with q.ID when it is set, at most q.Limit (<= 0: all).
func (s *Store) Merchants(ctx context.Context, q paygate.MerchantQuery) ([]paygate.Merchant, error) {
	query := `SELECT ` + merchantColumns + ` FROM merchants`
	var args []any
	if q.ID != "" {
		query += ` WHERE id = ?`
		args = append(args, q.ID)
	}
	rows, err := s.read.QueryContext(ctx, query+` ORDER BY created_at, rowid LIMIT ?`, append(args, sqlLimit(q.Limit))...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []paygate.Merchant
	for rows.Next() {
		m, err := scanMerchant(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, m)
	}
	return out, translate(rows.Err())
}

// merchantColumns are the columns scanMerchant reads (one mapping for
// both engines: codec.ScanMerchant).
const merchantColumns = codec.MerchantColumns

func scanMerchant(row scanner) (paygate.Merchant, error) { return codec.ScanMerchant(row) }

// apiKeyColumns are the columns a writer sets and scanAPIKey reads (one
// mapping for both engines: codec.ScanAPIKey).
const apiKeyColumns = codec.APIKeyColumns

// apiKeyReadColumns are the columns scanAPIKeyUsed reads: apiKeyColumns and
// when the key was last used (written by APIKeyUsage only).
const apiKeyReadColumns = codec.APIKeyReadColumns

// insertAPIKey inserts a key. A duplicate id or hash is
// paygate.ErrConflict; an unknown merchant is NOT_FOUND (the foreign key).
func insertAPIKey(ctx context.Context, tx *sql.Tx, k paygate.APIKey) error {
	_, err := tx.ExecContext(ctx,
		`INSERT INTO api_keys (`+apiKeyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.MerchantID, string(k.Mode), string(k.Type), k.Hash, k.Hint,
		micros(k.CreatedAt), nullMicros(k.ExpiresAt), nullMicros(k.RevokedAt))
	return err
}

func scanAPIKey(row scanner) (paygate.APIKey, error) { return codec.ScanAPIKey(row) }

// scanAPIKeyUsed scans apiKeyReadColumns.
func scanAPIKeyUsed(row scanner) (paygate.APIKey, error) { return codec.ScanAPIKeyUsed(row) }

// APIKeys lists the keys matching q, oldest first (keys created at the same
// time in insertion order).
func (s *Store) APIKeys(ctx context.Context, q paygate.APIKeyQuery) ([]paygate.APIKey, error) {
	if err := q.Check(); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	query := `SELECT ` + apiKeyReadColumns + ` FROM api_keys WHERE 1`
	var args []any
	if q.ID != "" {
		query += ` AND id = ?`
		args = append(args, q.ID)
	}
	if len(q.Hash) > 0 {
		query += ` AND hash = ?`
		args = append(args, q.Hash)
	}
	if q.MerchantID != "" {
		query += ` AND merchant_id = ?`
		args = append(args, q.MerchantID)
	}
	if q.Mode != "" {
		query += ` AND mode = ?`
		args = append(args, string(q.Mode))
	}
	rows, err := s.read.QueryContext(ctx, query+` ORDER BY created_at, rowid`, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var keys []paygate.APIKey
	for rows.Next() {
		k, err := scanAPIKeyUsed(rows)
		if err != nil {
			return nil, translate(err)
		}
		keys = append(keys, k)
	}
	return keys, translate(rows.Err())
}

// rotateAPIKey inserts r.Next, makes the key r.OldID expire at
// r.OldExpiresAt (or earlier if it already expires earlier) and records
// r.Next as its successor. NOT_FOUND if the old key does not exist; a
// *paygate.KeyReplacedError if it already has a successor;
// paygate.ErrStateConflict if it is revoked or expired at the rotation
// time, r.Next.CreatedAt. The unit's transaction holds SQLite's one write
// lock from its start, and the update is conditional on successor_id IS
// NULL as well: two rotations of one key cannot both win.
func rotateAPIKey(ctx context.Context, tx *sql.Tx, r paygate.APIKeyRotation) error {
	oldID, next := r.OldID, r.Next
	old, err := scanAPIKey(tx.QueryRowContext(ctx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE id = ?`, oldID))
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("API key")
	}
	if err != nil {
		return err
	}
	// successor_id is NULL for none on both engines (it names another key).
	var successor string
	if err := tx.QueryRowContext(ctx, `SELECT successor_id FROM api_keys WHERE id = ?`, oldID).Scan(codec.OptionalText(&successor)); err != nil {
		return err
	}
	if successor != "" {
		return &paygate.KeyReplacedError{KeyID: oldID, SuccessorID: successor}
	}
	if !old.ActiveAt(next.CreatedAt) {
		return fmt.Errorf("%w: API key %s is revoked or expired", paygate.ErrStateConflict, oldID)
	}
	if err := insertAPIKey(ctx, tx, next); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx,
		`UPDATE api_keys SET expires_at = min(coalesce(expires_at, ?1), ?1), successor_id = ?3
		WHERE id = ?2 AND successor_id IS NULL`,
		micros(r.OldExpiresAt), oldID, next.ID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("%w: API key %s was rotated concurrently", paygate.ErrStateConflict, oldID)
	}
	return nil
}

// revokeAPIKey revokes a key at r.At; a revoked key keeps its first
// revocation time. NOT_FOUND if it does not exist.
func revokeAPIKey(ctx context.Context, tx *sql.Tx, r paygate.APIKeyRevocation) error {
	res, err := tx.ExecContext(ctx,
		`UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`, micros(r.At), r.ID)
	if err != nil {
		return err
	}
	return oneRow(res, "API key")
}
