package codec

import "github.com/paygate/paygate/internal/paygate"

// The accounts and the dashboard: merchants, API keys, dashboard users,
// their sessions, the audit log, and the payment overview. The tables are
// declared alike on both engines (the same NOT NULL columns, the same
// mode and type checks); an optional time (a key's expiry, revocation and
// last use, a session's revocation) is NULL for none on both, and so is a
// key's successor_id, which names another key (read by the rotation only,
// never mapped here).

// MerchantColumns are the columns of a merchants row that ScanMerchant
// reads, in its order.
const MerchantColumns = `id, name, created_at`

// ScanMerchant reads a row of MerchantColumns.
func ScanMerchant(row Scanner) (paygate.Merchant, error) {
	var m paygate.Merchant
	if err := row.Scan(&m.ID, &m.Name, At(&m.CreatedAt)); err != nil {
		return paygate.Merchant{}, err
	}
	return m, nil
}

// APIKeyColumns are the columns of an api_keys row that ScanAPIKey reads,
// in its order: every column a writer sets.
const APIKeyColumns = `id, merchant_id, mode, type, hash, hint, created_at, expires_at, revoked_at`

// APIKeyReadColumns are the columns ScanAPIKeyUsed reads: APIKeyColumns
// and when the key was last used (written by paygate.APIKeyUsage only).
const APIKeyReadColumns = APIKeyColumns + `, last_used_at`

// ScanAPIKey reads a row of APIKeyColumns; LastUsedAt stays nil.
func ScanAPIKey(row Scanner) (paygate.APIKey, error) {
	var k paygate.APIKey
	if err := row.Scan(apiKeyDests(&k)...); err != nil {
		return paygate.APIKey{}, err
	}
	return k, nil
}

// ScanAPIKeyUsed reads a row of APIKeyReadColumns.
func ScanAPIKeyUsed(row Scanner) (paygate.APIKey, error) {
	var k paygate.APIKey
	if err := row.Scan(append(apiKeyDests(&k), AtOptional(&k.LastUsedAt))...); err != nil {
		return paygate.APIKey{}, err
	}
	return k, nil
}

// apiKeyDests are the scan destinations of APIKeyColumns.
func apiKeyDests(k *paygate.APIKey) []any {
	return []any{&k.ID, &k.MerchantID, (*string)(&k.Mode), (*string)(&k.Type), &k.Hash, &k.Hint,
		At(&k.CreatedAt), AtOptional(&k.ExpiresAt), AtOptional(&k.RevokedAt)}
}

// UserColumns are the columns of a users row that ScanUser reads, in its
// order: every column.
const UserColumns = `id, merchant_id, email, password_hash, created_at, updated_at, role, disabled_at, locked_until,
	failed_sign_ins, last_sign_in_at, mfa_secret, mfa_enabled_at, mfa_last_step`

// ScanUser reads a row of UserColumns.
func ScanUser(row Scanner) (paygate.User, error) {
	var u paygate.User
	if err := row.Scan(userDests(&u)...); err != nil {
		return paygate.User{}, err
	}
	return u, nil
}

func userDests(u *paygate.User) []any {
	return []any{&u.ID, &u.MerchantID, &u.Email, &u.PasswordHash, At(&u.CreatedAt), At(&u.UpdatedAt),
		(*string)(&u.Role), AtOptional(&u.DisabledAt), AtOptional(&u.LockedUntil), &u.FailedSignIns,
		AtOptional(&u.LastSignInAt), &u.MFASecret, AtOptional(&u.MFAEnabledAt), &u.MFALastStep}
}

// SessionColumns are the columns of a sessions row, in the order of
// ScanSessionUser: every column.
const SessionColumns = `id, token_hash, user_id, merchant_id, created_at, last_seen_at, expires_at, revoked_at, remote_addr`

