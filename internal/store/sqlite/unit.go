package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/paygate/paygate/internal/paygate"
)

// Commit applies the unit's operations in their order in one write
// transaction, which the writer may commit together with others (group
// commit: the unit is then one savepoint of the group, rolled back alone if
// an operation fails). The OnEvents hook runs after a commit that wrote
// events.
func (s *Store) Commit(ctx context.Context, u paygate.Unit) error {
	if len(u.Ops) == 0 {
		return nil
	}
	if err := u.Validate(); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error { return applyUnit(ctx, tx, u) })
	if err == nil && u.HasEvents() && s.onEvents != nil {
		s.onEvents()
	}
	return err
}

// applyUnit runs the unit's operations in the caller's transaction and
// stops at the first that fails; the caller rolls the transaction back.
func applyUnit(ctx context.Context, tx *sql.Tx, u paygate.Unit) error {
	for i, op := range u.Ops {
		var err error
		switch op := op.(type) {
		case paygate.PaymentTransition:
			err = movePayment(ctx, tx, op)
		case paygate.Event:
			err = insertEvents(ctx, tx, []paygate.Event{op})
		case paygate.IdempotencyCompletion:
			err = completeIdempotency(ctx, tx, op)
		case paygate.SandboxCharge:
			err = insertSandboxCharge(ctx, tx, op)
		case paygate.ThreeDSChallenge:
			err = insertChallenge(ctx, tx, op)
		case paygate.NewRefund:
			err = insertRefund(ctx, tx, op)
		case paygate.RefundTransition:
			err = moveRefund(ctx, tx, op)
		// accounts and dashboard operations
		case paygate.Merchant:
			err = insertMerchant(ctx, tx, op)
		case paygate.APIKey:
			err = insertAPIKey(ctx, tx, op)
		case paygate.APIKeyRotation:
			err = rotateAPIKey(ctx, tx, op)
		case paygate.APIKeyRevocation:
			err = revokeAPIKey(ctx, tx, op)
		case paygate.User:
			err = insertUser(ctx, tx, op)
		case paygate.Session:
			err = insertSession(ctx, tx, op)
		case paygate.SessionTouch:
			err = touchSession(ctx, tx, op)
		case paygate.SessionRevocation:
			err = revokeSession(ctx, tx, op)
		case paygate.PasswordChange:
			err = changePassword(ctx, tx, op)
		case paygate.AuditEntry:
			err = insertAudit(ctx, tx, op)
		case paygate.APIKeyUsage:
			err = touchAPIKeys(ctx, tx, op)
		default:
			err = fmt.Errorf("sqlite: operation %d of the unit: %T is not an operation", i, op)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
