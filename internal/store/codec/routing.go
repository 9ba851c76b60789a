package codec

import "github.com/paygate/paygate/internal/paygate"

// ProviderStateColumns are the columns of a provider_states row that
// ScanProviderState reads, in its order. drained is a boolean on
// PostgreSQL and an INTEGER 0 or 1 on SQLite (which has no boolean type);
// both drivers scan it into a bool. approval_rate and approval_at are NULL
// without an approval override.
const ProviderStateColumns = `provider_id, drained, updated_at, approval_rate, approval_at`

// ScanProviderState reads a row of ProviderStateColumns.
func ScanProviderState(row Scanner) (paygate.ProviderState, error) {
	var st paygate.ProviderState
	if err := row.Scan(&st.ProviderID, &st.Drained, At(&st.UpdatedAt), &st.ApprovalRate, AtOptional(&st.ApprovalAt)); err != nil {
		return paygate.ProviderState{}, err
	}
	return st, nil
}

// BreakerReportColumns are the columns of a provider_breakers row that
// ScanBreakerReport reads, in its order.
const BreakerReportColumns = `node, mode, provider_id, state, since, reported_at`

// ScanBreakerReport reads a row of BreakerReportColumns.
func ScanBreakerReport(row Scanner) (paygate.BreakerReport, error) {
	var r paygate.BreakerReport
	if err := row.Scan(&r.Node, &r.Mode, &r.ProviderID, &r.State, At(&r.Since), At(&r.ReportedAt)); err != nil {
		return paygate.BreakerReport{}, err
	}
	return r, nil
}

// SandboxChargeColumns are the columns of a sandbox_ledger row that
// ScanSandboxCharge reads, in its order. Its text columns are NOT NULL,
// "" for none, on both engines.
const SandboxChargeColumns = `provider_id, payment_id, mode, amount, currency, outcome,
	provider_ref, decline_code, message, ready_at, created_at`

// ScanSandboxCharge reads a row of SandboxChargeColumns.
func ScanSandboxCharge(row Scanner) (paygate.SandboxCharge, error) {
	var c paygate.SandboxCharge
	err := row.Scan(&c.ProviderID, &c.PaymentID, &c.Mode, &c.Amount.Amount, &c.Amount.Currency, &c.Outcome,
		&c.ProviderRef, &c.DeclineCode, &c.Message, At(&c.ReadyAt), At(&c.CreatedAt))
	if err != nil {
		return paygate.SandboxCharge{}, err
	}
	return c, nil
}

// RoutingScoreColumns are the columns of a routing_scores row that
// ScanRoutingScore reads, in its order.
const RoutingScoreColumns = `node, mode, provider_id, currency, brand, attempts, approved, score, share, updated_at`

// ScanRoutingScore reads a row of RoutingScoreColumns.
func ScanRoutingScore(row Scanner) (paygate.RoutingScore, error) {
	var r paygate.RoutingScore
	err := row.Scan(&r.Node, &r.Mode, &r.ProviderID, &r.Currency, &r.Brand,
		&r.Attempts, &r.Approved, &r.Score, &r.Share, At(&r.UpdatedAt))
	if err != nil {
		return paygate.RoutingScore{}, err
	}
	return r, nil
}
