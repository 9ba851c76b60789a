package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// --- merchants ----------------------------------------------------------------

// merchantColumns are the columns scanMerchant reads (one mapping for
// both engines: codec.ScanMerchant).
const merchantColumns = codec.MerchantColumns

func scanMerchant(row pgx.Row) (paygate.Merchant, error) { return codec.ScanMerchant(row) }

// insertMerchant inserts a merchant. A duplicate id is paygate.ErrConflict.
const insertMerchant = `INSERT INTO merchants (` + codec.MerchantColumns + `) VALUES ($1, $2, $3)`

// Merchants lists merchants oldest first (by creation, then insertion),
// the one with q.ID when it is set, at most q.Limit (<= 0: all).
func (s *Store) Merchants(ctx context.Context, q paygate.MerchantQuery) ([]paygate.Merchant, error) {
	var b sqlBuilder
	query := `SELECT ` + merchantColumns + ` FROM merchants`
	if q.ID != "" {
		query += ` WHERE id = ` + b.arg(q.ID)
	}
	query += ` ORDER BY created_at, seq LIMIT ` + b.arg(nullLimit(q.Limit))
	rows, err := s.pool.Query(ctx, query, b.args...)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.Merchant, error) { return scanMerchant(r) })
	return out, translate(err)
}

// --- API keys -----------------------------------------------------------------

// apiKeyReadColumns are the columns scanAPIKeyUsed reads: every column a
// writer sets and when the key was last used (written by APIKeyUsage
// only). One mapping for both engines: codec.ScanAPIKeyUsed.
const apiKeyReadColumns = codec.APIKeyReadColumns

func apiKeyArgs(k paygate.APIKey) []any {
	return []any{k.ID, k.MerchantID, k.Mode, k.Type, k.Hash, k.Hint, k.CreatedAt, k.ExpiresAt, k.RevokedAt}
}

// scanAPIKeyUsed scans apiKeyReadColumns.
func scanAPIKeyUsed(row pgx.Row) (paygate.APIKey, error) { return codec.ScanAPIKeyUsed(row) }

// insertAPIKeyInUnit inserts a key, failing the unit (PG404) when its
// merchant does not exist. A duplicate id or hash is paygate.ErrConflict.
const insertAPIKeyInUnit = `
	WITH ins AS (
		INSERT INTO api_keys (` + codec.APIKeyColumns + `)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9
		WHERE EXISTS (SELECT 1 FROM merchants WHERE id = $2)
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM ins) THEN true ELSE unit_refused(false) END`

// APIKeys lists the keys matching q, oldest first (keys created at the same
// time in insertion order): by the primary key, the unique hash or the
// merchant's index, whichever q names.
func (s *Store) APIKeys(ctx context.Context, q paygate.APIKeyQuery) ([]paygate.APIKey, error) {
	if err := q.Check(); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	var b sqlBuilder
	query := `SELECT ` + apiKeyReadColumns + ` FROM api_keys WHERE true`
	if q.ID != "" {
		query += ` AND id = ` + b.arg(q.ID)
	}
	if len(q.Hash) > 0 {
		query += ` AND hash = ` + b.arg(q.Hash)
	}
	if q.MerchantID != "" {
		query += ` AND merchant_id = ` + b.arg(q.MerchantID)
	}
	if q.Mode != "" {
		query += ` AND mode = ` + b.arg(q.Mode)
	}
	query += ` ORDER BY created_at, seq`
	rows, err := s.pool.Query(ctx, query, b.args...)
	if err != nil {
		return nil, translate(err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.APIKey, error) { return scanAPIKeyUsed(r) })
	return keys, translate(err)
}

// rotateAPIKeyInUnit inserts the next key, makes the old one expire at
// @old_expires_at (or keeps its earlier expiry) and records the next key
// as its successor, in one statement. The old key must have no successor
// and be active at @now (the rotation time). The update is conditional on
// successor_id IS NULL: of two concurrent rotations the second waits for
// the first's row lock, finds the successor set and inserts nothing. When
// nothing moved, unit_rotation_refused (migration 00014) fails the unit
// with the reason, read in a new snapshot that sees a concurrent rotation
// the statement waited for: PG404 (no such key), PG410 (a successor, in
// the error's detail) or PG409 (revoked or expired).
const rotateAPIKeyInUnit = `
	WITH old AS (
		UPDATE api_keys SET expires_at = LEAST(expires_at, @old_expires_at), successor_id = @id
		WHERE id = @old_id
			AND successor_id IS NULL
			AND (revoked_at IS NULL OR revoked_at > @now)
			AND (expires_at IS NULL OR expires_at > @now)
		RETURNING id
	), ins AS (
		INSERT INTO api_keys (` + codec.APIKeyColumns + `)
		SELECT @id, @merchant_id, @mode, @type, @hash, @hint, @created_at, @expires_at, @revoked_at
		FROM old
		RETURNING id
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM ins) THEN true ELSE unit_rotation_refused(@old_id) END`

func rotationArgs(r paygate.APIKeyRotation) namedArgs {
	next := r.Next
	return namedArgs{
		"old_id": r.OldID, "old_expires_at": r.OldExpiresAt, "now": next.CreatedAt,
		"id": next.ID, "merchant_id": next.MerchantID, "mode": next.Mode, "type": next.Type,
		"hash": next.Hash, "hint": next.Hint, "created_at": next.CreatedAt,
		"expires_at": next.ExpiresAt, "revoked_at": next.RevokedAt,
	}
}

// sqlStateReplaced is what unit_rotation_refused raises for a key that
// already has a successor, named in the error's detail.
const sqlStateReplaced = "PG410"

// revokeAPIKeyInUnit revokes a key at $2 (a revoked key keeps its first
// revocation time), failing the unit (PG404) when it does not exist.
const revokeAPIKeyInUnit = `
	WITH r AS (
		UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM r) THEN true ELSE unit_refused(false) END`
