package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// ProviderStates returns every provider state an operator ever set, sorted
// by provider id.
func (s *Store) ProviderStates(ctx context.Context) ([]paygate.ProviderState, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+codec.ProviderStateColumns+` FROM provider_states ORDER BY provider_id`)
	if err != nil {
		return nil, translate(err)
	}
	states, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (paygate.ProviderState, error) {
		return codec.ScanProviderState(row)
	})
	if states == nil {
		states = []paygate.ProviderState{}
	}
	return states, translate(err)
}

// drainProvider sets the provider's state (ProviderDrain); setting the
// state it already has keeps its updated_at.
const drainProvider = `
	INSERT INTO provider_states AS p (provider_id, drained, updated_at) VALUES ($1, $2, $3)
	ON CONFLICT (provider_id) DO UPDATE SET
		drained = EXCLUDED.drained,
		updated_at = CASE WHEN p.drained = EXCLUDED.drained THEN p.updated_at ELSE EXCLUDED.updated_at END`

// setApproval sets or clears a sandbox provider's approval rate override
// (SandboxApproval); a provider without a state gets one, not drained,
// its drain never changed (updated_at the epoch, see
// paygate.ProviderState.DrainChangedAt).
const setApproval = `
	INSERT INTO provider_states AS p (provider_id, drained, updated_at, approval_rate, approval_at)
	VALUES ($1, false, 'epoch'::timestamptz, $2, CASE WHEN $2::double precision IS NULL THEN NULL ELSE $3::timestamptz END)
	ON CONFLICT (provider_id) DO UPDATE SET
		approval_rate = EXCLUDED.approval_rate,
		approval_at = EXCLUDED.approval_at`

// queueBreakerReplacement queues the replacement of the node's reports
// (BreakerReplacement): a delete and an insert of the new ones, in the
// unit's transaction.
func queueBreakerReplacement(b *pgx.Batch, r paygate.BreakerReplacement) {
	b.Queue(`DELETE FROM provider_breakers WHERE node = $1`, r.Node)
	if len(r.Reports) == 0 {
		return
	}
	modes := make([]string, len(r.Reports))
	providers := make([]string, len(r.Reports))
	states := make([]string, len(r.Reports))
	since := make([]time.Time, len(r.Reports))
	for i, rep := range r.Reports {
		modes[i], providers[i], states[i], since[i] = string(rep.Mode), rep.ProviderID, string(rep.State), rep.Since
	}
	b.Queue(`
		INSERT INTO provider_breakers (node, mode, provider_id, state, since, reported_at)
		SELECT $1, r.mode, r.provider_id, r.state, r.since, $6
		FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[]) AS r (mode, provider_id, state, since)`,
		r.Node, modes, providers, states, since, r.At)
}

// BreakerReports returns the reports made at or after since.
func (s *Store) BreakerReports(ctx context.Context, since time.Time) ([]paygate.BreakerReport, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+codec.BreakerReportColumns+` FROM provider_breakers
		WHERE reported_at >= $1 ORDER BY provider_id, mode, node`, since)
	if err != nil {
		return nil, translate(err)
	}
	reports, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (paygate.BreakerReport, error) {
		return codec.ScanBreakerReport(row)
	})
	if reports == nil {
		reports = []paygate.BreakerReport{}
	}
	return reports, translate(err)
}

const sandboxChargeColumns = codec.SandboxChargeColumns

func scanSandboxCharge(row pgx.Row) (paygate.SandboxCharge, error) {
	return codec.ScanSandboxCharge(row)
}

// insertSandboxCharge inserts the entry unless the provider has one for the
// payment, which is then kept.
const insertSandboxCharge = `
		INSERT INTO sandbox_ledger (` + sandboxChargeColumns + `)
		VALUES (@provider_id, @payment_id, @mode, @amount, @currency, @outcome,
			@provider_ref, @decline_code, @message, @ready_at, @created_at)
		ON CONFLICT (provider_id, payment_id) DO NOTHING`

// sandboxChargeArgs returns the arguments of insertSandboxCharge.
func sandboxChargeArgs(c paygate.SandboxCharge) namedArgs {
	return namedArgs{
		"provider_id": c.ProviderID, "payment_id": c.PaymentID, "mode": c.Mode,
		"amount": c.Amount.Amount, "currency": c.Amount.Currency, "outcome": c.Outcome,
		"provider_ref": c.ProviderRef, "decline_code": c.DeclineCode, "message": c.Message,
		"ready_at": c.ReadyAt, "created_at": c.CreatedAt,
	}
}

// SandboxChargeByPayment returns the provider's entry for the payment, or
// NOT_FOUND.
func (s *Store) SandboxChargeByPayment(ctx context.Context, providerID, paymentID string) (paygate.SandboxCharge, error) {
	c, err := scanSandboxCharge(s.pool.QueryRow(ctx, `
		SELECT `+sandboxChargeColumns+` FROM sandbox_ledger WHERE provider_id = $1 AND payment_id = $2`,
		providerID, paymentID))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.SandboxCharge{}, notFound("sandbox charge")
	}
	return c, translate(err)
}

