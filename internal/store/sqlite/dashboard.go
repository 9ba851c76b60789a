package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
	"github.com/paygate/paygate/internal/store/plan"
)

// The dashboard's storage (issue 8): users, sessions, the audit log, key
// usage, and the read models of its pages. Lists are newest first by
// (created_at, id) with keyset cursors, over the indexes of migration 00006.

var _ paygate.DashboardStore = (*Store)(nil)

// userColumns are the columns scanUser reads (one mapping for both
// engines: codec.ScanUser).
const userColumns = codec.UserColumns

func scanUser(row scanner) (paygate.User, error) { return codec.ScanUser(row) }

// UserByEmail returns the user with the (lower-case) email, or NOT_FOUND.
func (s *Store) UserByEmail(ctx context.Context, email string) (paygate.User, error) {
	u, err := scanUser(s.read.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE email = ?`, email))
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.User{}, notFound("user")
	}
	return u, translate(err)
}

// changePassword replaces the password hash of a merchant's user and
// revokes, in the unit's transaction, the user's sessions but the kept
// one. NOT_FOUND when the user does not exist for the merchant.
func changePassword(ctx context.Context, tx *sql.Tx, c paygate.PasswordChange) error {
	res, err := tx.ExecContext(ctx,
		`UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ? AND merchant_id = ?`,
		c.PasswordHash, micros(c.At), c.UserID, c.MerchantID)
	if err != nil {
		return err
	}
	if err := oneRow(res, "user"); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx,
		`UPDATE sessions SET revoked_at = ? WHERE user_id = ? AND id <> ? AND revoked_at IS NULL`,
		micros(c.At), c.UserID, c.KeepSessionID)
	return err
}

const sessionColumns = codec.SessionColumns

// insertSession inserts a session. NOT_FOUND when its user does not exist
// for its merchant; a duplicate id or token hash is paygate.ErrConflict.
func insertSession(ctx context.Context, tx *sql.Tx, se paygate.Session) error {
	res, err := tx.ExecContext(ctx, `
		INSERT INTO sessions (`+sessionColumns+`)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9
		WHERE EXISTS (SELECT 1 FROM users WHERE id = ?3 AND merchant_id = ?4)`,
		se.ID, se.TokenHash, se.UserID, se.MerchantID, micros(se.CreatedAt), micros(se.LastSeenAt),
		micros(se.ExpiresAt), nullMicros(se.RevokedAt), se.RemoteAddr)
	if err != nil {
		return err
	}
	return oneRow(res, "user")
}

// SessionByTokenHash returns the session with the token hash and its user,
// or NOT_FOUND, whether or not the session is still valid.
func (s *Store) SessionByTokenHash(ctx context.Context, tokenHash []byte) (paygate.Session, paygate.User, error) {
	se, u, err := codec.ScanSessionUser(s.read.QueryRowContext(ctx, `
		SELECT `+codec.SessionUserColumns+`
		FROM sessions s JOIN users u ON u.id = s.user_id AND u.merchant_id = s.merchant_id
		WHERE s.token_hash = ?`, tokenHash))
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.Session{}, paygate.User{}, notFound("session")
	}
	if err != nil {
		return paygate.Session{}, paygate.User{}, translate(err)
	}
	return se, u, nil
}

// touchSession moves the session's LastSeenAt forward to At (never back).
// NOT_FOUND when the session does not exist.
func touchSession(ctx context.Context, tx *sql.Tx, t paygate.SessionTouch) error {
	res, err := tx.ExecContext(ctx,
		`UPDATE sessions SET last_seen_at = max(last_seen_at, ?) WHERE id = ?`, micros(t.At), t.SessionID)
	if err != nil {
		return err
	}
	return oneRow(res, "session")
}

// revokeSession revokes a session at At; a revoked session keeps its first
// revocation time. NOT_FOUND when it does not exist.
func revokeSession(ctx context.Context, tx *sql.Tx, r paygate.SessionRevocation) error {
	res, err := tx.ExecContext(ctx,
		`UPDATE sessions SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`, micros(r.At), r.SessionID)
	if err != nil {
		return err
	}
	return oneRow(res, "session")
}

// oneRow returns NOT_FOUND for what when res changed no row.
func oneRow(res sql.Result, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound(what)
	}
	return nil
}

// auditColumns are the columns of an audit entry (one mapping for both
// engines: codec.ScanAuditEntry).
const auditColumns = codec.AuditColumns

// insertAudit inserts an audit entry. NOT_FOUND when the merchant does not
// exist (the foreign key).
func insertAudit(ctx context.Context, tx *sql.Tx, a paygate.AuditEntry) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO audit_log (`+auditColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.MerchantID, string(a.Mode), a.UserID, a.Email, a.Action, a.Target, a.Detail, a.RemoteAddr,
		micros(a.CreatedAt))
	return err
}

