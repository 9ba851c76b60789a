package postgres

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
	"github.com/paygate/paygate/internal/store/plan"
)

// The dashboard's storage (issue 8): users, sessions, the audit log, key
// usage, and the read models of its pages. Lists are newest first by
// (created_at, id) with keyset cursors, over the indexes of migration 00006.
// Every method is one statement.

var _ paygate.DashboardStore = (*Store)(nil)

// userColumns are the columns scanUser reads (one mapping for both
// engines: codec.ScanUser).
const userColumns = codec.UserColumns

func scanUser(row pgx.Row) (paygate.User, error) { return codec.ScanUser(row) }

// UserByEmail returns the user with the (lower-case) email, or NOT_FOUND.
func (s *Store) UserByEmail(ctx context.Context, email string) (paygate.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE email = $1`, email))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.User{}, notFound("user")
	}
	return u, translate(err)
}

// changePasswordInUnit replaces the password hash of a merchant's user and
// revokes the user's sessions but the kept one, in one statement, failing
// the unit (PG404) when the user does not exist for the merchant.
const changePasswordInUnit = `
	WITH u AS (
		UPDATE users SET password_hash = @hash, updated_at = @at
		WHERE id = @user_id AND merchant_id = @merchant_id
		RETURNING id
	), revoked AS (
		UPDATE sessions SET revoked_at = @at
		WHERE user_id IN (SELECT id FROM u) AND id <> @keep AND revoked_at IS NULL
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM u) THEN true ELSE unit_refused(false) END`

func passwordChangeArgs(c paygate.PasswordChange) namedArgs {
	return namedArgs{"hash": c.PasswordHash, "at": c.At, "user_id": c.UserID, "merchant_id": c.MerchantID, "keep": c.KeepSessionID}
}

// insertSessionInUnit inserts a session, failing the unit (PG404) when its
// user does not exist for its merchant. A duplicate id or token hash is
// paygate.ErrConflict.
const insertSessionInUnit = `
	WITH ins AS (
		INSERT INTO sessions (` + codec.SessionColumns + `)
		SELECT @id, @token_hash, @user_id, @merchant_id, @created_at, @last_seen_at, @expires_at, @revoked_at, @remote_addr
		WHERE EXISTS (SELECT 1 FROM users WHERE id = @user_id AND merchant_id = @merchant_id)
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM ins) THEN true ELSE unit_refused(false) END`

func sessionArgs(se paygate.Session) namedArgs {
	return namedArgs{"id": se.ID, "token_hash": se.TokenHash, "user_id": se.UserID, "merchant_id": se.MerchantID,
		"created_at": se.CreatedAt, "last_seen_at": se.LastSeenAt, "expires_at": se.ExpiresAt,
		"revoked_at": se.RevokedAt, "remote_addr": se.RemoteAddr}
}

// SessionByTokenHash returns the session with the token hash and its user,
// or NOT_FOUND, whether or not the session is still valid.
func (s *Store) SessionByTokenHash(ctx context.Context, tokenHash []byte) (paygate.Session, paygate.User, error) {
	se, u, err := codec.ScanSessionUser(s.pool.QueryRow(ctx, `
		SELECT `+codec.SessionUserColumns+`
		FROM sessions s JOIN users u ON u.id = s.user_id AND u.merchant_id = s.merchant_id
		WHERE s.token_hash = $1`, tokenHash))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.Session{}, paygate.User{}, notFound("session")
	}
	if err != nil {
		return paygate.Session{}, paygate.User{}, translate(err)
	}
	return se, u, nil
}

// touchSessionInUnit moves the session's LastSeenAt forward to $2 (never
// back), failing the unit (PG404) when the session does not exist.
const touchSessionInUnit = `
	WITH t AS (
		UPDATE sessions SET last_seen_at = GREATEST(last_seen_at, $2) WHERE id = $1
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM t) THEN true ELSE unit_refused(false) END`

// revokeSessionInUnit revokes the session at $2 (a revoked session keeps
// its first revocation time), failing the unit (PG404) when the session
// does not exist.
const revokeSessionInUnit = `
	WITH r AS (
		UPDATE sessions SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM r) THEN true ELSE unit_refused(false) END`

// auditColumns are the columns of an audit entry (one mapping for both
// engines: codec.ScanAuditEntry).
const auditColumns = codec.AuditColumns

// insertAuditInUnit inserts an audit entry, failing the unit (PG404) when
// the merchant does not exist.
const insertAuditInUnit = `
	WITH ins AS (
		INSERT INTO audit_log (` + auditColumns + `)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10
		WHERE EXISTS (SELECT 1 FROM merchants WHERE id = $2)
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM ins) THEN true ELSE unit_refused(false) END`

func auditArgs(a paygate.AuditEntry) []any {
	return []any{a.ID, a.MerchantID, string(a.Mode), a.UserID, a.Email, a.Action, a.Target, a.Detail, a.RemoteAddr, a.CreatedAt}
}

// AuditLog lists a merchant's audit entries newest first, strictly before
// q.Before when it is set, at most q.Limit (<= 0: all).
func (s *Store) AuditLog(ctx context.Context, q paygate.AuditQuery) ([]paygate.AuditEntry, error) {
	var b sqlBuilder
	query := `SELECT ` + auditColumns + ` FROM audit_log WHERE merchant_id = ` + b.arg(q.MerchantID)
	if q.Actor != "" {
		query += ` AND email = ` + b.arg(q.Actor)
	}
	if q.Action != "" {
		query += ` AND action = ` + b.arg(q.Action)
	}
	if !q.CreatedFrom.IsZero() {
		query += ` AND created_at >= ` + b.arg(q.CreatedFrom)
	}
	if !q.CreatedBefore.IsZero() {
		query += ` AND created_at < ` + b.arg(q.CreatedBefore)
	}
	if q.Before != nil {
		query += ` AND (created_at, id) < (` + b.arg(q.Before.CreatedAt) + `, ` + b.arg(q.Before.ID) + `)`
	}
	query += ` ORDER BY created_at DESC, id DESC LIMIT ` + b.arg(nullLimit(q.Limit))
	rows, err := s.pool.Query(ctx, query, b.args...)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.AuditEntry, error) { return codec.ScanAuditEntry(r) })
	if out == nil && err == nil {
		out = []paygate.AuditEntry{}
	}
	return out, translate(err)
}

// touchAPIKeys moves each key's LastUsedAt forward to the given time
// (never back), in one statement. Unknown ids are ignored.
const touchAPIKeys = `
	UPDATE api_keys k SET last_used_at = GREATEST(k.last_used_at, u.at)
	FROM unnest($1::text[], $2::timestamptz[]) AS u (id, at)
	WHERE k.id = u.id`

// apiKeyUsageArgs are the arguments of touchAPIKeys. (GREATEST ignores
// NULL: a first use sets the time.)
func apiKeyUsageArgs(u paygate.APIKeyUsage) []any {
	ids := make([]string, 0, len(u.Used))
	times := make([]time.Time, 0, len(u.Used))
	for id, at := range u.Used {
		ids = append(ids, id)
		times = append(times, at)
	}
	return []any{ids, times}
}

// sqlBuilder numbers the parameters of a query built from optional parts.
// Only values become parameters; the SQL text is constants.
type sqlBuilder struct {
	args []any
}

// arg adds a parameter and returns its placeholder.
func (b *sqlBuilder) arg(v any) string {
	b.args = append(b.args, v)
	return "$" + strconv.Itoa(len(b.args))
}

// ListPayments lists the payments of (q.MerchantID, q.Mode) matching q,
// newest first, after q.After, at most paygate.PageLimit(q.Limit), along
// the index paymentListIndex picks.
func (s *Store) ListPayments(ctx context.Context, q paygate.PaymentQuery) ([]paygate.Payment, error) {
	query, args := paymentListQuery(q)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.Payment, error) { return scanPayment(r) })
	if out == nil && err == nil {
		out = []paygate.Payment{}
	}
	return out, translate(err)
}

// The indexes of the payment list (migration 00006), each in list order
// (created_at DESC, id DESC) behind its equality columns.
const (
	paymentsByRef      = "payments_merchant_ref_idx"
	paymentsByCustomer = "payments_customer_idx"
	paymentsByCurrency = "payments_currency_idx"
	paymentsByStatus   = "payments_list_status_idx"
	paymentsList       = "payments_list_idx"
	paymentsByLast4    = "payments_card_last4_idx" // migration 00021
	paymentsByID       = "payments_pkey"
)

// paymentListIndexes are the indexes of plan.PaymentList.
var paymentListIndexes = map[plan.ListKey]string{
	plan.ListAll: paymentsList, plan.ListByReference: paymentsByRef, plan.ListByCustomer: paymentsByCustomer,
	plan.ListByCurrency: paymentsByCurrency, plan.ListByStatus: paymentsByStatus,
	plan.ListByLast4: paymentsByLast4, plan.ListByID: paymentsByID,
}

// paymentListIndex returns the index ListPayments reads for q.
func paymentListIndex(q paygate.PaymentQuery) string { return paymentListIndexes[plan.PaymentList(q)] }

// paymentListQuery returns the SQL and arguments of ListPayments. Only the
// filters that are set appear in it, every value is a parameter, and each
// combination gets its own plan (a generic plan of a prepared statement
// stays an index range scan).
//
// PostgreSQL takes no index hints, so the query leaves the planner one
// index to seek with: a filter the index of paymentListIndex does not lead
// with is written as "(condition) IS TRUE", which no index matches but
// which is estimated as the condition itself. It is a residual condition on
// the rows of the index's range, read in list order (or, when the planner
// expects fewer matches than a page, all read and sorted: the range of one
// reference or customer is small). When the index is the status one and
// several statuses are wanted, each status is read as its own range and
// the ranges are merged.
func paymentListQuery(q paygate.PaymentQuery) (string, []any) {
	statuses := distinctStatuses(q.Statuses)
	index := paymentListIndex(q)
	var b sqlBuilder
	where := `merchant_id = ` + b.arg(q.MerchantID) + ` AND mode = ` + b.arg(string(q.Mode))
	if !q.CreatedFrom.IsZero() {
		where += ` AND created_at >= ` + b.arg(q.CreatedFrom)
	}
	// One upper bound, the tighter, so that the index is entered at the
	// cursor whatever the estimates.
	switch cursor := q.After != nil; {
	case cursor && (q.CreatedBefore.IsZero() ||
		q.After.CreatedAt.Truncate(time.Microsecond).Before(q.CreatedBefore.Truncate(time.Microsecond))):
		// The cursor implies created_at < CreatedBefore.
		where += ` AND (created_at, id) < (` + b.arg(q.After.CreatedAt) + `, ` + b.arg(q.After.ID) + `)`
	case !q.CreatedBefore.IsZero():
		// Every row before CreatedBefore is before the cursor too.
		where += ` AND created_at < ` + b.arg(q.CreatedBefore)
	}
	if q.MerchantRef != "" {
		where += ` AND merchant_ref = ` + b.arg(q.MerchantRef)
	}
	// filter adds a condition, as a residual one unless the index leads
	// with it.
	filter := func(cond string, indexed bool) {
		if indexed {
			where += ` AND ` + cond
		} else {
			where += ` AND (` + cond + `) IS TRUE`
		}
	}
	if q.CustomerID != "" {
		filter(`customer_id = `+b.arg(q.CustomerID), index == paymentsByCustomer)
	}
	if q.CustomerExternalID != "" {
		// $1 and $2 are the merchant and the mode.
		filter(`customer_id = (SELECT id FROM customers WHERE merchant_id = $1 AND mode = $2 AND external_id = `+
			b.arg(q.CustomerExternalID)+`)`, index == paymentsByCustomer)
	}
	if q.Currency != "" {
		filter(`currency = `+b.arg(q.Currency), index == paymentsByCurrency)
	}
	if q.PaymentID != "" {
		filter(`id = `+b.arg(q.PaymentID), index == paymentsByID)
	}
	if q.CardLast4 != "" {
		filter(`card_last4 = `+b.arg(q.CardLast4), index == paymentsByLast4)
	}
	if q.CustomerEmail != "" {
		// The customers of the email by customers_email_idx, their
		// payments by payments_customer_idx; $1 and $2 are the merchant
		// and the mode.
		filter(`customer_id IN (SELECT id FROM customers WHERE merchant_id = $1 AND mode = $2 AND email IS NOT NULL AND lower(email) = lower(`+
			b.arg(q.CustomerEmail)+`))`, index == paymentsByCustomer)
	}
	order := ` ORDER BY created_at DESC, id DESC LIMIT ` + b.arg(paygate.PageLimit(q.Limit))
	const from = `SELECT ` + paymentColumns + ` FROM payments WHERE `

	switch {
	case len(statuses) == 0:
		return from + where + order, b.args
	case index == paymentsByStatus && len(statuses) == 1:
		return from + where + ` AND status = ` + b.arg(string(statuses[0])) + order, b.args
	case index == paymentsByStatus:
		parts := make([]string, len(statuses))
		for i, st := range statuses {
			parts[i] = `(` + from + where + ` AND status = ` + b.arg(string(st)) + order + `)`
		}
		return strings.Join(parts, ` UNION ALL `) + order, b.args
	}
	in := make([]string, len(statuses))
	for i, st := range statuses {
		in[i] = b.arg(string(st))
	}
	filter(`status IN (`+strings.Join(in, `, `)+`)`, false)
	return from + where + order, b.args
}

// distinctStatuses returns the statuses without repeats, in order.
func distinctStatuses(in []paygate.PaymentStatus) []paygate.PaymentStatus {
	var out []paygate.PaymentStatus
	for _, st := range in {
		if !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	return out
}

// SearchCustomers lists the customers of (q.MerchantID, q.Mode) whose
// external id starts with q.Text (or equals it) or whose email equals it
// case-insensitively; all of them when q.Text is "". Newest first, after
// q.After, at most paygate.PageLimit(q.Limit). The prefix is a range of
// external_id in binary order (customers_external_prefix_idx), exact
// whatever the database's collation.
func (s *Store) SearchCustomers(ctx context.Context, q paygate.CustomerQuery) ([]paygate.Customer, error) {
	query, args := customerSearchQuery(q)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.Customer, error) { return scanCustomer(r) })
	if out == nil && err == nil {
		out = []paygate.Customer{}
	}
	return out, translate(err)
}

// customerSearchQuery returns the SQL and arguments of SearchCustomers.
// With a text, the external id prefix and the email are two branches, each
// ordered and limited on its own so that the planner may read either by its
// own index (a narrow prefix, an email) or along customers_list_idx (a
// prefix most customers share); UNION drops a customer both find.
func customerSearchQuery(q paygate.CustomerQuery) (string, []any) {
	var b sqlBuilder
	scope := `merchant_id = ` + b.arg(q.MerchantID) + ` AND mode = ` + b.arg(string(q.Mode))
	if q.After != nil {
		scope += ` AND (created_at, id) < (` + b.arg(q.After.CreatedAt) + `, ` + b.arg(q.After.ID) + `)`
	}
	order := ` ORDER BY created_at DESC, id DESC LIMIT ` + b.arg(paygate.PageLimit(q.Limit))
	if q.Text == "" {
		return `SELECT ` + customerColumns + ` FROM customers WHERE ` + scope + order, b.args
	}
	text := b.arg(q.Text)
	prefix := `external_id COLLATE "C" >= ` + text
	if end, ok := codec.PrefixEnd(q.Text); ok {
		prefix += ` AND external_id COLLATE "C" < ` + b.arg(end)
	}
	return `(SELECT ` + customerColumns + ` FROM customers WHERE ` + scope + ` AND ` + prefix + order + `)
		UNION
		(SELECT ` + customerColumns + ` FROM customers WHERE ` + scope +
		` AND email IS NOT NULL AND lower(email) = lower(` + text + `)` + order + `)` + order, b.args
}

// paymentStatsQuery groups the payments of the range (a range of
// payments_list_idx) per period and currency, in the columns of
// codec.ScanPaymentStat. The period's start is the number of whole periods
// since the Unix epoch times the period: plain arithmetic, which every
// PostgreSQL-compatible database has (date_bin is PostgreSQL 14 and later).
const paymentStatsQuery = `
	SELECT to_timestamp((floor(extract(epoch FROM created_at) / $1::bigint)::bigint * $1::bigint)::double precision) AS period,
		currency,
		count(*),
		count(*) FILTER (WHERE status = 'captured'),
		count(*) FILTER (WHERE status = 'failed'),
		count(*) FILTER (WHERE status = 'failed' AND error_code = $2),
		count(*) FILTER (WHERE status IN ('created', 'pending_3ds', 'pending_consent', 'authorized')),
		COALESCE(sum(amount_captured) FILTER (WHERE status = 'captured'), 0)::bigint,
		COALESCE(sum(amount_refunded) FILTER (WHERE status = 'captured'), 0)::bigint
	FROM payments
	WHERE merchant_id = $3 AND mode = $4 AND created_at >= $5 AND created_at < $6
	GROUP BY 1, 2
	ORDER BY 1, 2`

// paymentStatsArgs are the arguments of paymentStatsQuery.
func paymentStatsArgs(merchantID string, mode paygate.Mode, from, to time.Time) []any {
	return []any{int64(paygate.StatPeriod / time.Second), string(paygate.CodeCardDeclined), merchantID, string(mode), from, to}
}

// PaymentStats counts the payments of (merchant, mode) created in [from,
// to) per paygate.StatPeriod and currency, ordered by period then currency.
func (s *Store) PaymentStats(ctx context.Context, merchantID string, mode paygate.Mode, from, to time.Time) ([]paygate.PaymentStat, error) {
	rows, err := s.pool.Query(ctx, paymentStatsQuery, paymentStatsArgs(merchantID, mode, from, to)...)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.PaymentStat, error) { return codec.ScanPaymentStat(r) })
	if out == nil && err == nil {
		out = []paygate.PaymentStat{}
	}
	return out, translate(err)
}

// providerStatsQuery groups the answered payments of the range (a range of
// payments_list_idx, as paymentStatsQuery) per period and provider, in the
// columns of codec.ScanProviderStat.
const providerStatsQuery = `
	SELECT to_timestamp((floor(extract(epoch FROM created_at) / $1::bigint)::bigint * $1::bigint)::double precision) AS period,
		provider_id, currency, card_brand,
		count(*),
		count(*) FILTER (WHERE status IN ('authorized', 'captured', 'voided'))
	FROM payments
	WHERE merchant_id = $2 AND mode = $3 AND created_at >= $4 AND created_at < $5
		AND provider_id <> '' AND status IN ('authorized', 'captured', 'voided', 'failed')
	GROUP BY 1, 2, 3, 4
	ORDER BY 1, 2, 3, 4`

// providerStatsArgs are the arguments of providerStatsQuery.
func providerStatsArgs(merchantID string, mode paygate.Mode, from, to time.Time) []any {
	return []any{int64(paygate.ProviderStatPeriod / time.Second), merchantID, string(mode), from, to}
}

// ProviderStats counts the answered payments of (merchant, mode) created in
// [from, to) per paygate.ProviderStatPeriod and provider, ordered by period
// then provider.
func (s *Store) ProviderStats(ctx context.Context, merchantID string, mode paygate.Mode, from, to time.Time) ([]paygate.ProviderStat, error) {
	rows, err := s.pool.Query(ctx, providerStatsQuery, providerStatsArgs(merchantID, mode, from, to)...)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.ProviderStat, error) { return codec.ScanProviderStat(r) })
	if out == nil && err == nil {
		out = []paygate.ProviderStat{}
	}
	return out, translate(err)
}
