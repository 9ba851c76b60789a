package paygate

import (
	"context"
	"time"
)

// UserStore is the part of DashboardStore for the team of a merchant
// (issue 22): users by query, and invitations. Users are written by unit
// operations (Store.Commit), documented beside their types below.
type UserStore interface {
	// Users lists the users matching q, oldest first (CreatedAt then ID).
	// Every set field of q filters; a q with neither MerchantID, ID nor
	// Email set lists nothing (an empty list, no error).
	Users(ctx context.Context, q UserQuery) ([]User, error)
	// Invitations lists the invitations matching q, newest first. A q with
	// neither MerchantID nor TokenHash set lists nothing.
	Invitations(ctx context.Context, q InvitationQuery) ([]Invitation, error)
}

// UserQuery selects users. Zero fields do not filter.
type UserQuery struct {
	MerchantID string
	ID         string
	Email      string // lower case
}

// InvitationQuery selects invitations. Zero fields do not filter.
type InvitationQuery struct {
	MerchantID string
	TokenHash  []byte
}

// Role is what a dashboard user may do (decisions.md section 17).
type Role string

// The roles, from the most to the least powerful.
const (
	// RoleOwner may do everything, including managing the team.
	RoleOwner Role = "owner"
	// RoleAdmin may do everything but manage the team.
	RoleAdmin Role = "admin"
	// RoleDeveloper manages keys and webhooks, acts on test-mode payments
	// and reads everything.
	RoleDeveloper Role = "developer"
	// RoleAnalyst reads and exports.
	RoleAnalyst Role = "analyst"
)

// Roles lists every role, from the most to the least powerful.
var Roles = []Role{RoleOwner, RoleAdmin, RoleDeveloper, RoleAnalyst}

// ParseRole returns the role named s, and false when s names none.
func ParseRole(s string) (Role, bool) {
	for _, r := range Roles {
		if string(r) == s {
			return r, true
		}
	}
	return "", false
}

// Account lockout (decisions.md section 17): MaxFailedSignIns failed
// sign-ins in a row lock an account for LockoutDuration.
const (
	MaxFailedSignIns = 10
	LockoutDuration  = 30 * time.Minute
)

// LockedAt reports whether the user's account is locked at t.
func (u User) LockedAt(t time.Time) bool {
	return u.LockedUntil != nil && t.Before(*u.LockedUntil)
}

// Disabled reports whether the user was removed from the team.
func (u User) Disabled() bool { return u.DisabledAt != nil }

// MFAEnabled reports whether the user signs in with a TOTP code.
func (u User) MFAEnabled() bool { return u.MFAEnabledAt != nil && len(u.MFASecret) > 0 }

// Audit actions of the team and the CLI.
const (
	AuditUserCreated       = "user.created"
	AuditUserRoleChanged   = "user.role_changed"
	AuditUserPasswordReset = "user.password_reset"
	AuditUserDisabled      = "user.disabled"
	AuditUserUnlocked      = "user.unlocked"
	AuditUserLocked        = "user.locked"
	AuditUserInvited       = "user.invited"
	AuditUserRemoved       = "user.removed"
	AuditUserMFAEnabled    = "user.mfa_enabled"
	AuditUserMFADisabled   = "user.mfa_disabled"
	AuditInvitationRevoked = "user.invitation_revoked"
)

// The team's unit operations (see Op). Each names its user by merchant and
// id and fails the unit with NOT_FOUND when the user does not exist for the
// merchant.

// UserRoleChange gives a user a new role. It fails the unit with
// ErrStateConflict when the user is the last enabled owner of the merchant
// and Role is not owner (a merchant always keeps an owner).
type UserRoleChange struct {
	MerchantID string
	UserID     string
	Role       Role
	At         time.Time
}

// UserDisable removes a user from the team: DisabledAt becomes At (a
// disabled user keeps its first time) and every session of the user is
// revoked at At. It fails the unit with ErrStateConflict when the user is
// the last enabled owner of the merchant.
type UserDisable struct {
	MerchantID string
	UserID     string
	At         time.Time
}

// UserUnlock lifts a lockout: LockedUntil becomes nil and the count of
// failed sign-ins 0.
type UserUnlock struct {
	MerchantID string
	UserID     string
	At         time.Time
}

