package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

const challengeColumns = codec.ChallengeColumns

func scanChallenge(row scanner) (paygate.ThreeDSChallenge, error) { return codec.ScanChallenge(row) }

// insertChallenge inserts the challenge of a ThreeDSChallenge operation of a
// unit (unit.go), which follows the transition of its payment to
// pending_3ds.
func insertChallenge(ctx context.Context, tx *sql.Tx, c paygate.ThreeDSChallenge) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO threeds_challenges (`+challengeColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		c.TokenHash, c.PaymentID, c.MerchantID, string(c.Mode), micros(c.CreatedAt), micros(c.ExpiresAt),
		nullMicros(c.ClaimedUntil), nullMicros(c.ConsumedAt))
	return err
}

// ThreeDSChallenges lists the challenges of the query, oldest first: the
// one of the token hash (not scoped by merchant: the token is the
// credential), or the payment's within its merchant and mode.
func (s *Store) ThreeDSChallenges(ctx context.Context, q paygate.ThreeDSChallengeQuery) ([]paygate.ThreeDSChallenge, error) {
	var rows *sql.Rows
	var err error
	if q.TokenHash != nil {
		rows, err = s.read.QueryContext(ctx, `SELECT `+challengeColumns+` FROM threeds_challenges WHERE token_hash = ?`, q.TokenHash)
	} else {
		rows, err = s.read.QueryContext(ctx, `SELECT `+challengeColumns+` FROM threeds_challenges
			WHERE payment_id = ? AND merchant_id = ? AND mode = ? ORDER BY created_at, rowid`, q.PaymentID, q.MerchantID, string(q.Mode))
	}
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []paygate.ThreeDSChallenge{}
	for rows.Next() {
		c, err := scanChallenge(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, c)
	}
	return out, translate(rows.Err())
}

// ClaimThreeDSChallenge claims a usable challenge until the given time. The
// claim is one conditional UPDATE under the single write lock, so
// concurrent callers claim it once. NOT_FOUND when no usable challenge has
// the hash; ErrStateConflict when another claim is running at now.
func (s *Store) ClaimThreeDSChallenge(ctx context.Context, tokenHash []byte, now, until time.Time) (paygate.ThreeDSChallenge, error) {
	var c paygate.ThreeDSChallenge
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		c, err = scanChallenge(tx.QueryRowContext(ctx, `
			UPDATE threeds_challenges SET claimed_until = ?1
			WHERE token_hash = ?2 AND consumed_at IS NULL AND expires_at > ?3
				AND (claimed_until IS NULL OR claimed_until <= ?3)
			RETURNING `+challengeColumns,
			micros(until), tokenHash, micros(now)))
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		cur, err := scanChallenge(tx.QueryRowContext(ctx,
			`SELECT `+challengeColumns+` FROM threeds_challenges WHERE token_hash = ?`, tokenHash))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("challenge")
		}
		if err != nil {
			return err
		}
		if !cur.Usable(now) {
			return notFound("challenge")
		}
		return fmt.Errorf("%w: challenge claimed by another request", paygate.ErrStateConflict)
	})
	if err != nil {
		return paygate.ThreeDSChallenge{}, err
	}
	return c, nil
}

// releaseChallenge drops the claim of an unconsumed challenge
// (ThreeDSRelease).
func releaseChallenge(ctx context.Context, tx *sql.Tx, r paygate.ThreeDSRelease) error {
	_, err := tx.ExecContext(ctx,
		`UPDATE threeds_challenges SET claimed_until = NULL WHERE token_hash = ? AND consumed_at IS NULL`, r.TokenHash)
	return err
}

// consumeChallenge consumes the challenge of a ThreeDSConsumption:
// ErrStateConflict when the payment's challenge is consumed or not
// finishable at c.At, NOT_FOUND when the payment has no challenge with the
// hash.
func consumeChallenge(ctx context.Context, tx *sql.Tx, c paygate.ThreeDSConsumption) error {
	res, err := tx.ExecContext(ctx, `
		UPDATE threeds_challenges SET consumed_at = ?1
		WHERE token_hash = ?2 AND payment_id = ?3 AND merchant_id = ?4 AND mode = ?5
			AND consumed_at IS NULL
			AND (NOT ?6 OR (expires_at <= ?1 AND (claimed_until IS NULL OR claimed_until <= ?1)))`,
		micros(c.At), c.TokenHash, c.PaymentID, c.MerchantID, string(c.Mode), c.OnlyExpired)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	var one int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM threeds_challenges WHERE token_hash = ? AND payment_id = ? AND merchant_id = ? AND mode = ?`,
		c.TokenHash, c.PaymentID, c.MerchantID, string(c.Mode)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("challenge")
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: challenge already used or not finishable", paygate.ErrStateConflict)
}

// ExpiredThreeDSChallenges lists unconsumed challenges expired and
// unclaimed at now, oldest expiry first.
func (s *Store) ExpiredThreeDSChallenges(ctx context.Context, now time.Time, limit int) ([]paygate.ThreeDSChallenge, error) {
	rows, err := s.read.QueryContext(ctx, `
		SELECT `+challengeColumns+` FROM threeds_challenges
		WHERE consumed_at IS NULL AND expires_at <= ?1 AND (claimed_until IS NULL OR claimed_until <= ?1)
		ORDER BY expires_at, token_hash LIMIT ?2`,
		micros(now), sqlLimit(limit))
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []paygate.ThreeDSChallenge{}
	for rows.Next() {
		c, err := scanChallenge(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, c)
	}
	return out, translate(rows.Err())
}