// AuditLog lists a merchant's audit entries newest first, strictly before
// q.Before when it is set, at most q.Limit (<= 0: all).
func (s *Store) AuditLog(ctx context.Context, q paygate.AuditQuery) ([]paygate.AuditEntry, error) {
	query := `SELECT ` + auditColumns + ` FROM audit_log WHERE merchant_id = ?`
	args := []any{q.MerchantID}
	if q.Actor != "" {
		query += ` AND email = ?`
		args = append(args, q.Actor)
	}
	if q.Action != "" {
		query += ` AND action = ?`
		args = append(args, q.Action)
	}
	if !q.CreatedFrom.IsZero() {
		query += ` AND created_at >= ?`
		args = append(args, micros(q.CreatedFrom))
	}
	if !q.CreatedBefore.IsZero() {
		query += ` AND created_at < ?`
		args = append(args, micros(q.CreatedBefore))
	}
	if q.Before != nil {
		query += ` AND (created_at, id) < (?, ?)`
		args = append(args, micros(q.Before.CreatedAt), q.Before.ID)
	}
	query += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, sqlLimit(q.Limit))
	rows, err := s.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []paygate.AuditEntry{}
	for rows.Next() {
		a, err := codec.ScanAuditEntry(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, a)
	}
	return out, translate(rows.Err())
}

// touchAPIKeys moves each key's LastUsedAt forward to the given time
// (never back). Unknown ids are ignored.
func touchAPIKeys(ctx context.Context, tx *sql.Tx, u paygate.APIKeyUsage) error {
	if len(u.Used) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx,
		`UPDATE api_keys SET last_used_at = max(coalesce(last_used_at, ?1), ?1) WHERE id = ?2`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, id := range sortedKeys(u.Used) {
		if _, err := stmt.ExecContext(ctx, micros(u.Used[id]), id); err != nil {
			return err
		}
	}
	return nil
}

// sortedKeys returns the keys of m in order, so that concurrent batches
// touch rows in one order.
func sortedKeys(m map[string]time.Time) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ListPayments lists the payments of (q.MerchantID, q.Mode) matching q,
// newest first, after q.After, at most paygate.PageLimit(q.Limit), along
// the index paymentListIndex picks: no scan of rows that do not match the
// index's own filter, and no sort of more than a page per status.
func (s *Store) ListPayments(ctx context.Context, q paygate.PaymentQuery) ([]paygate.Payment, error) {
	query, args := paymentListQuery(q)
	rows, err := s.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []paygate.Payment{}
	for rows.Next() {
		p, err := scanPayment(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, p)
	}
	return out, translate(rows.Err())
}

// The indexes of the payment list (migration 00006), each in list order
// (created_at DESC, id DESC) behind its equality columns.
const (
	paymentsByRef      = "payments_merchant_ref"
	paymentsByCustomer = "payments_customer"
	paymentsByCurrency = "payments_currency"
	paymentsByStatus   = "payments_list_status"
	paymentsList       = "payments_list"
	paymentsByLast4    = "payments_card_last4" // migration 00019
)

