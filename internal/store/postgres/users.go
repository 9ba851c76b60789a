package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// The team of a merchant (issue 22): roles, removal, lockout, TOTP and
// recovery codes of users, and invitations. Every operation is one
// statement that fails the unit through unit_refused when it does not
// apply (PG409: the row exists in another state, PG404: no row). The
// conditional writes re-check their WHERE clause on the newest row version
// (READ COMMITTED), so of two racing consumers of a recovery code or an
// invitation one wins; the guard of a merchant's last owner locks the
// merchant row first, so two demotions of two owners cannot both pass.

var _ paygate.UserStore = (*Store)(nil)

// insertUserInUnit inserts a dashboard user, failing the unit (PG404)
// when the merchant does not exist. A duplicate email (or id) is a unique
// violation: paygate.ErrConflict.
const insertUserInUnit = `
	WITH ins AS (
		INSERT INTO users (` + userColumns + `)
		SELECT @id, @merchant_id, @email, @password_hash, @created_at, @updated_at, coalesce(nullif(@role, ''), 'owner'), @disabled_at,
			@locked_until, @failed_sign_ins, @last_sign_in_at, @mfa_secret, @mfa_enabled_at, @mfa_last_step
		WHERE EXISTS (SELECT 1 FROM merchants WHERE id = @merchant_id)
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM ins) THEN true ELSE unit_refused(false) END`

func userArgs(u paygate.User) namedArgs {
	return namedArgs{"id": u.ID, "merchant_id": u.MerchantID, "email": u.Email,
		"password_hash": u.PasswordHash, "created_at": u.CreatedAt, "updated_at": u.UpdatedAt,
		"role": string(u.Role), "disabled_at": u.DisabledAt, "locked_until": u.LockedUntil,
		"failed_sign_ins": u.FailedSignIns, "last_sign_in_at": u.LastSignInAt, "mfa_secret": nilIfEmpty(u.MFASecret),
		"mfa_enabled_at": u.MFAEnabledAt, "mfa_last_step": u.MFALastStep}
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// Users lists the users matching q, oldest first.
func (s *Store) Users(ctx context.Context, q paygate.UserQuery) ([]paygate.User, error) {
	out := []paygate.User{}
	if q.MerchantID == "" && q.ID == "" && q.Email == "" {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+userColumns+` FROM users
		WHERE ($1 = '' OR merchant_id = $1) AND ($2 = '' OR id = $2) AND ($3 = '' OR email = $3)
		ORDER BY created_at, id`, q.MerchantID, q.ID, q.Email)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, u)
	}
	return out, translate(rows.Err())
}

// Invitations lists the invitations matching q, newest first.
func (s *Store) Invitations(ctx context.Context, q paygate.InvitationQuery) ([]paygate.Invitation, error) {
	out := []paygate.Invitation{}
	if q.MerchantID == "" && len(q.TokenHash) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+codec.InvitationColumns+` FROM invitations
		WHERE ($1 = '' OR merchant_id = $1) AND ($2::bytea IS NULL OR token_hash = $2)
		ORDER BY created_at DESC, id DESC`, q.MerchantID, nilIfEmpty(q.TokenHash))
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		i, err := codec.ScanInvitation(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, i)
	}
	return out, translate(rows.Err())
}

// refusedUnlessUser ends a statement whose CTE "w" is a conditional write
// of users row @user_id of @merchant_id.
const refusedUnlessUser = `
	SELECT CASE WHEN EXISTS (SELECT 1 FROM w) THEN true
		ELSE unit_refused(EXISTS (SELECT 1 FROM users WHERE id = @user_id AND merchant_id = @merchant_id)) END`

// keepsOwner is the condition, on a users row being changed to lose its
// owner role or be disabled, that the merchant keeps an enabled owner.
const keepsOwner = `(role <> 'owner' OR disabled_at IS NOT NULL OR EXISTS (
	SELECT 1 FROM users o WHERE o.merchant_id = users.merchant_id AND o.id <> users.id
		AND o.role = 'owner' AND o.disabled_at IS NULL))`

// lockMerchant serializes the changes of a merchant's owners: it runs, in
// the unit's transaction, before the statement that checks keepsOwner, so
// that statement's snapshot sees every earlier change committed.
const lockMerchant = `SELECT 1 FROM merchants WHERE id = $1 FOR UPDATE`

