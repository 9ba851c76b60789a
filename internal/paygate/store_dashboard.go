package paygate

import (
	"context"
	"time"
)

// DashboardStore is the part of Store for the merchant dashboard (issue 8):
// dashboard users and their sessions, the audit log, when API keys were last
// used, and the read models of the dashboard's pages (payment list with
// filters, customer search, a payment's events, daily statistics).
//
// Methods follow the rules of Store: one transaction at most, merchant and
// mode filtered in SQL for merchant data, errors as documented on Store.
// The dashboard's writes are unit operations (Store.Commit): User, Session,
// SessionTouch, SessionRevocation, PasswordChange, AuditEntry and
// APIKeyUsage, documented beside their types.
type DashboardStore interface {
	UserStore
	// UserByEmail returns the user with the (lower-case) email, or
	// NOT_FOUND.
	UserByEmail(ctx context.Context, email string) (User, error)
	// SessionByTokenHash returns the session with that token hash and its
	// user, or NOT_FOUND. It does not judge whether the session is still
	// valid (see Session.ValidAt).
	SessionByTokenHash(ctx context.Context, tokenHash []byte) (Session, User, error)
	// AuditLog lists a merchant's audit entries (of every mode), newest
	// first, matching q's filters, older than q.Before when it is set, at
	// most q.Limit (<= 0: no limit).
	AuditLog(ctx context.Context, q AuditQuery) ([]AuditEntry, error)

	// ListPayments lists payments of (q.MerchantID, q.Mode) matching q's
	// filters, newest first (CreatedAt then ID, both descending), strictly
	// after q.After in that order when it is set, at most q.Limit (1 to 500;
	// anything else means 50). It must stay an index range scan with a
	// million payments per merchant.
	ListPayments(ctx context.Context, q PaymentQuery) ([]Payment, error)
	// SearchCustomers lists customers of (q.MerchantID, q.Mode) whose
	// external id equals q.Text or starts with it, or whose email equals
	// q.Text (case-insensitive); every customer when q.Text is "". Newest
	// first, strictly after q.After, at most q.Limit (as ListPayments).
	SearchCustomers(ctx context.Context, q CustomerQuery) ([]Customer, error)
	// PaymentStats returns, for payments of (merchant, mode) created in
	// [from, to), one row per StatPeriod and currency that has payments,
	// ordered by period then currency. It reads the payments of the range
	// by index, not the whole table.
	PaymentStats(ctx context.Context, merchantID string, mode Mode, from, to time.Time) ([]PaymentStat, error)
	// ProviderStats returns, for payments of (merchant, mode) created in
	// [from, to) that name a provider, one row per ProviderStatPeriod and
	// provider that has answered payments, ordered by period then
	// provider. It reads the payments of the range by index, as
	// PaymentStats does.
	ProviderStats(ctx context.Context, merchantID string, mode Mode, from, to time.Time) ([]ProviderStat, error)
}

// User is a dashboard login of one merchant.
type User struct {
	ID         string
	MerchantID string
	Email      string // lower case
	// PasswordHash is the argon2id hash in PHC string format
	// ($argon2id$v=19$m=...,t=...,p=...$salt$hash).
	PasswordHash string
	// Role is what the user may do; users created before roles are owners.
	Role      Role
	CreatedAt time.Time
	UpdatedAt time.Time
	// DisabledAt is when the user was removed from the team: a disabled
	// user cannot sign in.
	DisabledAt *time.Time
	// LockedUntil is the end of a lockout after MaxFailedSignIns failed
	// sign-ins; FailedSignIns counts those since the last sign-in or lock.
	LockedUntil   *time.Time
	FailedSignIns int
	LastSignInAt  *time.Time
	// MFASecret is the TOTP secret as the vault sealed it (never plain),
	// nil without MFA; MFAEnabledAt is when it was confirmed. MFALastStep
	// is the time step of the last accepted code, which is refused again.
	MFASecret    []byte
	MFAEnabledAt *time.Time
	MFALastStep  int64
}