// SignInFailure counts a failed sign-in of the user, in one conditional
// write: the count grows by one, and when it reaches LockAfter the account
// is locked until LockUntil and the count starts again from 0. Two
// failures at once are both counted.
type SignInFailure struct {
	MerchantID string
	UserID     string
	LockAfter  int
	LockUntil  time.Time
}

// SignInSuccess records a completed sign-in: the count of failed sign-ins
// becomes 0 and LastSignInAt becomes At. It fails the unit with
// ErrStateConflict when the user is locked at At (LockedUntil after At),
// so that a sign-in that raced a lockout starts no session.
type SignInSuccess struct {
	MerchantID string
	UserID     string
	At         time.Time
}

// MFAChange enables TOTP for a user (Secret set: the secret as the vault
// sealed it, never plain) or disables it (Secret nil). Enabling sets
// MFAEnabledAt to At, resets MFALastStep to 0 and replaces the user's
// recovery codes by RecoveryCodeHashes (a keyed hash of each code); disabling
// clears the secret and deletes the recovery codes.
type MFAChange struct {
	MerchantID         string
	UserID             string
	Secret             []byte
	RecoveryCodeHashes [][]byte
	At                 time.Time
}

// TOTPStepUse records that a TOTP code of Step (Unix time / 30 s) was
// accepted. It fails the unit with ErrStateConflict when the user has
// used a code of this step or a later one, so a code works once, and when
// the user is locked at At (a code checked in parallel with the failures
// that locked the account is not accepted).
type TOTPStepUse struct {
	MerchantID string
	UserID     string
	Step       int64
	At         time.Time
}

// MFASecretRewrap replaces a user's sealed TOTP secret From by To, the same
// secret sealed under another vault key (paygate vault rewrap); nothing
// else of the user's MFA changes. It fails the unit with ErrStateConflict
// when the stored secret is no longer From (the user enrolled again or MFA
// was turned off since it was read), and with NOT_FOUND when the user does
// not exist for the merchant.
type MFASecretRewrap struct {
	MerchantID string
	UserID     string
	From, To   []byte
}

// RecoveryCodeUse consumes one recovery code of the user (by its SHA-256).
// It fails the unit with ErrStateConflict when the code was used already
// (also when two requests race for it: one wins) or when the user is
// locked at At, and with NOT_FOUND when the user has no such code.
type RecoveryCodeUse struct {
	MerchantID string
	UserID     string
	CodeHash   []byte
	At         time.Time
}

// Invitation is a one-time link to join a merchant's team. Only the
// SHA-256 of the link's token is stored.
type Invitation struct {
	ID         string
	MerchantID string
	Email      string // lower case
	Role       Role
	TokenHash  []byte
	// CreatedBy is the id of the user who invited.
	CreatedBy  string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	AcceptedAt *time.Time
	RevokedAt  *time.Time
}

// InvitationTTL is how long an invitation link works.
const InvitationTTL = 72 * time.Hour

// UsableAt reports whether the invitation may still be accepted at t.
func (i Invitation) UsableAt(t time.Time) bool {
	return i.AcceptedAt == nil && i.RevokedAt == nil && t.Before(i.ExpiresAt)
}

// InvitationAcceptance accepts the invitation with TokenHash and inserts
// User, in one write: the invitation must be usable at At and be of
// User's merchant, or the unit fails with ErrStateConflict (also when two
// requests race: one wins); NOT_FOUND when there is no such invitation.
// User is inserted as the User operation does.
type InvitationAcceptance struct {
	TokenHash []byte
	User      User
	At        time.Time
}

// InvitationRevocation revokes an invitation that is not accepted (a
// revoked one keeps its first time). NOT_FOUND when the merchant has no
// such invitation.
type InvitationRevocation struct {
	MerchantID string
	ID         string
	At         time.Time
}

// An Invitation is inserted as it is; ErrConflict on a duplicate id or
// token hash, NOT_FOUND when the merchant does not exist.
func (Invitation) unitOp()           {}
func (UserRoleChange) unitOp()       {}
func (UserDisable) unitOp()          {}
func (UserUnlock) unitOp()           {}
func (SignInFailure) unitOp()        {}
func (SignInSuccess) unitOp()        {}
func (MFAChange) unitOp()            {}
func (TOTPStepUse) unitOp()          {}
func (MFASecretRewrap) unitOp()      {}
func (RecoveryCodeUse) unitOp()      {}
func (InvitationAcceptance) unitOp() {}
func (InvitationRevocation) unitOp() {}