const (
	changeRoleInUnit = `WITH w AS (
		UPDATE users SET role = @role, updated_at = @at
		WHERE id = @user_id AND merchant_id = @merchant_id AND (@role = 'owner' OR ` + keepsOwner + `)
		RETURNING 1
	)` + refusedUnlessUser
	disableUserInUnit = `WITH w AS (
		UPDATE users SET disabled_at = coalesce(disabled_at, @at), updated_at = @at
		WHERE id = @user_id AND merchant_id = @merchant_id AND ` + keepsOwner + `
		RETURNING id
	), revoked AS (
		UPDATE sessions SET revoked_at = @at WHERE user_id IN (SELECT id FROM w) AND revoked_at IS NULL
	)` + refusedUnlessUser
	unlockUserInUnit = `WITH w AS (
		UPDATE users SET locked_until = NULL, failed_sign_ins = 0, updated_at = @at
		WHERE id = @user_id AND merchant_id = @merchant_id
		RETURNING 1
	)` + refusedUnlessUser
	signInFailureInUnit = `WITH w AS (
		UPDATE users SET
			locked_until = CASE WHEN failed_sign_ins + 1 >= @lock_after THEN @lock_until ELSE locked_until END,
			failed_sign_ins = CASE WHEN failed_sign_ins + 1 >= @lock_after THEN 0 ELSE failed_sign_ins + 1 END
		WHERE id = @user_id AND merchant_id = @merchant_id
		RETURNING 1
	)` + refusedUnlessUser
	signInSuccessInUnit = `WITH w AS (
		UPDATE users SET failed_sign_ins = 0, last_sign_in_at = @at
		WHERE id = @user_id AND merchant_id = @merchant_id AND (locked_until IS NULL OR locked_until <= @at)
		RETURNING 1
	)` + refusedUnlessUser
	mfaChangeInUnit = `WITH w AS (
		UPDATE users SET mfa_secret = @secret, mfa_enabled_at = @enabled_at, mfa_last_step = 0, updated_at = @at
		WHERE id = @user_id AND merchant_id = @merchant_id
		RETURNING id
	), gone AS (
		DELETE FROM recovery_codes WHERE user_id IN (SELECT id FROM w)
	), added AS (
		INSERT INTO recovery_codes (user_id, code_hash, created_at)
		SELECT w.id, h, @at FROM w, unnest(@hashes::bytea[]) AS h
	)` + refusedUnlessUser
	totpStepInUnit = `WITH w AS (
		UPDATE users SET mfa_last_step = @step
		WHERE id = @user_id AND merchant_id = @merchant_id AND mfa_last_step < @step
			AND (locked_until IS NULL OR locked_until <= @at)
		RETURNING 1
	)` + refusedUnlessUser
	mfaSecretRewrapInUnit = `WITH w AS (
		UPDATE users SET mfa_secret = @to
		WHERE id = @user_id AND merchant_id = @merchant_id AND mfa_secret = @from
		RETURNING 1
	)` + refusedUnlessUser
	recoveryCodeInUnit = `WITH w AS (
		UPDATE recovery_codes SET used_at = @at
		WHERE user_id = @user_id AND code_hash = @code_hash AND used_at IS NULL
			AND EXISTS (SELECT 1 FROM users WHERE id = @user_id AND merchant_id = @merchant_id
				AND (locked_until IS NULL OR locked_until <= @at))
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM w) THEN true
		ELSE unit_refused(EXISTS (SELECT 1 FROM recovery_codes r JOIN users u ON u.id = r.user_id
			WHERE r.user_id = @user_id AND u.merchant_id = @merchant_id AND r.code_hash = @code_hash)) END`
	insertInvitationInUnit = `WITH ins AS (
		INSERT INTO invitations (` + codec.InvitationColumns + `)
		SELECT @id, @merchant_id, @email, @role, @token_hash, @created_by, @created_at, @expires_at, @accepted_at, @revoked_at
		WHERE EXISTS (SELECT 1 FROM merchants WHERE id = @merchant_id)
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM ins) THEN true ELSE unit_refused(false) END`
	acceptInvitationInUnit = `WITH w AS (
		UPDATE invitations SET accepted_at = @at
		WHERE token_hash = @token_hash AND merchant_id = @merchant_id
			AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > @at
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM w) THEN true
		ELSE unit_refused(EXISTS (SELECT 1 FROM invitations WHERE token_hash = @token_hash)) END`
	revokeInvitationInUnit = `WITH w AS (
		UPDATE invitations SET revoked_at = coalesce(revoked_at, @at)
		WHERE id = @id AND merchant_id = @merchant_id AND accepted_at IS NULL
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM w) THEN true
		ELSE unit_refused(EXISTS (SELECT 1 FROM invitations WHERE id = @id AND merchant_id = @merchant_id)) END`
)

