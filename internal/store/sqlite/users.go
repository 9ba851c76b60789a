package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// The team of a merchant (issue 22): roles, removal, lockout, TOTP and
// recovery codes of users, and invitations. SQLite has one writer, so every
// conditional write below is atomic with the reads in its statement.

var _ paygate.UserStore = (*Store)(nil)

// insertUser inserts a dashboard user. A duplicate email (or id) is
// paygate.ErrConflict; an unknown merchant is NOT_FOUND (the foreign key).
func insertUser(ctx context.Context, tx *sql.Tx, u paygate.User) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO users (`+userColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, coalesce(nullif(?, ''), 'owner'), ?, ?, ?, ?, ?, ?, ?)`,
		u.ID, u.MerchantID, u.Email, u.PasswordHash, micros(u.CreatedAt), micros(u.UpdatedAt), string(u.Role),
		nullMicros(u.DisabledAt), nullMicros(u.LockedUntil), u.FailedSignIns, nullMicros(u.LastSignInAt),
		u.MFASecret, nullMicros(u.MFAEnabledAt), u.MFALastStep)
	return err
}

// Users lists the users matching q, oldest first.
func (s *Store) Users(ctx context.Context, q paygate.UserQuery) ([]paygate.User, error) {
	out := []paygate.User{}
	if q.MerchantID == "" && q.ID == "" && q.Email == "" {
		return out, nil
	}
	rows, err := s.read.QueryContext(ctx, `SELECT `+userColumns+` FROM users
		WHERE (?1 = '' OR merchant_id = ?1) AND (?2 = '' OR id = ?2) AND (?3 = '' OR email = ?3)
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
	rows, err := s.read.QueryContext(ctx, `SELECT `+codec.InvitationColumns+` FROM invitations
		WHERE (?1 = '' OR merchant_id = ?1) AND (?2 IS NULL OR token_hash = ?2)
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

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// applyTeamOp applies one of the team's operations; handled is false for
// an operation of another kind.
func applyTeamOp(ctx context.Context, tx *sql.Tx, op paygate.Op) (handled bool, err error) {
	switch op := op.(type) {
	case paygate.UserRoleChange:
		return true, changeRole(ctx, tx, op)
	case paygate.UserDisable:
		return true, disableUser(ctx, tx, op)
	case paygate.UserUnlock:
		return true, userUpdate(ctx, tx,
			`UPDATE users SET locked_until = NULL, failed_sign_ins = 0, updated_at = ? WHERE id = ? AND merchant_id = ?`,
			micros(op.At), op.UserID, op.MerchantID)
	case paygate.SignInFailure:
		return true, userUpdate(ctx, tx, `UPDATE users SET
			locked_until = CASE WHEN failed_sign_ins + 1 >= ?1 THEN ?2 ELSE locked_until END,
			failed_sign_ins = CASE WHEN failed_sign_ins + 1 >= ?1 THEN 0 ELSE failed_sign_ins + 1 END
			WHERE id = ?3 AND merchant_id = ?4`,
			op.LockAfter, micros(op.LockUntil), op.UserID, op.MerchantID)
	case paygate.SignInSuccess:
		res, err := tx.ExecContext(ctx, `UPDATE users SET failed_sign_ins = 0, last_sign_in_at = ?1
			WHERE id = ?2 AND merchant_id = ?3 AND `+notLocked, micros(op.At), op.UserID, op.MerchantID)
		return true, refusedUnless(ctx, tx, res, err, "user", `SELECT 1 FROM users WHERE id = ? AND merchant_id = ?`, op.UserID, op.MerchantID)
	case paygate.MFAChange:
		return true, changeMFA(ctx, tx, op)
	case paygate.TOTPStepUse:
		res, err := tx.ExecContext(ctx, `UPDATE users SET mfa_last_step = ?1
			WHERE id = ?2 AND merchant_id = ?3 AND mfa_last_step < ?1 AND `+notLockedAt4,
			op.Step, op.UserID, op.MerchantID, micros(op.At))
		return true, refusedUnless(ctx, tx, res, err, "user", `SELECT 1 FROM users WHERE id = ? AND merchant_id = ?`, op.UserID, op.MerchantID)
	case paygate.MFASecretRewrap:
		res, err := tx.ExecContext(ctx, `UPDATE users SET mfa_secret = ?
			WHERE id = ? AND merchant_id = ? AND mfa_secret = ?`, op.To, op.UserID, op.MerchantID, op.From)
		return true, refusedUnless(ctx, tx, res, err, "user", `SELECT 1 FROM users WHERE id = ? AND merchant_id = ?`, op.UserID, op.MerchantID)
	case paygate.RecoveryCodeUse:
		res, err := tx.ExecContext(ctx, `UPDATE recovery_codes SET used_at = ?1
			WHERE user_id = ?2 AND code_hash = ?3 AND used_at IS NULL
				AND EXISTS (SELECT 1 FROM users WHERE id = recovery_codes.user_id AND merchant_id = ?4
					AND (locked_until IS NULL OR locked_until <= ?1))`,
			micros(op.At), op.UserID, op.CodeHash, op.MerchantID)
		return true, refusedUnless(ctx, tx, res, err, "recovery code", `SELECT 1 FROM recovery_codes r
			JOIN users u ON u.id = r.user_id WHERE r.user_id = ? AND u.merchant_id = ? AND r.code_hash = ?`,
			op.UserID, op.MerchantID, op.CodeHash)
	case paygate.Invitation:
		_, err := tx.ExecContext(ctx, `INSERT INTO invitations (`+codec.InvitationColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			op.ID, op.MerchantID, op.Email, string(op.Role), op.TokenHash, op.CreatedBy, micros(op.CreatedAt),
			micros(op.ExpiresAt), nullMicros(op.AcceptedAt), nullMicros(op.RevokedAt))
		return true, err
	case paygate.InvitationAcceptance:
		res, err := tx.ExecContext(ctx, `UPDATE invitations SET accepted_at = ?1
			WHERE token_hash = ?2 AND merchant_id = ?3 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > ?1`,
			micros(op.At), op.TokenHash, op.User.MerchantID)
		if err := refusedUnless(ctx, tx, res, err, "invitation", `SELECT 1 FROM invitations WHERE token_hash = ?`, op.TokenHash); err != nil {
			return true, err
		}
		return true, insertUser(ctx, tx, op.User)
	case paygate.InvitationRevocation:
		res, err := tx.ExecContext(ctx, `UPDATE invitations SET revoked_at = coalesce(revoked_at, ?)
			WHERE id = ? AND merchant_id = ? AND accepted_at IS NULL`, micros(op.At), op.ID, op.MerchantID)
		return true, refusedUnless(ctx, tx, res, err, "invitation", `SELECT 1 FROM invitations WHERE id = ? AND merchant_id = ?`, op.ID, op.MerchantID)
	}
	return false, nil
}

// notLocked is the condition, on a users row, that the user is not locked
// at ?1 (the unit's time); notLockedAt4 the same at ?4.
const (
	notLocked    = `(locked_until IS NULL OR locked_until <= ?1)`
	notLockedAt4 = `(locked_until IS NULL OR locked_until <= ?4)`
)

// userUpdate runs an update of one merchant's user: NOT_FOUND when it
// changed no row.
func userUpdate(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	return oneRow(res, "user")
}

// refusedUnless turns a conditional write that changed no row into a
// refusal: ErrStateConflict when the row exists (exists, a query of it),
// NOT_FOUND when it does not.
func refusedUnless(ctx context.Context, tx *sql.Tx, res sql.Result, err error, what, exists string, args ...any) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil || n > 0 {
		return err
	}
	var one int
	switch err := tx.QueryRowContext(ctx, exists, args...).Scan(&one); err {
	case nil:
		return fmt.Errorf("%w: %s", paygate.ErrStateConflict, what)
	case sql.ErrNoRows:
		return notFound(what)
	default:
		return err
	}
}

// keepsOwner is the condition, on a users row being changed to lose its
// owner role or be disabled, that the merchant keeps an enabled owner.
const keepsOwner = `(role <> 'owner' OR disabled_at IS NOT NULL OR EXISTS (
	SELECT 1 FROM users o WHERE o.merchant_id = users.merchant_id AND o.id <> users.id
		AND o.role = 'owner' AND o.disabled_at IS NULL))`

// changeRole gives a user a role, refusing to demote the merchant's last
// enabled owner.
func changeRole(ctx context.Context, tx *sql.Tx, c paygate.UserRoleChange) error {
	res, err := tx.ExecContext(ctx, `UPDATE users SET role = ?1, updated_at = ?2
		WHERE id = ?3 AND merchant_id = ?4 AND (?1 = 'owner' OR `+keepsOwner+`)`,
		string(c.Role), micros(c.At), c.UserID, c.MerchantID)
	return refusedUnless(ctx, tx, res, err, "the merchant's last owner",
		`SELECT 1 FROM users WHERE id = ? AND merchant_id = ?`, c.UserID, c.MerchantID)
}

// disableUser disables a user and revokes its sessions, refusing to
// disable the merchant's last enabled owner.
func disableUser(ctx context.Context, tx *sql.Tx, d paygate.UserDisable) error {
	res, err := tx.ExecContext(ctx, `UPDATE users SET disabled_at = coalesce(disabled_at, ?1), updated_at = ?1
		WHERE id = ?2 AND merchant_id = ?3 AND `+keepsOwner, micros(d.At), d.UserID, d.MerchantID)
	err = refusedUnless(ctx, tx, res, err, "the merchant's last owner",
		`SELECT 1 FROM users WHERE id = ? AND merchant_id = ?`, d.UserID, d.MerchantID)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL`,
		micros(d.At), d.UserID)
	return err
}

// changeMFA enables TOTP (with new recovery codes) or disables it.
func changeMFA(ctx context.Context, tx *sql.Tx, c paygate.MFAChange) error {
	var enabled sql.NullInt64
	if c.Secret != nil {
		enabled = sql.NullInt64{Int64: micros(c.At), Valid: true}
	}
	res, err := tx.ExecContext(ctx, `UPDATE users SET mfa_secret = ?, mfa_enabled_at = ?, mfa_last_step = 0, updated_at = ?
		WHERE id = ? AND merchant_id = ?`, nilIfEmpty(c.Secret), enabled, micros(c.At), c.UserID, c.MerchantID)
	if err != nil {
		return err
	}
	if err := oneRow(res, "user"); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM recovery_codes WHERE user_id = ?`, c.UserID); err != nil {
		return err
	}
	if c.Secret == nil {
		return nil
	}
	for _, h := range c.RecoveryCodeHashes {
		_, err := tx.ExecContext(ctx, `INSERT INTO recovery_codes (user_id, code_hash, created_at) VALUES (?, ?, ?)`,
			c.UserID, h, micros(c.At))
		if err != nil {
			return err
		}
	}
	return nil
}
