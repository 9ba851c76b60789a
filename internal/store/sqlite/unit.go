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
	run := s.inTx
	if u.OnlyLedgerEntries() || u.OnlyCardTokens() {
		// A sandbox's entry of a charge not answered at once: the
		// payment's outcome commits durably after it (lazyTx). Likewise a
		// card token: the payment that uses it commits durably
		// (Unit.OnlyCardTokens).
		run = s.lazyTx
	}
	err := run(ctx, func(tx *sql.Tx) error { return applyUnit(ctx, tx, u) })
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
		case paygate.NewPayment:
			_, err = createPayment(ctx, tx, op)
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
		// webhook operations
		case paygate.DeliveryFinish:
			err = finishDelivery(ctx, tx, op)
		case paygate.WebhookSecretsReplacement:
			err = replaceSecrets(ctx, tx, op)
		case paygate.WebhookEndpointConfig:
			err = configureEndpoint(ctx, tx, op)
		case paygate.WebhookPing:
			err = insertPing(ctx, tx, op)
		case paygate.EventResend:
			err = resendEvent(ctx, tx, op)
		// Vault, 3-D Secure, routing and idempotency operations.
		case paygate.IdempotencyRelease:
			err = releaseIdempotency(ctx, tx, op)
		case paygate.ProviderDrain:
			err = drainProvider(ctx, tx, op)
		case paygate.SandboxApproval:
			err = setApproval(ctx, tx, op)
		case paygate.BreakerReplacement:
			err = replaceBreakers(ctx, tx, op)
		case paygate.RoutingScoreReplacement:
			err = replaceRoutingScores(ctx, tx, op)
		case paygate.ThreeDSConsumption:
			err = consumeChallenge(ctx, tx, op)
		case paygate.ThreeDSRelease:
			err = releaseChallenge(ctx, tx, op)
		case paygate.StoredCard:
			err = insertStoredCard(ctx, tx, op)
		case paygate.StoredCardLink:
			err = linkStoredCard(ctx, tx, op)
		case paygate.StoredCardDeletion:
			err = deleteStoredCard(ctx, tx, op)
		case paygate.PendingCardActivation:
			err = activatePendingCard(ctx, tx, op)
		case paygate.PendingCardDiscard:
			err = discardPendingCard(ctx, tx, op)
		case paygate.StoredCardRewrap:
			err = rewrapStoredCard(ctx, tx, op)
		case paygate.RecoveryClaim:
			err = claimRecovery(ctx, tx, op)
		// card token operations
		case paygate.CardToken:
			err = insertCardToken(ctx, tx, op)
		case paygate.TokenUse:
			err = useCardToken(ctx, tx, op)
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
		case paygate.GuardChange:
			err = changeGuard(ctx, tx, op)
		case paygate.OriginsChange:
			err = changeOrigins(ctx, tx, op)
		default:
			var handled bool
			if handled, err = applyTeamOp(ctx, tx, op); !handled {
				err = fmt.Errorf("sqlite: operation %d of the unit: %T is not an operation", i, op)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}