// recoverable is the condition, on a payments row, of a payment the
// recovery job may take over at @now: created, past its lease or naming its
// provider (its request answered 202), and not claimed at now. The first
// condition lets the partial index payments_created_idx serve the scan.
const recoverable = `status = 'created'
	AND (lease_until <= @now OR provider_id <> '')
	AND (recovery_until IS NULL OR recovery_until <= @now)`

// PaymentsToRecover returns up to limit payments the recovery job may take
// over at now, oldest first.
func (s *Store) PaymentsToRecover(ctx context.Context, now time.Time, limit int) ([]paygate.Payment, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+paymentColumns+` FROM payments
		WHERE `+recoverable+`
		ORDER BY created_at, seq LIMIT @limit`, namedArgs{"now": now, "limit": nullLimit(limit)})
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	payments := []paygate.Payment{}
	for rows.Next() {
		p, err := scanPayment(rows)
		if err != nil {
			return nil, translate(err)
		}
		payments = append(payments, p)
	}
	return payments, translate(rows.Err())
}

// claimRecoveryInUnit claims a recoverable payment until @until
// (RecoveryClaim), and fails the unit through unit_refused otherwise: PG409
// when the payment is not recoverable at @now, PG404 when it does not exist
// for the merchant and mode. Under READ COMMITTED a concurrent claim
// re-checks the condition on the row version the winner wrote, so one claim
// succeeds.
const claimRecoveryInUnit = `
	WITH claimed AS (
		UPDATE payments SET recovery_until = @until
		WHERE id = @id AND merchant_id = @merchant_id COLLATE "C" AND mode = @mode COLLATE "C" AND ` + recoverable + `
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM claimed) THEN true ELSE unit_refused(` + paymentExists + `) END`

// recoveryClaimArgs returns the arguments of claimRecoveryInUnit.
func recoveryClaimArgs(c paygate.RecoveryClaim) namedArgs {
	return namedArgs{"now": c.Now, "until": c.Until, "id": c.PaymentID, "merchant_id": c.MerchantID, "mode": c.Mode}
}

// queueRoutingScoreReplacement queues the replacement of the node's scores
// (RoutingScoreReplacement): a delete and an insert of the new ones, in
// the unit's transaction.
func queueRoutingScoreReplacement(b *pgx.Batch, r paygate.RoutingScoreReplacement) {
	if !r.ForgetBefore.IsZero() {
		b.Queue(`DELETE FROM routing_scores WHERE updated_at < $1 AND node <> $2`, r.ForgetBefore, r.Node)
	}
	if r.Heartbeat {
		b.Queue(`UPDATE routing_scores SET updated_at = $2 WHERE node = $1`, r.Node, r.At)
		return
	}
	b.Queue(`DELETE FROM routing_scores WHERE node = $1`, r.Node)
	if len(r.Scores) == 0 {
		return
	}
	n := len(r.Scores)
	modes, providers, currencies, brands := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	attempts, approved := make([]int64, n), make([]int64, n)
	scores, shares := make([]float64, n), make([]float64, n)
	for i, s := range r.Scores {
		modes[i], providers[i], currencies[i], brands[i] = string(s.Mode), s.ProviderID, s.Currency, s.Brand
		attempts[i], approved[i], scores[i], shares[i] = s.Attempts, s.Approved, s.Score, s.Share
	}
	b.Queue(`
		INSERT INTO routing_scores (`+codec.RoutingScoreColumns+`)
		SELECT $1, r.mode, r.provider_id, r.currency, r.brand, r.attempts, r.approved, r.score, r.share, $10
		FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[],
			$8::float8[], $9::float8[]) AS r (mode, provider_id, currency, brand, attempts, approved, score, share)
		ON CONFLICT (node, mode, provider_id, currency, brand) DO NOTHING`,
		r.Node, modes, providers, currencies, brands, attempts, approved, scores, shares, r.At)
}

// RoutingScores returns the mode's scores reported at or after since: per
// (currency, brand), the snapshot of the node that reported it last.
func (s *Store) RoutingScores(ctx context.Context, mode paygate.Mode, since time.Time) ([]paygate.RoutingScore, error) {
	rows, err := s.pool.Query(ctx, `
		WITH latest AS (
			SELECT DISTINCT ON (currency, brand) currency, brand, node
			FROM routing_scores WHERE mode = $1 AND updated_at >= $2
			ORDER BY currency, brand, updated_at DESC, node
		)
		SELECT `+codec.RoutingScoreColumns+`
		FROM routing_scores JOIN latest USING (currency, brand, node)
		WHERE mode = $1 AND updated_at >= $2
		ORDER BY currency, brand, provider_id`, string(mode), since)
	if err != nil {
		return nil, translate(err)
	}
	scores, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (paygate.RoutingScore, error) {
		return codec.ScanRoutingScore(row)
	})
	if scores == nil {
		scores = []paygate.RoutingScore{}
	}
	return scores, translate(err)
}