// queueTeamOp queues the statements of one of the team's operations, each
// reading its refusal through refuses (Commit's). It is false for an
// operation of another kind.
func queueTeamOp(b *pgx.Batch, op paygate.Op, refuses func(func(*pgconn.PgError) error) func(pgx.Row) error) bool {
	queue := func(query string, args namedArgs, kind string) bool {
		b.Queue(query, args).QueryRow(refuses(byKind(kind)))
		return true
	}
	user := func(merchantID, userID string, at any) namedArgs {
		return namedArgs{"merchant_id": merchantID, "user_id": userID, "at": at}
	}
	switch op := op.(type) {
	case paygate.UserRoleChange:
		b.Queue(lockMerchant, op.MerchantID)
		a := user(op.MerchantID, op.UserID, op.At)
		a["role"] = string(op.Role)
		return queue(changeRoleInUnit, a, "user")
	case paygate.UserDisable:
		b.Queue(lockMerchant, op.MerchantID)
		return queue(disableUserInUnit, user(op.MerchantID, op.UserID, op.At), "user")
	case paygate.UserUnlock:
		return queue(unlockUserInUnit, user(op.MerchantID, op.UserID, op.At), "user")
	case paygate.SignInFailure:
		a := user(op.MerchantID, op.UserID, nil)
		delete(a, "at")
		a["lock_after"] = op.LockAfter
		a["lock_until"] = op.LockUntil
		return queue(signInFailureInUnit, a, "user")
	case paygate.SignInSuccess:
		return queue(signInSuccessInUnit, user(op.MerchantID, op.UserID, op.At), "user")
	case paygate.MFAChange:
		a := user(op.MerchantID, op.UserID, op.At)
		a["secret"] = nilIfEmpty(op.Secret)
		a["enabled_at"] = nil
		hashes := op.RecoveryCodeHashes
		if op.Secret == nil {
			hashes = nil
		} else {
			a["enabled_at"] = op.At
		}
		if hashes == nil {
			hashes = [][]byte{}
		}
		a["hashes"] = hashes
		return queue(mfaChangeInUnit, a, "user")
	case paygate.TOTPStepUse:
		a := user(op.MerchantID, op.UserID, op.At)
		a["step"] = op.Step
		return queue(totpStepInUnit, a, "user")
	case paygate.MFASecretRewrap:
		a := user(op.MerchantID, op.UserID, nil)
		delete(a, "at")
		a["from"], a["to"] = op.From, op.To
		return queue(mfaSecretRewrapInUnit, a, "user")
	case paygate.RecoveryCodeUse:
		a := user(op.MerchantID, op.UserID, op.At)
		a["code_hash"] = op.CodeHash
		return queue(recoveryCodeInUnit, a, "recovery code")
	case paygate.Invitation:
		return queue(insertInvitationInUnit, namedArgs{"id": op.ID, "merchant_id": op.MerchantID, "email": op.Email,
			"role": string(op.Role), "token_hash": op.TokenHash, "created_by": op.CreatedBy,
			"created_at": op.CreatedAt, "expires_at": op.ExpiresAt, "accepted_at": op.AcceptedAt,
			"revoked_at": op.RevokedAt}, "merchant")
	case paygate.InvitationAcceptance:
		queue(acceptInvitationInUnit, namedArgs{"token_hash": op.TokenHash, "merchant_id": op.User.MerchantID, "at": op.At}, "invitation")
		return queue(insertUserInUnit, userArgs(op.User), "merchant")
	case paygate.InvitationRevocation:
		return queue(revokeInvitationInUnit, namedArgs{"id": op.ID, "merchant_id": op.MerchantID, "at": op.At}, "invitation")
	}
	return false
}
