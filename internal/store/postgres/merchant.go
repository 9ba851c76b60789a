package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/paygate"
)

// --- merchants ----------------------------------------------------------------

const merchantColumns = `id, name, created_at`

func scanMerchant(row pgx.Row) (paygate.Merchant, error) {
	var m paygate.Merchant
	err := row.Scan(&m.ID, &m.Name, &m.CreatedAt)
	return m, err
}

// CreateMerchant inserts a merchant and its first keys in one implicit
// transaction (one pipelined batch). ErrConflict on a duplicate id or key
// hash.
func (s *Store) CreateMerchant(ctx context.Context, m paygate.Merchant, keys []paygate.APIKey) error {
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO merchants (id, name, created_at) VALUES ($1, $2, $3)`, m.ID, m.Name, m.CreatedAt)
	for _, k := range keys {
		b.Queue(insertAPIKey, apiKeyArgs(k)...)
	}
	return translate(s.pool.SendBatch(ctx, b).Close())
}

// MerchantByID returns a merchant, or NOT_FOUND.
func (s *Store) MerchantByID(ctx context.Context, id string) (paygate.Merchant, error) {
	m, err := scanMerchant(s.pool.QueryRow(ctx, `SELECT `+merchantColumns+` FROM merchants WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.Merchant{}, notFound("merchant")
	}
	return m, translate(err)
}

// FirstMerchant returns the oldest merchant; ok is false when there is none.
func (s *Store) FirstMerchant(ctx context.Context) (paygate.Merchant, bool, error) {
	m, err := scanMerchant(s.pool.QueryRow(ctx, `SELECT `+merchantColumns+` FROM merchants ORDER BY created_at, seq LIMIT 1`))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.Merchant{}, false, nil
	}
	if err != nil {
		return paygate.Merchant{}, false, translate(err)
	}
	return m, true, nil
}

// --- API keys -----------------------------------------------------------------

const apiKeyColumns = `id, merchant_id, mode, type, hash, hint, created_at, expires_at, revoked_at`

// apiKeyReadColumns are the columns scanAPIKeyUsed reads: apiKeyColumns and
// when the key was last used (written by TouchAPIKeys only).
const apiKeyReadColumns = apiKeyColumns + `, last_used_at`

const insertAPIKey = `
	INSERT INTO api_keys (id, merchant_id, mode, type, hash, hint, created_at, expires_at, revoked_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`

func apiKeyArgs(k paygate.APIKey) []any {
	return []any{k.ID, k.MerchantID, k.Mode, k.Type, k.Hash, k.Hint, k.CreatedAt, k.ExpiresAt, k.RevokedAt}
}

// scanAPIKeyUsed scans apiKeyReadColumns.
func scanAPIKeyUsed(row pgx.Row) (paygate.APIKey, error) {
	var k paygate.APIKey
	err := row.Scan(&k.ID, &k.MerchantID, &k.Mode, &k.Type, &k.Hash, &k.Hint, &k.CreatedAt, &k.ExpiresAt, &k.RevokedAt, &k.LastUsedAt)
	return k, err
}

// CreateAPIKey inserts a key. ErrConflict on a duplicate id or hash;
// NOT_FOUND when the merchant does not exist.
func (s *Store) CreateAPIKey(ctx context.Context, k paygate.APIKey) error {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO api_keys (id, merchant_id, mode, type, hash, hint, created_at, expires_at, revoked_at)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9
		WHERE EXISTS (SELECT 1 FROM merchants WHERE id = $2)`, apiKeyArgs(k)...)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("merchant")
	}
	return nil
}

// APIKeyByID returns a key by its id, or NOT_FOUND.
func (s *Store) APIKeyByID(ctx context.Context, id string) (paygate.APIKey, error) {
	k, err := scanAPIKeyUsed(s.pool.QueryRow(ctx, `SELECT `+apiKeyReadColumns+` FROM api_keys WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.APIKey{}, notFound("API key")
	}
	return k, translate(err)
}