// Session is a signed-in browser. The cookie carries a random token; only
// its SHA-256 is stored.
type Session struct {
	ID         string
	TokenHash  []byte
	UserID     string
	MerchantID string
	CreatedAt  time.Time
	LastSeenAt time.Time
	// ExpiresAt is the absolute end of the session, whatever the activity.
	ExpiresAt time.Time
	RevokedAt *time.Time
	// RemoteAddr is the client address at sign-in.
	RemoteAddr string
}

// ValidAt reports whether the session may serve a request at t: not
// revoked, not past its absolute expiry, and seen within idle.
func (s Session) ValidAt(t time.Time, idle time.Duration) bool {
	if s.RevokedAt != nil && !t.Before(*s.RevokedAt) {
		return false
	}
	if !t.Before(s.ExpiresAt) {
		return false
	}
	return t.Sub(s.LastSeenAt) < idle
}

// The dashboard's unit operations (see Op). User, Session and AuditEntry
// are inserted as they are:
//
//   - User inserts a dashboard user. Emails are unique across the
//     installation, compared in lower case (Email is stored as given,
//     lower-cased by the caller; a Role of "" is stored as RoleOwner, as
//     users created before roles are): a duplicate email (or id) fails the unit
//     with ErrConflict, and a merchant that does not exist with NOT_FOUND.
//   - Session inserts a session. It fails the unit with NOT_FOUND when its
//     user does not exist for its merchant, and with ErrConflict on a
//     duplicate id or token hash.
//   - AuditEntry inserts an audit entry; NOT_FOUND when the merchant does
//     not exist.
func (User) unitOp()       {}
func (Session) unitOp()    {}
func (AuditEntry) unitOp() {}

// SessionTouch is a unit operation: the session's LastSeenAt becomes At
// when At is later (never earlier). Callers touch a session at most about
// once a minute. It fails the unit with NOT_FOUND when the session does
// not exist.
type SessionTouch struct {
	SessionID string
	At        time.Time
}

func (SessionTouch) unitOp() {}

// SessionRevocation is a unit operation: the session is revoked at At, and
// a revoked session keeps its first revocation time (no refusal). It fails
// the unit with NOT_FOUND when the session does not exist.
type SessionRevocation struct {
	SessionID string
	At        time.Time
}

func (SessionRevocation) unitOp() {}

// PasswordChange is a unit operation: it replaces the password hash of a
// merchant's user (UpdatedAt becomes At) and revokes at At every session
// of the user that is not revoked yet, except KeepSessionID ("" revokes
// all). It fails the unit with NOT_FOUND when the user does not exist for
// the merchant.
type PasswordChange struct {
	MerchantID    string
	UserID        string
	PasswordHash  string
	KeepSessionID string
	At            time.Time
}

func (PasswordChange) unitOp() {}

// APIKeyUsage is a unit operation recording when keys were last used: for
// each key id of Used, its LastUsedAt becomes the later of the stored value
// and the given time. Unknown ids are ignored; it never fails the unit.
type APIKeyUsage struct {
	Used map[string]time.Time
}

func (APIKeyUsage) unitOp() {}

// AuditEntry is one administrative action, or a sign-in attempt.
type AuditEntry struct {
	ID         string
	MerchantID string
	// Mode is the mode the action concerned; "" for actions of no mode
	// (sign-in, password change).
	Mode Mode
	// UserID and Email name who acted; UserID is "" for a failed sign-in
	// of an unknown user (Email is then what was typed, trimmed to 254
	// characters) — such attempts are recorded only when the email names
	// a user of the merchant, so MerchantID is always known.
	UserID string
	Email  string
	// Action is one of the Audit* constants.
	Action string
	// Target names the object (a key id, a payment id, an endpoint URL).
	Target string
	// Detail is a short human-readable note (never a secret).
	Detail     string
	RemoteAddr string
	CreatedAt  time.Time
}