// SessionUserColumns are the columns ScanSessionUser reads from sessions s
// joined with users u: SessionColumns of s, then UserColumns of u.
const SessionUserColumns = `s.id, s.token_hash, s.user_id, s.merchant_id, s.created_at, s.last_seen_at, s.expires_at,
	s.revoked_at, s.remote_addr,
	u.id, u.merchant_id, u.email, u.password_hash, u.created_at, u.updated_at, u.role, u.disabled_at, u.locked_until,
	u.failed_sign_ins, u.last_sign_in_at, u.mfa_secret, u.mfa_enabled_at, u.mfa_last_step`

// ScanSessionUser reads a row of SessionUserColumns: a session and its user.
func ScanSessionUser(row Scanner) (paygate.Session, paygate.User, error) {
	var (
		se paygate.Session
		u  paygate.User
	)
	dests := []any{&se.ID, &se.TokenHash, &se.UserID, &se.MerchantID, At(&se.CreatedAt), At(&se.LastSeenAt),
		At(&se.ExpiresAt), AtOptional(&se.RevokedAt), &se.RemoteAddr}
	if err := row.Scan(append(dests, userDests(&u)...)...); err != nil {
		return paygate.Session{}, paygate.User{}, err
	}
	return se, u, nil
}

// AuditColumns are the columns of an audit_log row that ScanAuditEntry
// reads, in its order: every column. mode is empty for an action of no
// mode, user_id empty for a failed sign-in of no known user.
const AuditColumns = `id, merchant_id, mode, user_id, email, action, target, detail, remote_addr, created_at`

// ScanAuditEntry reads a row of AuditColumns.
func ScanAuditEntry(row Scanner) (paygate.AuditEntry, error) {
	var a paygate.AuditEntry
	err := row.Scan(&a.ID, &a.MerchantID, (*string)(&a.Mode), &a.UserID, &a.Email, &a.Action, &a.Target, &a.Detail,
		&a.RemoteAddr, At(&a.CreatedAt))
	if err != nil {
		return paygate.AuditEntry{}, err
	}
	return a, nil
}

// ScanPaymentStat reads a row of the payment overview (each engine's
// paymentStatsQuery): the period's start as a stored time, the currency,
// then Count, Succeeded, Failed, Declined, Pending and Volume.
func ScanPaymentStat(row Scanner) (paygate.PaymentStat, error) {
	var st paygate.PaymentStat
	err := row.Scan(At(&st.Start), &st.Currency, &st.Count, &st.Succeeded, &st.Failed, &st.Declined, &st.Pending,
		&st.Volume, &st.Refunded)
	if err != nil {
		return paygate.PaymentStat{}, err
	}
	return st, nil
}

// ScanProviderStat reads a row of the engines' provider statistics: the
// period's start, the provider, the currency, the card brand, attempts and
// approved.
func ScanProviderStat(row Scanner) (paygate.ProviderStat, error) {
	var st paygate.ProviderStat
	if err := row.Scan(At(&st.Start), &st.ProviderID, &st.Currency, &st.Brand, &st.Attempts, &st.Approved); err != nil {
		return paygate.ProviderStat{}, err
	}
	return st, nil
}

// InvitationColumns are the columns of an invitations row that
// ScanInvitation reads, in its order: every column.
const InvitationColumns = `id, merchant_id, email, role, token_hash, created_by, created_at, expires_at, accepted_at,
	revoked_at`

// ScanInvitation reads a row of InvitationColumns.
func ScanInvitation(row Scanner) (paygate.Invitation, error) {
	var i paygate.Invitation
	err := row.Scan(&i.ID, &i.MerchantID, &i.Email, (*string)(&i.Role), &i.TokenHash, &i.CreatedBy,
		At(&i.CreatedAt), At(&i.ExpiresAt), AtOptional(&i.AcceptedAt), AtOptional(&i.RevokedAt))
	if err != nil {
		return paygate.Invitation{}, err
	}
	return i, nil
}