// APIKeyByHash returns the key whose hash matches, or NOT_FOUND, whether or
// not the key is active.
func (s *Store) APIKeyByHash(ctx context.Context, hash []byte) (paygate.APIKey, error) {
	k, err := scanAPIKeyUsed(s.pool.QueryRow(ctx, `SELECT `+apiKeyReadColumns+` FROM api_keys WHERE hash = $1`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.APIKey{}, notFound("API key")
	}
	return k, translate(err)
}

// APIKeysByMerchant lists a merchant's keys, oldest first (keys created at
// the same time in insertion order).
func (s *Store) APIKeysByMerchant(ctx context.Context, merchantID string) ([]paygate.APIKey, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+apiKeyReadColumns+` FROM api_keys
		WHERE merchant_id = $1 ORDER BY created_at, seq`, merchantID)
	if err != nil {
		return nil, translate(err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.APIKey, error) { return scanAPIKeyUsed(r) })
	return keys, translate(err)
}

// APIKeysByMerchantMode lists a merchant's keys of one mode, oldest first.
func (s *Store) APIKeysByMerchantMode(ctx context.Context, merchantID string, mode paygate.Mode) ([]paygate.APIKey, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+apiKeyReadColumns+` FROM api_keys
		WHERE merchant_id = $1 AND mode = $2 ORDER BY created_at, seq`, merchantID, mode)
	if err != nil {
		return nil, translate(err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.APIKey, error) { return scanAPIKeyUsed(r) })
	return keys, translate(err)
}

// RotateAPIKey inserts next, makes oldID expire at oldExpiresAt (or keeps
// its earlier expiry) and records next as its successor, in one statement.
// The old key must have no successor and be active at next.CreatedAt (the
// rotation time). The update is conditional on successor_id IS NULL: of two
// concurrent rotations the second waits for the first's row lock, finds the
// successor set and inserts nothing. A *paygate.KeyReplacedError if the key
// already has a successor; ErrStateConflict if it is revoked or expired
// then; NOT_FOUND if it does not exist.
func (s *Store) RotateAPIKey(ctx context.Context, oldID string, next paygate.APIKey, oldExpiresAt time.Time) error {
	args := namedArgs{
		"old_id": oldID, "old_expires_at": oldExpiresAt, "now": next.CreatedAt,
		"id": next.ID, "merchant_id": next.MerchantID, "mode": next.Mode, "type": next.Type,
		"hash": next.Hash, "hint": next.Hint, "created_at": next.CreatedAt,
		"expires_at": next.ExpiresAt, "revoked_at": next.RevokedAt,
	}
	var rotated bool
	err := s.pool.QueryRow(ctx, `
		WITH old AS (
			UPDATE api_keys SET expires_at = LEAST(expires_at, @old_expires_at), successor_id = @id
			WHERE id = @old_id
				AND successor_id IS NULL
				AND (revoked_at IS NULL OR revoked_at > @now)
				AND (expires_at IS NULL OR expires_at > @now)
			RETURNING id
		), ins AS (
			INSERT INTO api_keys (id, merchant_id, mode, type, hash, hint, created_at, expires_at, revoked_at)
			SELECT @id, @merchant_id, @mode, @type, @hash, @hint, @created_at, @expires_at, @revoked_at
			FROM old
			RETURNING id
		)
		SELECT EXISTS (SELECT 1 FROM ins)`, args).Scan(&rotated)
	if err != nil {
		return translate(err)
	}
	if rotated {
		return nil
	}
	// Why not: read again, in a new snapshot that sees a concurrent
	// rotation the statement above waited for.
	var successor *string
	err = s.pool.QueryRow(ctx, `SELECT successor_id FROM api_keys WHERE id = $1`, oldID).Scan(&successor)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return notFound("API key")
	case err != nil:
		return translate(err)
	case successor != nil:
		return &paygate.KeyReplacedError{KeyID: oldID, SuccessorID: *successor}
	default:
		return paygate.ErrStateConflict
	}
}

// RevokeAPIKey revokes a key at the time; a revoked key keeps its first
// revocation time. NOT_FOUND if it does not exist.
func (s *Store) RevokeAPIKey(ctx context.Context, id string, at time.Time) (paygate.APIKey, error) {
	k, err := scanAPIKeyUsed(s.pool.QueryRow(ctx, `
		UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2)
		WHERE id = $1
		RETURNING `+apiKeyReadColumns, id, at))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.APIKey{}, notFound("API key")
	}
	return k, translate(err)
}
