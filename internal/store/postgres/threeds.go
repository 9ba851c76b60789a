package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

const challengeColumns = codec.ChallengeColumns

func scanChallenge(row pgx.Row) (paygate.ThreeDSChallenge, error) { return codec.ScanChallenge(row) }

// insertChallenge is the statement of a ThreeDSChallenge operation of a unit
// (unit.go), which follows the transition of its payment to pending_3ds.
const insertChallenge = `
	INSERT INTO threeds_challenges (` + challengeColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`

// ThreeDSChallenges lists the challenges of the query, oldest first: the
// one of the token hash (not scoped by merchant: the token is the
// credential), or the payment's within its merchant and mode.
func (s *Store) ThreeDSChallenges(ctx context.Context, q paygate.ThreeDSChallengeQuery) ([]paygate.ThreeDSChallenge, error) {
	var rows pgx.Rows
	var err error
	if q.TokenHash != nil {
		rows, err = s.pool.Query(ctx, `SELECT `+challengeColumns+` FROM threeds_challenges WHERE token_hash = $1`, q.TokenHash)
	} else {
		rows, err = s.pool.Query(ctx, `SELECT `+challengeColumns+` FROM threeds_challenges
			WHERE payment_id = $1 AND merchant_id = $2 AND mode = $3 ORDER BY created_at`, q.PaymentID, q.MerchantID, q.Mode)
	}
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.ThreeDSChallenge, error) { return scanChallenge(r) })
	if err != nil {
		return nil, translate(err)
	}
	if out == nil {
		out = []paygate.ThreeDSChallenge{}
	}
	return out, nil
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
	var claimed bool
	c, err := codec.ScanChallenge(s.pool.QueryRow(ctx, claimChallenge,
		namedArgs{"token_hash": tokenHash, "now": now, "until": until}), &claimed)
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

// releaseChallenge drops the claim of an unconsumed challenge
// (ThreeDSRelease).
const releaseChallenge = `UPDATE threeds_challenges SET claimed_until = NULL WHERE token_hash = $1 AND consumed_at IS NULL`

// consumeChallengeInUnit consumes the challenge of a ThreeDSConsumption, or
// fails the unit through unit_refused: PG409 when the payment's challenge
// is consumed or not finishable at @at, PG404 when the payment has no
// challenge with the hash. The UPDATE locks the challenge row, so a
// concurrent consumption waits and then, under READ COMMITTED, re-checks
// its condition on the row the winner wrote and is refused.
const consumeChallengeInUnit = `
	WITH consumed AS (
		UPDATE threeds_challenges SET consumed_at = @at
		WHERE token_hash = @token_hash AND payment_id = @payment_id
			AND merchant_id = @merchant_id AND mode = @mode AND consumed_at IS NULL
			AND (NOT @only_expired OR (expires_at <= @at AND (claimed_until IS NULL OR claimed_until <= @at)))
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM consumed) THEN true ELSE unit_refused(EXISTS (
		SELECT 1 FROM threeds_challenges WHERE token_hash = @token_hash
			AND payment_id = @payment_id AND merchant_id = @merchant_id AND mode = @mode)) END`

// consumeChallengeArgs returns the arguments of consumeChallengeInUnit.
func consumeChallengeArgs(c paygate.ThreeDSConsumption) namedArgs {
	return namedArgs{
		"at": c.At, "token_hash": c.TokenHash, "payment_id": c.PaymentID, "merchant_id": c.MerchantID,
		"mode": c.Mode, "only_expired": c.OnlyExpired,
	}
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
