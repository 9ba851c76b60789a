package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// CreateMerchant inserts a merchant and its first keys in one transaction.
// A duplicate merchant or key id (or key hash) is paygate.ErrConflict, and
// then nothing is inserted.
func (s *Store) CreateMerchant(ctx context.Context, m paygate.Merchant, keys []paygate.APIKey) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO merchants (id, name, created_at) VALUES (?, ?, ?)`,
			m.ID, m.Name, micros(m.CreatedAt)); err != nil {
			return err
		}
		for _, k := range keys {
			if err := insertAPIKey(ctx, tx, k); err != nil {
				return err
			}
		}
		return nil
	})
}

// MerchantByID returns a merchant, or NOT_FOUND.
func (s *Store) MerchantByID(ctx context.Context, id string) (paygate.Merchant, error) {
	m, err := scanMerchant(s.read.QueryRowContext(ctx,
		`SELECT id, name, created_at FROM merchants WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.Merchant{}, notFound("merchant")
	}
	return m, translate(err)
}

// FirstMerchant returns the oldest merchant; ok is false when there is none.
func (s *Store) FirstMerchant(ctx context.Context) (paygate.Merchant, bool, error) {
	m, err := scanMerchant(s.read.QueryRowContext(ctx,
		`SELECT id, name, created_at FROM merchants ORDER BY created_at, rowid LIMIT 1`))
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.Merchant{}, false, nil
	}
	if err != nil {
		return paygate.Merchant{}, false, translate(err)
	}
	return m, true, nil
}

func scanMerchant(row scanner) (paygate.Merchant, error) {
	var (
		m       paygate.Merchant
		created int64
	)
	if err := row.Scan(&m.ID, &m.Name, &created); err != nil {
		return paygate.Merchant{}, err
	}
	m.CreatedAt = fromMicros(created)
	return m, nil
}

const apiKeyColumns = `id, merchant_id, mode, type, hash, hint, created_at, expires_at, revoked_at`

// apiKeyReadColumns are the columns scanAPIKeyUsed reads: apiKeyColumns and
// when the key was last used (written by TouchAPIKeys only).
const apiKeyReadColumns = apiKeyColumns + `, last_used_at`

func insertAPIKey(ctx context.Context, tx *sql.Tx, k paygate.APIKey) error {
	_, err := tx.ExecContext(ctx,
		`INSERT INTO api_keys (`+apiKeyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.MerchantID, string(k.Mode), string(k.Type), k.Hash, k.Hint,
		micros(k.CreatedAt), nullMicros(k.ExpiresAt), nullMicros(k.RevokedAt))
	return err
}

func scanAPIKey(row scanner) (paygate.APIKey, error) {
	var (
		k                paygate.APIKey
		mode, typ        string
		created          int64
		expires, revoked sql.NullInt64
	)
	if err := row.Scan(&k.ID, &k.MerchantID, &mode, &typ, &k.Hash, &k.Hint, &created, &expires, &revoked); err != nil {
		return paygate.APIKey{}, err
	}
	k.Mode, k.Type = paygate.Mode(mode), paygate.KeyType(typ)
	k.CreatedAt = fromMicros(created)
	k.ExpiresAt, k.RevokedAt = fromNullMicros(expires), fromNullMicros(revoked)
	return k, nil
}

// scanAPIKeyUsed scans apiKeyReadColumns.
func scanAPIKeyUsed(row scanner) (paygate.APIKey, error) {
	var (
		k                      paygate.APIKey
		mode, typ              string
		created                int64
		expires, revoked, used sql.NullInt64
	)
	if err := row.Scan(&k.ID, &k.MerchantID, &mode, &typ, &k.Hash, &k.Hint, &created, &expires, &revoked, &used); err != nil {
		return paygate.APIKey{}, err
	}
	k.Mode, k.Type = paygate.Mode(mode), paygate.KeyType(typ)
	k.CreatedAt = fromMicros(created)
	k.ExpiresAt, k.RevokedAt, k.LastUsedAt = fromNullMicros(expires), fromNullMicros(revoked), fromNullMicros(used)
	return k, nil
}