// paymentListIndexes are the indexes of plan.PaymentList.
var paymentListIndexes = map[plan.ListKey]string{
	plan.ListAll: paymentsList, plan.ListByReference: paymentsByRef, plan.ListByCustomer: paymentsByCustomer,
	plan.ListByCurrency: paymentsByCurrency, plan.ListByStatus: paymentsByStatus,
	plan.ListByLast4: paymentsByLast4,
	// The primary key, which INDEXED BY cannot name: the id's equality
	// makes it SQLite's choice.
	plan.ListByID: "",
}

// paymentListIndex returns the index ListPayments reads for q.
func paymentListIndex(q paygate.PaymentQuery) string { return paymentListIndexes[plan.PaymentList(q)] }

// paymentListQuery returns the SQL and arguments of ListPayments. Only the
// filters that are set appear in it, every value is a parameter, and
// INDEXED BY names the index of paymentListIndex (a query the index cannot
// serve fails instead of scanning). Filters the index does not lead with
// are residual conditions. When the index is the status one and several
// statuses are wanted, each status is read as its own range and the ranges
// are merged.
func paymentListQuery(q paygate.PaymentQuery) (string, []any) {
	statuses := distinctStatuses(q.Statuses)
	index := paymentListIndex(q)
	limit := paygate.PageLimit(q.Limit)
	where := `merchant_id = ? AND mode = ?`
	args := []any{q.MerchantID, string(q.Mode)}
	if !q.CreatedFrom.IsZero() {
		where += ` AND created_at >= ?`
		args = append(args, micros(q.CreatedFrom))
	}
	// One upper bound, the tighter: with both, SQLite seeks to the end of
	// the dates and skips the pages before the cursor one row at a time.
	switch cursor := q.After != nil; {
	case cursor && (q.CreatedBefore.IsZero() || micros(q.After.CreatedAt) < micros(q.CreatedBefore)):
		// The cursor implies created_at < CreatedBefore.
		where += ` AND (created_at, id) < (?, ?)`
		args = append(args, micros(q.After.CreatedAt), q.After.ID)
	case !q.CreatedBefore.IsZero():
		// Every row before CreatedBefore is before the cursor too.
		where += ` AND created_at < ?`
		args = append(args, micros(q.CreatedBefore))
	}
	if q.Currency != "" {
		where += ` AND currency = ?`
		args = append(args, q.Currency)
	}
	if q.MerchantRef != "" {
		where += ` AND merchant_ref = ?`
		args = append(args, q.MerchantRef)
	}
	if q.CustomerID != "" {
		where += ` AND customer_id = ?`
		args = append(args, q.CustomerID)
	}
	if q.CustomerExternalID != "" {
		where += ` AND customer_id = (SELECT id FROM customers WHERE merchant_id = ? AND mode = ? AND external_id = ?)`
		args = append(args, q.MerchantID, string(q.Mode), q.CustomerExternalID)
	}
	if q.PaymentID != "" {
		where += ` AND id = ?`
		args = append(args, q.PaymentID)
	}
	if q.CardLast4 != "" {
		where += ` AND card_last4 = ?`
		args = append(args, q.CardLast4)
	}
	if q.CustomerEmail != "" {
		// The customers of the email by customers_email, their payments
		// by payments_customer (a few ranges, merged by a sort).
		where += ` AND customer_id IN (SELECT id FROM customers WHERE merchant_id = ? AND mode = ? AND email IS NOT NULL AND lower(email) = lower(?))`
		args = append(args, q.MerchantID, string(q.Mode), q.CustomerEmail)
	}
	const order = ` ORDER BY created_at DESC, id DESC LIMIT ?`
	from := ` FROM payments INDEXED BY ` + index + ` WHERE `
	if index == "" {
		from = ` FROM payments WHERE `
	}

	if index == paymentsByStatus && len(statuses) > 1 {
		var (
			parts []string
			all   []any
		)
		for _, st := range statuses {
			parts = append(parts, `SELECT * FROM (SELECT `+paymentColumns+from+where+` AND status = ?`+order+`)`)
			all = append(append(append(all, args...), string(st)), limit)
		}
		return `SELECT * FROM (` + strings.Join(parts, ` UNION ALL `) + `)` + order, append(all, limit)
	}
	switch len(statuses) {
	case 0:
	case 1:
		where += ` AND status = ?`
		args = append(args, string(statuses[0]))
	default:
		where += ` AND status IN (?` + strings.Repeat(`, ?`, len(statuses)-1) + `)`
		for _, st := range statuses {
			args = append(args, string(st))
		}
	}
	return `SELECT ` + paymentColumns + from + where + order, append(args, limit)
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
// q.After, at most paygate.PageLimit(q.Limit).
func (s *Store) SearchCustomers(ctx context.Context, q paygate.CustomerQuery) ([]paygate.Customer, error) {
	query, args := customerSearchQuery(q)
	rows, err := s.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []paygate.Customer{}
	for rows.Next() {
		c, err := scanCustomer(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, c)
	}
	return out, translate(rows.Err())
}

// customerSearchQuery returns the SQL and arguments of SearchCustomers.
// With a text, the external id prefix (a range of the unique (merchant_id,
// mode, external_id) index, in binary order) and the email
// (customers_email) are two branches, each sorted and limited on its own;
// UNION drops a customer both find. In the branches the unary + keeps
// SQLite from walking customers_list for its order, which would read every
// customer of the merchant to find one email.
func customerSearchQuery(q paygate.CustomerQuery) (string, []any) {
	const order = ` ORDER BY created_at DESC, id DESC LIMIT ?`
	limit := paygate.PageLimit(q.Limit)
	if q.Text == "" {
		query := `SELECT ` + customerColumns + ` FROM customers WHERE merchant_id = ? AND mode = ?`
		args := []any{q.MerchantID, string(q.Mode)}
		if q.After != nil {
			query += ` AND (created_at, id) < (?, ?)`
			args = append(args, micros(q.After.CreatedAt), q.After.ID)
		}
		return query + order, append(args, limit)
	}
	scope := `merchant_id = ? AND mode = ?`
	scopeArgs := []any{q.MerchantID, string(q.Mode)}
	if q.After != nil {
		scope += ` AND (+created_at, +id) < (?, ?)`
		scopeArgs = append(scopeArgs, micros(q.After.CreatedAt), q.After.ID)
	}
	const branchOrder = ` ORDER BY +created_at DESC, +id DESC LIMIT ?`
	prefix := ` AND external_id >= ?`
	prefixArgs := []any{q.Text}
	if end, ok := codec.PrefixEnd(q.Text); ok {
		prefix += ` AND external_id < ?`
		prefixArgs = append(prefixArgs, end)
	}
	var args []any
	args = append(append(append(args, scopeArgs...), prefixArgs...), limit)
	args = append(append(args, scopeArgs...), q.Text, limit, limit)
	return `SELECT * FROM (SELECT ` + customerColumns + ` FROM customers WHERE ` + scope + prefix + branchOrder + `)
		UNION
		SELECT * FROM (SELECT ` + customerColumns + ` FROM customers WHERE ` + scope +
		` AND email IS NOT NULL AND lower(email) = lower(?)` + branchOrder + `)` + order, args
}

// eventsByPaymentQuery reads events_payment, the partial index of events
// with a payment: "payment_id <> ”" lets SQLite use it, and the unary +
// keeps it from preferring events_merchant, which would read every event of
// the merchant. Merchant and mode are still filtered.
const eventsByPaymentQuery = eventsOfPaymentSelect + `
	ORDER BY created_at, seq`

// eventsOfPaymentSelect is eventsByPaymentQuery without its order, for
// further conditions.
const eventsOfPaymentSelect = `SELECT ` + eventColumns + ` FROM events
	WHERE payment_id = ? AND payment_id <> '' AND +merchant_id = ? AND +mode = ?`

// deliveriesOfPayment selects the deliveries of the events of a payment
// (?1) of (?2, ?3) and of its refunds: the events by events_payment (as
// eventsByPaymentQuery), their deliveries by webhook_deliveries_event; the
// unary + keeps SQLite from walking webhook_deliveries_merchant instead,
// which would read every delivery of the merchant. Merchant and mode are
// filtered on both tables. Further conditions follow with AND, their
// parameters after ?3.
const deliveriesOfPayment = `event_id IN (SELECT id FROM events
			WHERE payment_id = ?1 AND payment_id <> '' AND +merchant_id = ?2 AND +mode = ?3)
		AND +merchant_id = ?2 AND +mode = ?3`

// microsPerPeriod is paygate.StatPeriod in stored time units.
const microsPerPeriod = int64(paygate.StatPeriod / time.Microsecond)

// paymentStatsQuery reads the payments of the range along payments_list
// (named: it is the one index with the range behind merchant and mode) and
// groups them per period and currency, in the columns of
// codec.ScanPaymentStat (the period's start a stored time).
const paymentStatsQuery = `
	SELECT period, currency, count(*),
		sum(status = 'captured'),
		sum(status = 'failed'),
		sum(status = 'failed' AND error_code = ?2),
		sum(status IN ('created', 'pending_3ds', 'pending_consent', 'authorized')),
		sum(CASE WHEN status = 'captured' THEN amount_captured ELSE 0 END),
		sum(CASE WHEN status = 'captured' THEN amount_refunded ELSE 0 END)
	FROM (
		SELECT created_at - (((created_at % ?1) + ?1) % ?1) AS period, currency, status, error_code, amount_captured, amount_refunded
		FROM payments INDEXED BY payments_list
		WHERE merchant_id = ?3 AND mode = ?4 AND created_at >= ?5 AND created_at < ?6
	)
	GROUP BY period, currency
	ORDER BY period, currency`

// PaymentStats counts the payments of (merchant, mode) created in [from,
// to) per paygate.StatPeriod and currency, ordered by period then currency.
func (s *Store) PaymentStats(ctx context.Context, merchantID string, mode paygate.Mode, from, to time.Time) ([]paygate.PaymentStat, error) {
	rows, err := s.read.QueryContext(ctx, paymentStatsQuery,
		microsPerPeriod, string(paygate.CodeCardDeclined), merchantID, string(mode), micros(from), micros(to))
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []paygate.PaymentStat{}
	for rows.Next() {
		st, err := codec.ScanPaymentStat(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, st)
	}
	return out, translate(rows.Err())
}

// microsPerProviderPeriod is paygate.ProviderStatPeriod in stored time
// units.
const microsPerProviderPeriod = int64(paygate.ProviderStatPeriod / time.Microsecond)

// providerStatsQuery reads the payments of the range along payments_list,
// as paymentStatsQuery does, and groups the answered ones per period and
// provider, in the columns of codec.ScanProviderStat.
const providerStatsQuery = `
	SELECT period, provider_id, currency, card_brand, count(*), sum(status IN ('authorized', 'captured', 'voided'))
	FROM (
		SELECT created_at - (((created_at % ?1) + ?1) % ?1) AS period, provider_id, currency, card_brand, status
		FROM payments INDEXED BY payments_list
		WHERE merchant_id = ?2 AND mode = ?3 AND created_at >= ?4 AND created_at < ?5
			AND provider_id <> '' AND status IN ('authorized', 'captured', 'voided', 'failed')
	)
	GROUP BY period, provider_id, currency, card_brand
	ORDER BY period, provider_id, currency, card_brand`

// ProviderStats counts the answered payments of (merchant, mode) created in
// [from, to) per paygate.ProviderStatPeriod and provider, ordered by period
// then provider.
func (s *Store) ProviderStats(ctx context.Context, merchantID string, mode paygate.Mode, from, to time.Time) ([]paygate.ProviderStat, error) {
	rows, err := s.read.QueryContext(ctx, providerStatsQuery,
		microsPerProviderPeriod, merchantID, string(mode), micros(from), micros(to))
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []paygate.ProviderStat{}
	for rows.Next() {
		st, err := codec.ScanProviderStat(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, st)
	}
	return out, translate(rows.Err())
}
