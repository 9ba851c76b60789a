package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/paygate"
)

// ProviderStates returns every provider state an operator ever set, sorted
// by provider id.
func (s *Store) ProviderStates(ctx context.Context) ([]paygate.ProviderState, error) {
	rows, err := s.pool.Query(ctx, `SELECT provider_id, drained, updated_at FROM provider_states ORDER BY provider_id`)
	if err != nil {
		return nil, translate(err)
	}
	states, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (paygate.ProviderState, error) {
		var st paygate.ProviderState
		err := row.Scan(&st.ProviderID, &st.Drained, &st.UpdatedAt)
		return st, err
	})
	if states == nil {
		states = []paygate.ProviderState{}
	}
	return states, translate(err)
}

// SetProviderDrained drains or restores the provider and returns the stored
// state; setting the state it already has keeps its UpdatedAt.
func (s *Store) SetProviderDrained(ctx context.Context, providerID string, drained bool, at time.Time) (paygate.ProviderState, error) {
	st := paygate.ProviderState{ProviderID: providerID}
	err := s.pool.QueryRow(ctx, `
		INSERT INTO provider_states AS p (provider_id, drained, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (provider_id) DO UPDATE SET
			drained = EXCLUDED.drained,
			updated_at = CASE WHEN p.drained = EXCLUDED.drained THEN p.updated_at ELSE EXCLUDED.updated_at END
		RETURNING drained, updated_at`, providerID, drained, at).Scan(&st.Drained, &st.UpdatedAt)
	return st, translate(err)
}

// ReportBreakers replaces the node's reports with the given ones, in one
// transaction.
func (s *Store) ReportBreakers(ctx context.Context, node string, reports []paygate.BreakerReport, at time.Time) error {
	modes := make([]string, len(reports))
	providers := make([]string, len(reports))
	states := make([]string, len(reports))
	since := make([]time.Time, len(reports))
	for i, r := range reports {
		modes[i], providers[i], states[i], since[i] = string(r.Mode), r.ProviderID, string(r.State), r.Since
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM provider_breakers WHERE node = $1`, node); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO provider_breakers (node, mode, provider_id, state, since, reported_at)
			SELECT $1, r.mode, r.provider_id, r.state, r.since, $6
			FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[]) AS r (mode, provider_id, state, since)`,
			node, modes, providers, states, since, at)
		return err
	})
	return translate(err)
}

// BreakerReports returns the reports made at or after since.
func (s *Store) BreakerReports(ctx context.Context, since time.Time) ([]paygate.BreakerReport, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT node, mode, provider_id, state, since, reported_at FROM provider_breakers
		WHERE reported_at >= $1 ORDER BY provider_id, mode, node`, since)
	if err != nil {
		return nil, translate(err)
	}
	reports, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (paygate.BreakerReport, error) {
		var r paygate.BreakerReport
		err := row.Scan(&r.Node, &r.Mode, &r.ProviderID, &r.State, &r.Since, &r.ReportedAt)
		return r, err
	})
	if reports == nil {
		reports = []paygate.BreakerReport{}
	}
	return reports, translate(err)
}

// ForgetBreakers deletes the node's reports.
func (s *Store) ForgetBreakers(ctx context.Context, node string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM provider_breakers WHERE node = $1`, node)
	return translate(err)
}

const sandboxChargeColumns = `provider_id, payment_id, mode, amount, currency, outcome,
	provider_ref, decline_code, message, ready_at, created_at`

func scanSandboxCharge(row pgx.Row) (paygate.SandboxCharge, error) {
	var c paygate.SandboxCharge
	err := row.Scan(&c.ProviderID, &c.PaymentID, &c.Mode, &c.Amount.Amount, &c.Amount.Currency, &c.Outcome,
		&c.ProviderRef, &c.DeclineCode, &c.Message, &c.ReadyAt, &c.CreatedAt)
	return c, err
}

// insertSandboxCharge inserts the entry unless the provider has one for the
// payment, which is then kept.
const insertSandboxCharge = `
		INSERT INTO sandbox_ledger (` + sandboxChargeColumns + `)
		VALUES (@provider_id, @payment_id, @mode, @amount, @currency, @outcome,
			@provider_ref, @decline_code, @message, @ready_at, @created_at)
		ON CONFLICT (provider_id, payment_id) DO NOTHING`

// sandboxChargeArgs returns the arguments of insertSandboxCharge and
// recordSandboxCharge.
func sandboxChargeArgs(c paygate.SandboxCharge) namedArgs {
	return namedArgs{
		"provider_id": c.ProviderID, "payment_id": c.PaymentID, "mode": c.Mode,
		"amount": c.Amount.Amount, "currency": c.Amount.Currency, "outcome": c.Outcome,
		"provider_ref": c.ProviderRef, "decline_code": c.DeclineCode, "message": c.Message,
		"ready_at": c.ReadyAt, "created_at": c.CreatedAt,
	}
}

// recordSandboxCharge inserts the entry or, when the provider has one for
// the payment, returns that one. When a concurrent insert of the same entry
// commits after this statement's snapshot, the statement returns no row
// and RecordSandboxCharge runs it again (a new snapshot sees that entry).
const recordSandboxCharge = `
	WITH inserted AS (` + insertSandboxCharge + `
		RETURNING ` + sandboxChargeColumns + `
	)
	SELECT ` + sandboxChargeColumns + ` FROM inserted
	UNION ALL
	SELECT ` + sandboxChargeColumns + ` FROM sandbox_ledger
	WHERE provider_id = @provider_id AND payment_id = @payment_id AND NOT EXISTS (SELECT 1 FROM inserted)`

// RecordSandboxCharge stores the entry unless the provider has one for the
// payment already, and returns the stored entry.
func (s *Store) RecordSandboxCharge(ctx context.Context, c paygate.SandboxCharge) (paygate.SandboxCharge, error) {
	args := sandboxChargeArgs(c)
	for range 3 {
		// The entry commits without waiting for its WAL flush, as the
		// idempotency reservation does (see ReserveIdempotency): the
		// payment's outcome, the only thing a client is told, commits
		// synchronously after it and its flush covers this entry; the
		// payment row it belongs to was committed before the charge, in
		// the same log (plan.LazyCreate). Only the entries of charges not
		// answered at once come here (card 4000000000000705, a sandbox
		// with a latency): the others are SandboxCharge operations of the
		// outcome's unit.
		var stored paygate.SandboxCharge
		var found bool
		b := &pgx.Batch{}
		b.Queue(skipFlushWait)
		queueOptionalRow(b, recordSandboxCharge, []any{args}, scanSandboxCharge, &stored, &found)
		if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
			return paygate.SandboxCharge{}, translate(err)
		}
		if !found {
			continue
		}
		return stored, nil
	}
	return paygate.SandboxCharge{}, fmt.Errorf("postgres: record sandbox charge of %s: the entry could not be read back", c.PaymentID)
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

// ClaimPaymentRecovery claims a recoverable payment until the given time.
// Under READ COMMITTED a concurrent claim re-checks the condition on the
// row version the winner wrote, so one claim succeeds.
func (s *Store) ClaimPaymentRecovery(ctx context.Context, merchantID string, mode paygate.Mode, paymentID string, now, until time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE payments SET recovery_until = @until
		WHERE id = @id AND merchant_id = @merchant_id COLLATE "C" AND mode = @mode COLLATE "C" AND `+recoverable,
		namedArgs{"now": now, "until": until, "id": paymentID, "merchant_id": merchantID, "mode": mode})
	if err != nil {
		return false, translate(err)
	}
	return tag.RowsAffected() == 1, nil
}
