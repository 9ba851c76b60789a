package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

const challengeColumns = `token_hash, payment_id, merchant_id, mode, created_at, expires_at, claimed_until, consumed_at`

func scanChallenge(row scanner) (paygate.ThreeDSChallenge, error) {
	var (
		c                 paygate.ThreeDSChallenge
		mode              string
		created, expires  int64
		claimed, consumed sql.NullInt64
	)
	if err := row.Scan(&c.TokenHash, &c.PaymentID, &c.MerchantID, &mode, &created, &expires, &claimed, &consumed); err != nil {
		return paygate.ThreeDSChallenge{}, err
	}
	c.Mode = paygate.Mode(mode)
	c.CreatedAt, c.ExpiresAt = fromMicros(created), fromMicros(expires)
	c.ClaimedUntil, c.ConsumedAt = fromNullMicros(claimed), fromNullMicros(consumed)
	return c, nil
}

// insertChallenge inserts the challenge of a ThreeDSChallenge operation of a
// unit (unit.go), which follows the transition of its payment to
// pending_3ds.
func insertChallenge(ctx context.Context, tx *sql.Tx, c paygate.ThreeDSChallenge) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO threeds_challenges (`+challengeColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		c.TokenHash, c.PaymentID, c.MerchantID, string(c.Mode), micros(c.CreatedAt), micros(c.ExpiresAt),
		nullMicros(c.ClaimedUntil), nullMicros(c.ConsumedAt))
	return err
}

// ThreeDSChallengeByTokenHash returns the challenge of the token hash in any
// state, or NOT_FOUND.
func (s *Store) ThreeDSChallengeByTokenHash(ctx context.Context, tokenHash []byte) (paygate.ThreeDSChallenge, error) {
	c, err := scanChallenge(s.read.QueryRowContext(ctx,
		`SELECT `+challengeColumns+` FROM threeds_challenges WHERE token_hash = ?`, tokenHash))
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.ThreeDSChallenge{}, notFound("challenge")
	}
	return c, translate(err)
}

// ThreeDSChallengesByPayment lists a payment's challenges, oldest first.
func (s *Store) ThreeDSChallengesByPayment(ctx context.Context, merchantID string, mode paygate.Mode, paymentID string) ([]paygate.ThreeDSChallenge, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+challengeColumns+` FROM threeds_challenges
		WHERE payment_id = ? AND merchant_id = ? AND mode = ? ORDER BY created_at, rowid`, paymentID, merchantID, mode)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []paygate.ThreeDSChallenge
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

// ReleaseThreeDSChallenge drops the claim of an unconsumed challenge.
func (s *Store) ReleaseThreeDSChallenge(ctx context.Context, tokenHash []byte) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx,
			`UPDATE threeds_challenges SET claimed_until = NULL WHERE token_hash = ? AND consumed_at IS NULL`, tokenHash)
		return err
	})
}

// FinishThreeDSChallenge consumes the challenge and applies the payment's
// transition with its events, in one transaction.
func (s *Store) FinishThreeDSChallenge(ctx context.Context, f paygate.ThreeDSFinish) error {
	t := f.Transition
	return s.wrote(s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `
			UPDATE threeds_challenges SET consumed_at = ?1
			WHERE token_hash = ?2 AND payment_id = ?3 AND merchant_id = ?4 AND mode = ?5
				AND consumed_at IS NULL
				AND (NOT ?6 OR (expires_at <= ?1 AND (claimed_until IS NULL OR claimed_until <= ?1)))`,
			micros(f.At), f.TokenHash, t.ID, t.MerchantID, string(t.Mode), f.OnlyExpired)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM threeds_challenges WHERE token_hash = ? AND payment_id = ? AND merchant_id = ? AND mode = ?`,
				f.TokenHash, t.ID, t.MerchantID, string(t.Mode)).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return notFound("challenge")
			}
			if err != nil {
				return err
			}
			return fmt.Errorf("%w: challenge already used or not finishable", paygate.ErrStateConflict)
		}
		return transitionPayment(ctx, tx, t, f.Events, nil)
	}), f.Events)
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
