package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/paygate"
)

// querier is the pool or a transaction: what a statement needs to run.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

const challengeColumns = `token_hash, payment_id, merchant_id, mode, created_at, expires_at, claimed_until, consumed_at`

func scanChallenge(row pgx.Row) (paygate.ThreeDSChallenge, error) {
	var c paygate.ThreeDSChallenge
	err := row.Scan(&c.TokenHash, &c.PaymentID, &c.MerchantID, &c.Mode, &c.CreatedAt, &c.ExpiresAt, &c.ClaimedUntil, &c.ConsumedAt)
	return c, err
}

// inTx runs fn in a transaction and commits it when fn returns nil. It is
// used where one write depends on the outcome of another (a challenge is
// consumed only together with its payment's transition), which one
// statement cannot express without risking half a change.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return translate(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(tx); err != nil {
		return translate(err)
	}
	return translate(tx.Commit(ctx))
}

// insertChallenge is the statement of a ThreeDSChallenge operation of a unit
// (unit.go), which follows the transition of its payment to pending_3ds.
const insertChallenge = `
	INSERT INTO threeds_challenges (` + challengeColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`

// ThreeDSChallengeByTokenHash returns the challenge of the token hash in any
// state, or NOT_FOUND.
func (s *Store) ThreeDSChallengeByTokenHash(ctx context.Context, tokenHash []byte) (paygate.ThreeDSChallenge, error) {
	c, err := scanChallenge(s.pool.QueryRow(ctx,
		`SELECT `+challengeColumns+` FROM threeds_challenges WHERE token_hash = $1`, tokenHash))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.ThreeDSChallenge{}, notFound("challenge")
	}
	return c, translate(err)
}

// ThreeDSChallengesByPayment lists a payment's challenges, oldest first.
func (s *Store) ThreeDSChallengesByPayment(ctx context.Context, merchantID string, mode paygate.Mode, paymentID string) ([]paygate.ThreeDSChallenge, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+challengeColumns+` FROM threeds_challenges
		WHERE payment_id = $1 AND merchant_id = $2 AND mode = $3 ORDER BY created_at`, paymentID, merchantID, mode)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.ThreeDSChallenge, error) { return scanChallenge(r) })
	return out, translate(err)
}

// claimChallenge claims a usable, unclaimed challenge; the second SELECT
// tells a running claim from an unusable or missing challenge. Under READ
// COMMITTED the UPDATE re-checks its condition on the newest row version, so
// concurrent claims of one challenge succeed once.
const claimChallenge = `
	WITH claimed AS (
		UPDATE threeds_challenges SET claimed_until = @until
		WHERE token_hash = @token_hash AND consumed_at IS NULL AND expires_at > @now
			AND (claimed_until IS NULL OR claimed_until <= @now)
		RETURNING ` + challengeColumns + `
	)
	SELECT ` + challengeColumns + `, true FROM claimed
	UNION ALL
	SELECT ` + challengeColumns + `, false FROM threeds_challenges
	WHERE token_hash = @token_hash AND NOT EXISTS (SELECT 1 FROM claimed)`

// ClaimThreeDSChallenge claims a usable challenge until the given time.
// NOT_FOUND when no usable challenge has the hash; ErrStateConflict when
// another claim is running at now.
func (s *Store) ClaimThreeDSChallenge(ctx context.Context, tokenHash []byte, now, until time.Time) (paygate.ThreeDSChallenge, error) {
	var c paygate.ThreeDSChallenge
	var claimed bool
	err := s.pool.QueryRow(ctx, claimChallenge, namedArgs{"token_hash": tokenHash, "now": now, "until": until}).
		Scan(&c.TokenHash, &c.PaymentID, &c.MerchantID, &c.Mode, &c.CreatedAt, &c.ExpiresAt, &c.ClaimedUntil, &c.ConsumedAt, &claimed)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return paygate.ThreeDSChallenge{}, notFound("challenge")
	case err != nil:
		return paygate.ThreeDSChallenge{}, translate(err)
	case claimed:
		return c, nil
	case !c.Usable(now):
		return paygate.ThreeDSChallenge{}, notFound("challenge")
	default:
		return paygate.ThreeDSChallenge{}, fmt.Errorf("%w: challenge claimed by another request", paygate.ErrStateConflict)
	}
}

// ReleaseThreeDSChallenge drops the claim of an unconsumed challenge.
func (s *Store) ReleaseThreeDSChallenge(ctx context.Context, tokenHash []byte) error {
	_, err := s.pool.Exec(ctx,
		`UPDATE threeds_challenges SET claimed_until = NULL WHERE token_hash = $1 AND consumed_at IS NULL`, tokenHash)
	return translate(err)
}

// FinishThreeDSChallenge consumes the challenge and applies the payment's
// transition with its events, in one transaction. The consuming UPDATE
// locks the challenge row first, so a concurrent finish waits and then finds
// it consumed.
func (s *Store) FinishThreeDSChallenge(ctx context.Context, f paygate.ThreeDSFinish) error {
	t := f.Transition
	return s.wrote(s.inTx(ctx, func(tx pgx.Tx) error {
		var consumed, exists bool
		err := tx.QueryRow(ctx, `
			WITH consumed AS (
				UPDATE threeds_challenges SET consumed_at = @at
				WHERE token_hash = @token_hash AND payment_id = @payment_id
					AND merchant_id = @merchant_id AND mode = @mode AND consumed_at IS NULL
					AND (NOT @only_expired OR (expires_at <= @at AND (claimed_until IS NULL OR claimed_until <= @at)))
				RETURNING 1
			)
			SELECT EXISTS (SELECT 1 FROM consumed),
				EXISTS (SELECT 1 FROM threeds_challenges WHERE token_hash = @token_hash
					AND payment_id = @payment_id AND merchant_id = @merchant_id AND mode = @mode)`,
			namedArgs{
				"at": f.At, "token_hash": f.TokenHash, "payment_id": t.ID, "merchant_id": t.MerchantID,
				"mode": t.Mode, "only_expired": f.OnlyExpired,
			}).Scan(&consumed, &exists)
		switch {
		case err != nil:
			return err
		case !exists:
			return notFound("challenge")
		case !consumed:
			return fmt.Errorf("%w: challenge already used or not finishable", paygate.ErrStateConflict)
		}
		return transitionPaymentOn(ctx, tx, t, f.Events, nil)
	}), f.Events)
}

// ExpiredThreeDSChallenges lists unconsumed challenges expired and
// unclaimed at now, oldest expiry first.
func (s *Store) ExpiredThreeDSChallenges(ctx context.Context, now time.Time, limit int) ([]paygate.ThreeDSChallenge, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+challengeColumns+` FROM threeds_challenges
		WHERE consumed_at IS NULL AND expires_at <= $1 AND (claimed_until IS NULL OR claimed_until <= $1)
		ORDER BY expires_at, token_hash LIMIT $2`, now, nullLimit(limit))
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.ThreeDSChallenge, error) {
		return scanChallenge(r)
	})
	if err != nil {
		return nil, translate(err)
	}
	if out == nil {
		out = []paygate.ThreeDSChallenge{}
	}
	return out, nil
}