// CreateAPIKey inserts a key. A duplicate id or hash is paygate.ErrConflict;
// an unknown merchant is NOT_FOUND.
func (s *Store) CreateAPIKey(ctx context.Context, k paygate.APIKey) error {
	return s.inTx(ctx, func(tx *sql.Tx) error { return insertAPIKey(ctx, tx, k) })
}

// APIKeyByID returns a key by its id, or NOT_FOUND.
func (s *Store) APIKeyByID(ctx context.Context, id string) (paygate.APIKey, error) {
	k, err := scanAPIKeyUsed(s.read.QueryRowContext(ctx, `SELECT `+apiKeyReadColumns+` FROM api_keys WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.APIKey{}, notFound("API key")
	}
	return k, translate(err)
}

// APIKeyByHash returns the key whose hash matches, or NOT_FOUND, whether or
// not it is active.
func (s *Store) APIKeyByHash(ctx context.Context, hash []byte) (paygate.APIKey, error) {
	k, err := scanAPIKeyUsed(s.read.QueryRowContext(ctx, `SELECT `+apiKeyReadColumns+` FROM api_keys WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.APIKey{}, notFound("API key")
	}
	return k, translate(err)
}

// APIKeysByMerchant lists a merchant's keys of both modes, oldest first.
func (s *Store) APIKeysByMerchant(ctx context.Context, merchantID string) ([]paygate.APIKey, error) {
	rows, err := s.read.QueryContext(ctx,
		`SELECT `+apiKeyReadColumns+` FROM api_keys WHERE merchant_id = ? ORDER BY created_at, rowid`, merchantID)
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

// APIKeysByMerchantMode lists a merchant's keys of one mode, oldest first.
func (s *Store) APIKeysByMerchantMode(ctx context.Context, merchantID string, mode paygate.Mode) ([]paygate.APIKey, error) {
	rows, err := s.read.QueryContext(ctx,
		`SELECT `+apiKeyReadColumns+` FROM api_keys WHERE merchant_id = ? AND mode = ? ORDER BY created_at, rowid`, merchantID, mode)
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

// RotateAPIKey inserts next, makes the key oldID expire at oldExpiresAt
// (or earlier if it already expires earlier) and records next as its
// successor. NOT_FOUND if oldID does not exist; a
// *paygate.KeyReplacedError if it already has a successor;
// paygate.ErrStateConflict if it is revoked or expired at the rotation
// time, next.CreatedAt. Nothing is written on error. The transaction holds
// SQLite's one write lock from its start, and the update is conditional on
// successor_id IS NULL as well: two rotations of one key cannot both win.
func (s *Store) RotateAPIKey(ctx context.Context, oldID string, next paygate.APIKey, oldExpiresAt time.Time) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		old, err := scanAPIKey(tx.QueryRowContext(ctx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE id = ?`, oldID))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("API key")
		}
		if err != nil {
			return err
		}
		var successor sql.NullString
		if err := tx.QueryRowContext(ctx, `SELECT successor_id FROM api_keys WHERE id = ?`, oldID).Scan(&successor); err != nil {
			return err
		}
		if successor.Valid {
			return &paygate.KeyReplacedError{KeyID: oldID, SuccessorID: successor.String}
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
			micros(oldExpiresAt), oldID, next.ID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("%w: API key %s was rotated concurrently", paygate.ErrStateConflict, oldID)
		}
		return nil
	})
}

// RevokeAPIKey revokes a key at the time; a revoked key keeps its first
// revocation time. NOT_FOUND if it does not exist.
func (s *Store) RevokeAPIKey(ctx context.Context, id string, at time.Time) (paygate.APIKey, error) {
	var k paygate.APIKey
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		k, err = scanAPIKeyUsed(tx.QueryRowContext(ctx,
			`UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ? RETURNING `+apiKeyReadColumns,
			micros(at), id))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("API key")
		}
		return err
	})
	return k, err
}
