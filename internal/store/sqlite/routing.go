package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// ProviderStates returns every provider state an operator ever set, sorted
// by provider id.
func (s *Store) ProviderStates(ctx context.Context) ([]paygate.ProviderState, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+codec.ProviderStateColumns+` FROM provider_states ORDER BY provider_id`)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	states := []paygate.ProviderState{}
	for rows.Next() {
		st, err := codec.ScanProviderState(rows)
		if err != nil {
			return nil, translate(err)
		}
		states = append(states, st)
	}
	return states, translate(rows.Err())
}

// drainProvider sets the provider's state (ProviderDrain); setting the
// state it already has keeps its updated_at.
func drainProvider(ctx context.Context, tx *sql.Tx, d paygate.ProviderDrain) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO provider_states (provider_id, drained, updated_at) VALUES (?1, ?2, ?3)
		ON CONFLICT (provider_id) DO UPDATE SET
			drained = excluded.drained,
			updated_at = CASE WHEN provider_states.drained = excluded.drained
				THEN provider_states.updated_at ELSE excluded.updated_at END`,
		d.ProviderID, d.Drained, micros(d.At))
	return err
}

// setApproval sets or clears a sandbox provider's approval rate override
// (SandboxApproval); a provider without a state gets one, not drained,
// its drain never changed (updated_at the epoch, see
// paygate.ProviderState.DrainChangedAt).
func setApproval(ctx context.Context, tx *sql.Tx, a paygate.SandboxApproval) error {
	var at any
	if a.Rate != nil {
		at = micros(a.At)
	}
	_, err := tx.ExecContext(ctx, `
		INSERT INTO provider_states (provider_id, drained, updated_at, approval_rate, approval_at)
		VALUES (?1, 0, 0, ?2, ?3)
		ON CONFLICT (provider_id) DO UPDATE SET
			approval_rate = excluded.approval_rate,
			approval_at = excluded.approval_at`,
		a.ProviderID, a.Rate, at)
	return err
}

// replaceBreakers replaces the node's reports with the given ones
// (BreakerReplacement).
func replaceBreakers(ctx context.Context, tx *sql.Tx, r paygate.BreakerReplacement) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM provider_breakers WHERE node = ?`, r.Node); err != nil {
		return err
	}
	for _, rep := range r.Reports {
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO provider_breakers (node, mode, provider_id, state, since, reported_at)
			VALUES (?, ?, ?, ?, ?, ?)`,
			r.Node, string(rep.Mode), rep.ProviderID, string(rep.State), micros(rep.Since), micros(r.At)); err != nil {
			return err
		}
	}
	return nil
}

// BreakerReports returns the reports made at or after since.
func (s *Store) BreakerReports(ctx context.Context, since time.Time) ([]paygate.BreakerReport, error) {
	rows, err := s.read.QueryContext(ctx, `
		SELECT `+codec.BreakerReportColumns+` FROM provider_breakers
		WHERE reported_at >= ? ORDER BY provider_id, mode, node`, micros(since))
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	reports := []paygate.BreakerReport{}
	for rows.Next() {
		r, err := codec.ScanBreakerReport(rows)
		if err != nil {
			return nil, translate(err)
		}
		reports = append(reports, r)
	}
	return reports, translate(rows.Err())
}

const sandboxChargeColumns = codec.SandboxChargeColumns

func scanSandboxCharge(row scanner) (paygate.SandboxCharge, error) {
	return codec.ScanSandboxCharge(row)
}

// insertSandboxCharge inserts the entry in the caller's transaction unless
// the provider has one for the payment, which is then kept.
func insertSandboxCharge(ctx context.Context, tx *sql.Tx, c paygate.SandboxCharge) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO sandbox_ledger (`+sandboxChargeColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (provider_id, payment_id) DO NOTHING`,
		c.ProviderID, c.PaymentID, string(c.Mode), c.Amount.Amount, c.Amount.Currency, string(c.Outcome),
		c.ProviderRef, c.DeclineCode, c.Message, micros(c.ReadyAt), micros(c.CreatedAt))
	return err
}

// SandboxChargeByPayment returns the provider's entry for the payment, or
// NOT_FOUND.
func (s *Store) SandboxChargeByPayment(ctx context.Context, providerID, paymentID string) (paygate.SandboxCharge, error) {
	c, err := scanSandboxCharge(s.read.QueryRowContext(ctx,
		`SELECT `+sandboxChargeColumns+` FROM sandbox_ledger WHERE provider_id = ? AND payment_id = ?`,
		providerID, paymentID))
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.SandboxCharge{}, notFound("sandbox charge")
	}
	return c, translate(err)
}

// recoverable is the condition, on a payments row, of a payment the
// recovery job may take over at ?1 (now): created, past its lease or naming
// its provider (its request answered 202), and not claimed at now.
const recoverable = `status = 'created' AND (lease_until <= ?1 OR provider_id <> '') AND (recovery_until IS NULL OR recovery_until <= ?1)`

// PaymentsToRecover returns up to limit payments the recovery job may take
// over at now, oldest first.
func (s *Store) PaymentsToRecover(ctx context.Context, now time.Time, limit int) ([]paygate.Payment, error) {
	rows, err := s.read.QueryContext(ctx, `
		SELECT `+paymentColumns+` FROM payments
		WHERE `+recoverable+`
		ORDER BY created_at, rowid LIMIT ?2`, micros(now), sqlLimit(limit))
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

// claimRecovery claims a recoverable payment until c.Until (RecoveryClaim):
// ErrStateConflict when it is not recoverable at c.Now, NOT_FOUND when it
// does not exist for the merchant and mode.
func claimRecovery(ctx context.Context, tx *sql.Tx, c paygate.RecoveryClaim) error {
	res, err := tx.ExecContext(ctx, `
		UPDATE payments SET recovery_until = ?2
		WHERE id = ?3 AND merchant_id = ?4 AND mode = ?5 AND `+recoverable,
		micros(c.Now), micros(c.Until), c.PaymentID, c.MerchantID, string(c.Mode))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	return missingOrConflict(ctx, tx, "payments", "payment", c.PaymentID, c.MerchantID, c.Mode)
}

// replaceRoutingScores replaces the node's scores with the given ones
// (RoutingScoreReplacement).
func replaceRoutingScores(ctx context.Context, tx *sql.Tx, r paygate.RoutingScoreReplacement) error {
	if !r.ForgetBefore.IsZero() {
		if _, err := tx.ExecContext(ctx, `DELETE FROM routing_scores WHERE updated_at < ? AND node <> ?`, micros(r.ForgetBefore), r.Node); err != nil {
			return err
		}
	}
	if r.Heartbeat {
		_, err := tx.ExecContext(ctx, `UPDATE routing_scores SET updated_at = ? WHERE node = ?`, micros(r.At), r.Node)
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM routing_scores WHERE node = ?`, r.Node); err != nil {
		return err
	}
	for _, sc := range r.Scores {
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO routing_scores (`+codec.RoutingScoreColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (node, mode, provider_id, currency, brand) DO NOTHING`,
			r.Node, string(sc.Mode), sc.ProviderID, sc.Currency, sc.Brand,
			sc.Attempts, sc.Approved, sc.Score, sc.Share, micros(r.At)); err != nil {
			return err
		}
	}
	return nil
}

// RoutingScores returns the mode's scores reported at or after since: per
// (currency, brand), the snapshot of the node that reported it last.
func (s *Store) RoutingScores(ctx context.Context, mode paygate.Mode, since time.Time) ([]paygate.RoutingScore, error) {
	rows, err := s.read.QueryContext(ctx, `
		WITH latest AS (
			SELECT currency, brand, node FROM (
				SELECT currency, brand, node, ROW_NUMBER() OVER (
					PARTITION BY currency, brand ORDER BY updated_at DESC, node) AS rank
				FROM routing_scores WHERE mode = ?1 AND updated_at >= ?2
			) WHERE rank = 1
		)
		SELECT `+codec.RoutingScoreColumns+`
		FROM routing_scores JOIN latest USING (currency, brand, node)
		WHERE mode = ?1 AND updated_at >= ?2
		ORDER BY currency, brand, provider_id`, string(mode), micros(since))
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	scores := []paygate.RoutingScore{}
	for rows.Next() {
		sc, err := codec.ScanRoutingScore(rows)
		if err != nil {
			return nil, translate(err)
		}
		scores = append(scores, sc)
	}
	return scores, translate(rows.Err())
}