// Audit actions.
const (
	AuditSignIn             = "user.signed_in"
	AuditSignInFailed       = "user.sign_in_failed"
	AuditSignOut            = "user.signed_out"
	AuditPasswordChanged    = "user.password_changed"
	AuditKeyCreated         = "api_key.created"
	AuditKeyRotated         = "api_key.rotated"
	AuditKeyRevoked         = "api_key.revoked"
	AuditWebhookChanged     = "webhook.changed"
	AuditWebhookSecretShown = "webhook.secret_revealed"
	AuditWebhookRotated     = "webhook.secret_rotated"
	AuditWebhookTested      = "webhook.test_sent"
	AuditWebhookResent      = "webhook.resent"
	AuditRefundIssued       = "refund.issued"
	AuditStoredCardDeleted  = "stored_card.deleted"
	AuditPaymentCaptured    = "payment.captured"
	AuditPaymentVoided      = "payment.voided"
)

// AuditActorCLI is the Email of an audit entry made through the command
// line (decisions.md section 17: actor "cli"); its UserID is "".
const AuditActorCLI = "cli"

// Audit actions of the command line and of webhook resends in bulk.
const (
	AuditMerchantCreated = "merchant.created"
	AuditWebhookBackfill = "webhook.backfilled"
)

// AuditQuery selects audit entries. Zero fields do not filter.
type AuditQuery struct {
	MerchantID string
	// Actor selects the entries of one actor by Email (AuditActorCLI for
	// the command line's).
	Actor string
	// Action selects the entries of one action (an Audit* constant).
	Action string
	// CreatedFrom (inclusive) and CreatedBefore (exclusive) bound
	// CreatedAt.
	CreatedFrom, CreatedBefore time.Time
	Before                     *PageCursor
	Limit                      int
}

// PageCursor is a keyset position: the last row of the previous page.
type PageCursor struct {
	CreatedAt time.Time
	ID        string
}

// PaymentQuery selects payments for the dashboard. Zero fields do not
// filter.
type PaymentQuery struct {
	MerchantID string
	Mode       Mode
	Statuses   []PaymentStatus
	// CreatedFrom (inclusive) and CreatedBefore (exclusive) bound CreatedAt.
	CreatedFrom, CreatedBefore time.Time
	Currency                   string
	MerchantRef                string
	CustomerID                 string
	CustomerExternalID         string
	// PaymentID selects the one payment of that id (lower case); CardLast4
	// the payments of cards ending in those four digits; CustomerEmail the
	// payments of the customers with that email, compared case-insensitively
	// (the dashboard's search box).
	PaymentID     string
	CardLast4     string
	CustomerEmail string
	After         *PageCursor
	Limit         int
}

// CustomerQuery selects customers for the dashboard.
type CustomerQuery struct {
	MerchantID string
	Mode       Mode
	Text       string
	After      *PageCursor
	Limit      int
}

// StatPeriod is the length of the periods of PaymentStats, which start at
// multiples of it since the Unix epoch. Every UTC offset in use is a
// multiple of 15 minutes (India +5:30, Nepal +5:45, Chatham +12:45), and so
// is every daylight-saving shift, so no period straddles a midnight of any
// zone: the dashboard adds periods up into the days of the user's zone.
// Hours would put up to 45 minutes of payments into the wrong day there.
const StatPeriod = 15 * time.Minute

// PaymentStat is one StatPeriod and currency of PaymentStats. Amounts are
// minor units.
type PaymentStat struct {
	Start    time.Time // UTC
	Currency string
	// Count is every payment created in the period. Succeeded counts the
	// captured ones; Failed the failed ones, of which Declined failed with
	// CARD_DECLINED; Pending those not finished: created, pending_3ds,
	// pending_consent, and authorized but not (yet) captured. Voided
	// payments are in Count only.
	Count, Succeeded, Failed, Declined, Pending int64
	// Volume is the sum of AmountCaptured of the captured payments.
	Volume int64
	// Refunded is the sum of AmountRefunded of the same payments (counted
	// in the period the payment was created, whenever it was refunded):
	// Volume minus Refunded is the net volume.
	Refunded int64
}

// Page sizes of ListPayments and SearchCustomers.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 500
)

// PageLimit returns the page size a store uses for a requested limit: the
// limit when it is 1 to MaxPageLimit, DefaultPageLimit otherwise.
func PageLimit(limit int) int {
	if limit < 1 || limit > MaxPageLimit {
		return DefaultPageLimit
	}
	return limit
}
