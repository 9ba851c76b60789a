package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// A unit in one round trip. Commit queues one statement per operation (or
// per run of operations it can join, below) in a pgx.Batch and sends it
// with SendBatch: pgx writes every statement's Bind/Execute and then a
// single Sync, and PostgreSQL runs everything before a Sync as one implicit
// transaction, committed at the Sync. The unit is one round trip (after a
// connection has prepared its statements once) and one synchronous commit.
//
// Atomicity needs every refusal to be an error: when a statement fails,
// PostgreSQL rolls the implicit transaction back, with the statements
// before it, and skips those after it up to the Sync. A conditional write
// that does not apply is not an error by itself (an UPDATE of no row), so
// the statement of a transition ends in unit_refused (migration 00011),
// which raises PG409 when the payment (or refund) exists in another state
// and PG404 when it does not; an inserted refund refused by its payment
// raises PG400 through unit_invalid (migration 00012), naming the field. Under READ COMMITTED the UPDATE re-checks its WHERE
// clause on the newest row version, so a lost race is a refusal too. The
// webhook operations refuse through unit_refused too, or through
// unit_refused_detail (migration 00013) when their caller is told more
// (which row is missing, since when an endpoint is disabled); each names
// its refusal itself (refusal, below), with the error the caller has
// always been given.
//
// Joining: a transition followed by events and then an idempotency answer
// is one statement (the transition's, with the events and the answer in
// its CTEs, all conditioned on the move), and a run of consecutive events
// is one INSERT. A NewPayment's insert carries the events after it, and
// the answer of its reserved key after them is written by the reservation
// (the record inserted complete). Either way what is written is what the
// operations in their order write.

// sqlStateConflict and sqlStateNotFound are what unit_refused raises.
const (
	sqlStateConflict = "PG409"
	sqlStateNotFound = "PG404"
	// sqlStateInvalid is what unit_invalid (migration 00012) raises, with
	// the field at fault as the error's column.
	sqlStateInvalid = "PG400"
)

// transitionInUnit is transitionPayment failing the statement, and so the
// unit, when the payment did not move.
const transitionInUnit = movedPayment + `
	SELECT CASE WHEN EXISTS (SELECT 1 FROM moved) THEN true ELSE unit_refused(` + paymentExists + `) END`

// insertEventsInUnit inserts the events in their order.
const insertEventsInUnit = insertEvents + ` ORDER BY e.ord`

// Commit applies the unit's operations in their order, in one round trip
// and one transaction (see above). The OnEvents hook runs after a commit
// that wrote events.
func (s *Store) Commit(ctx context.Context, u paygate.Unit) error {
	if len(u.Ops) == 0 {
		return nil
	}
	if err := u.Validate(); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	// A NewPayment's key record read as missing after its reservation
	// failed was released or purged between the two statements: the unit
	// wrote nothing, and is sent again, a few times (as
	// reserveAndCreatePayment).
	for range 5 {
		if err := s.commit(ctx, u); !errors.Is(err, errRecordVanished) {
			return err
		}
	}
	return paygate.ErrStateConflict
}

// errRecordVanished is the refusal of a NewPayment whose reservation found
// a live record that was gone when it was read (newPaymentRefused).
var errRecordVanished = errors.New("postgres: the idempotency record vanished between the reservation and its read")

// commit is one attempt of Commit.
func (s *Store) commit(ctx context.Context, u paygate.Unit) error {
	b := &pgx.Batch{}
	guardChanged := false
	if u.OnlyLedgerEntries() || u.OnlyCardTokens() {
		// A sandbox's entry of a charge not answered at once: the
		// payment's outcome commits synchronously after it (skipFlushWait).
		// Likewise a card token: the payment that uses it commits durably
		// (Unit.OnlyCardTokens).
		b.Queue(skipFlushWait)
	}
	// refused, set by the operation whose statement refused the unit,
	// names the refusal from the error (nil: not one of its refusals).
	var refused func(*pgconn.PgError) error
	refuses := func(name func(*pgconn.PgError) error) func(pgx.Row) error {
		return func(row pgx.Row) error {
			var ok bool
			err := row.Scan(&ok)
			if err != nil {
				refused = name
			}
			return err
		}
	}
	for i := 0; i < len(u.Ops); {
		switch op := u.Ops[i].(type) {
		case paygate.NewPayment:
			events, next := eventsFrom(u.Ops, i+1)
			var res *reservation
			if r := op.Reservation; r != nil {
				// The key's answer, when it follows, is stored by the
				// reservation itself: the record is written once.
				var done *paygate.IdempotencyCompletion
				if c, ok := opAt[paygate.IdempotencyCompletion](u.Ops, next); ok &&
					c.MerchantID == r.MerchantID && c.Mode == r.Mode && c.Key == r.Key {
					done, next = &c, next+1
				}
				res = &reservation{}
				queueReservation(b, *r, op.Payment.ID, done, res)
			}
			sql := newPaymentInUnit
			if res != nil {
				sql = newReservedPaymentInUnit
			}
			_, args, err := createPaymentArgs(op)
			if err != nil {
				return err
			}
			addEventArgs(args, events)
			b.Queue(sql, args).QueryRow(refuses(newPaymentRefused(op, res)))
			i = next
		case paygate.PaymentTransition:
			events, next := eventsFrom(u.Ops, i+1)
			var done *paygate.IdempotencyCompletion
			if next < len(u.Ops) {
				if c, ok := u.Ops[next].(paygate.IdempotencyCompletion); ok {
					done, next = &c, next+1
				}
			}
			b.Queue(transitionInUnit, transitionArgs(op, events, done)).QueryRow(refuses(byKind("payment")))
			i = next
		case paygate.Event:
			events, next := eventsFrom(u.Ops, i)
			args := namedArgs{}
			addEventArgs(args, events)
			b.Queue(insertEventsInUnit, args)
			i = next
		case paygate.IdempotencyCompletion:
			args := namedArgs{}
			addCompletionArgs(args, &op)
			b.Queue(completeIdempotency, args)
			i++
		case paygate.SandboxCharge:
			b.Queue(insertSandboxCharge, sandboxChargeArgs(op))
			i++
		case paygate.ThreeDSChallenge:
			b.Queue(insertChallenge, op.TokenHash, op.PaymentID, op.MerchantID, op.Mode,
				op.CreatedAt, op.ExpiresAt, op.ClaimedUntil, op.ConsumedAt)
			i++
		case paygate.NewRefund:
			b.Queue(insertRefundInUnit, newRefundArgs(op)).QueryRow(refuses(byKind("payment")))
			i++
		case paygate.RefundTransition:
			b.Queue(transitionRefundInUnit, refundTransitionArgs(op)).QueryRow(refuses(byKind("refund")))
			i++
		// webhook operations
		case paygate.DeliveryFinish:
			args, err := finishArgs(op)
			if err != nil {
				return err
			}
			b.Queue(finishDelivery, args).QueryRow(refuses(finishRefused(op)))
			i++
		case paygate.WebhookSecretsReplacement:
			b.Queue(replaceSecrets, replaceSecretsArgs(op)).QueryRow(refuses(replaceRefused(op)))
			i++
		case paygate.WebhookEndpointConfig:
			args, err := configureArgs(op)
			if err != nil {
				return err
			}
			b.Queue(configureEndpoint, args).QueryRow(refuses(configureRefused(op)))
			i++
		case paygate.WebhookPing:
			b.Queue(insertPing, pingArgs(op)).QueryRow(refuses(deliveryRefused))
			i++
		case paygate.EventResend:
			b.Queue(resendEvent, resendArgs(op)).QueryRow(refuses(deliveryRefused))
			i++
		// Vault, 3-D Secure, routing and idempotency operations.
		case paygate.IdempotencyRelease:
			b.Queue(releaseIdempotency, op.MerchantID, op.Mode, op.Key)
			i++
		case paygate.ProviderDrain:
			b.Queue(drainProvider, op.ProviderID, op.Drained, op.At)
			i++
		case paygate.SandboxApproval:
			b.Queue(setApproval, op.ProviderID, op.Rate, op.At)
			i++
		case paygate.BreakerReplacement:
			queueBreakerReplacement(b, op)
			i++
		case paygate.RoutingScoreReplacement:
			queueRoutingScoreReplacement(b, op)
			i++
		case paygate.ThreeDSConsumption:
			b.Queue(consumeChallengeInUnit, consumeChallengeArgs(op)).QueryRow(refuses(byKind("challenge")))
			i++
		case paygate.ThreeDSRelease:
			b.Queue(releaseChallenge, op.TokenHash)
			i++
		case paygate.StoredCard:
			b.Queue(insertStoredCardInUnit, storedCardArgs(op)).QueryRow(refuses(byKind("customer")))
			i++
		case paygate.StoredCardLink:
			b.Queue(linkStoredCardInUnit, linkArgs(op)).QueryRow(refuses(linkRefused(op)))
			i++
		case paygate.StoredCardDeletion:
			b.Queue(deleteStoredCardInUnit, deletionArgs(op)).QueryRow(refuses(byKind("stored card")))
			i++
		case paygate.PendingCardActivation:
			b.Queue(activatePendingCardInUnit, pendingCardArgs(op.MerchantID, op.Mode, op.PaymentID, op.At)).
				QueryRow(refuses(byKind("pending stored card")))
			i++
		case paygate.PendingCardDiscard:
			b.Queue(discardPendingCard, pendingCardArgs(op.MerchantID, op.Mode, op.PaymentID, op.At))
			i++
		case paygate.StoredCardRewrap:
			b.Queue(rewrapStoredCardInUnit, rewrapArgs(op)).QueryRow(refuses(byKind("stored card")))
			i++
		case paygate.RecoveryClaim:
			b.Queue(claimRecoveryInUnit, recoveryClaimArgs(op)).QueryRow(refuses(byKind("payment")))
			i++
		// card token operations
		case paygate.CardToken:
			b.Queue(insertCardToken, cardTokenArgs(op)).QueryRow(refuses(tokenRefused))
			i++
		case paygate.TokenUse:
			b.Queue(useCardTokenInUnit, tokenUseArgs(op)).QueryRow(refuses(byKind("card token")))
			i++
		// accounts and dashboard operations
		case paygate.Merchant:
			b.Queue(insertMerchant, op.ID, op.Name, op.CreatedAt)
			i++
		case paygate.APIKey:
			b.Queue(insertAPIKeyInUnit, apiKeyArgs(op)...).QueryRow(refuses(byKind("merchant")))
			i++
		case paygate.APIKeyRotation:
			b.Queue(rotateAPIKeyInUnit, rotationArgs(op)).QueryRow(refuses(rotationRefused(op.OldID)))
			i++
		case paygate.APIKeyRevocation:
			b.Queue(revokeAPIKeyInUnit, op.ID, op.At).QueryRow(refuses(byKind("API key")))
			i++
		case paygate.User:
			b.Queue(insertUserInUnit, userArgs(op)).QueryRow(refuses(byKind("merchant")))
			i++
		case paygate.Session:
			b.Queue(insertSessionInUnit, sessionArgs(op)).QueryRow(refuses(byKind("user")))
			i++
		case paygate.SessionTouch:
			b.Queue(touchSessionInUnit, op.SessionID, op.At).QueryRow(refuses(byKind("session")))
			i++
		case paygate.SessionRevocation:
			b.Queue(revokeSessionInUnit, op.SessionID, op.At).QueryRow(refuses(byKind("session")))
			i++
		case paygate.PasswordChange:
			b.Queue(changePasswordInUnit, passwordChangeArgs(op)).QueryRow(refuses(byKind("user")))
			i++
		case paygate.AuditEntry:
			b.Queue(insertAuditInUnit, auditArgs(op)...).QueryRow(refuses(byKind("merchant")))
			i++
		case paygate.GuardChange:
			b.Queue(changeGuardInUnit, codec.GuardArgs(op, op.At)...).QueryRow(refuses(byKind("merchant")))
			b.Queue(notifyGuardChange)
			guardChanged = true
			i++
		case paygate.OriginsChange:
			b.Queue(changeOriginsInUnit, codec.OriginsArgs(op, op.At)...).QueryRow(refuses(byKind("merchant")))
			i++
		case paygate.APIKeyUsage:
			if len(op.Used) > 0 {
				b.Queue(touchAPIKeys, apiKeyUsageArgs(op)...)
			}
			i++
		default:
			if !queueTeamOp(b, op, refuses) {
				return fmt.Errorf("postgres: operation %d of the unit: %T is not an operation", i, op)
			}
			i++
		}
	}
	err := s.pool.SendBatch(ctx, b).Close()
	if guardChanged {
		// This node reads the change on its next payment without waiting
		// for its own notification (whatever err says: a broken
		// connection may have committed).
		s.guard.invalidate()
	}
	if err == nil {
		if u.HasEvents() && s.onEvents != nil {
			s.onEvents()
		}
		return nil
	}
	var pgErr *pgconn.PgError
	if refused != nil && errors.As(err, &pgErr) {
		if e := refused(pgErr); e != nil {
			return e
		}
	}
	return translate(err)
}

// newPaymentInUnit and newReservedPaymentInUnit are a unit's NewPayment
// with the events that follow it: createPaymentSQL's insert, in the
// payment's own status, and the events in a CTE, failing the unit
// (unit_refused, PG409) when the payment was not inserted. Without a
// reservation the payment's key was reserved earlier and is linked to it,
// as createPayment does; with one, the reservation queued before the
// statement must name the payment (reservedForPayment), as in
// createReservedPayment. The answer of the key is the unit's next
// operation, a statement of its own: in a CTE it would not see the record
// the reservation inserted, nor may one statement update a row twice.
const (
	newPaymentEvents = `, events AS (` + insertEvents + ` WHERE EXISTS (SELECT 1 FROM payment) ORDER BY e.ord
	)`
	newPaymentInserted = `SELECT CASE WHEN EXISTS (SELECT 1 FROM payment) THEN true ELSE unit_refused(true) END`
)

var (
	newPaymentInUnit = createPaymentSQL("TRUE", `, linked AS (
		UPDATE idempotency_keys SET payment_id = @id
		WHERE merchant_id = @merchant_id AND mode = @mode AND key = @idempotency_key
			AND EXISTS (SELECT 1 FROM payment)
	)`+newPaymentEvents, newPaymentInserted)
	newReservedPaymentInUnit = createPaymentSQL(reservedForPayment, newPaymentEvents, newPaymentInserted)
)

// newPaymentRefused names the refusal of a NewPayment, whose reservation
// (res, nil without one) reported what it found: UNAUTHORIZED when the API
// key is not active, a *KeyTakenError with the live record of a taken key,
// errRecordVanished when that record was gone when read.
func newPaymentRefused(np paygate.NewPayment, res *reservation) func(*pgconn.PgError) error {
	return func(pgErr *pgconn.PgError) error {
		if pgErr.Code != sqlStateConflict {
			return nil
		}
		switch {
		case res == nil, res.reserved:
			// The statement resolves every customer (createPaymentSQL), so
			// a payment whose key is its own is always inserted.
			return fmt.Errorf("postgres: payment %s was not inserted", np.Payment.ID)
		case !res.keyActive:
			return paygate.Errorf(paygate.CodeUnauthorized, "", "The API key is not active.")
		case res.found:
			return &paygate.KeyTakenError{Record: res.rec}
		}
		return errRecordVanished
	}
}

// byKind names the refusals of a statement that ends in unit_refused or
// unit_invalid by the kind of row that refused: ErrStateConflict (PG409),
// NOT_FOUND (PG404), or INVALID_REQUEST naming the field (PG400).
func byKind(kind string) func(*pgconn.PgError) error {
	return func(pgErr *pgconn.PgError) error {
		switch pgErr.Code {
		case sqlStateConflict:
			return fmt.Errorf("%w: %s", paygate.ErrStateConflict, kind)
		case sqlStateNotFound:
			return notFound(kind)
		case sqlStateInvalid:
			return paygate.Errorf(paygate.CodeInvalidRequest, pgErr.ColumnName, "%s", pgErr.Message)
		}
		return nil
	}
}

// rotationRefused names the refusals of an APIKeyRotation of oldID: those
// of byKind, and a key that already has a successor (PG410, the successor
// in the error's detail, unit_rotation_refused).
func rotationRefused(oldID string) func(*pgconn.PgError) error {
	other := byKind("API key")
	return func(pgErr *pgconn.PgError) error {
		if pgErr.Code == sqlStateReplaced {
			return &paygate.KeyReplacedError{KeyID: oldID, SuccessorID: pgErr.Detail}
		}
		return other(pgErr)
	}
}

// opAt returns the operation at index i of ops when it is a T.
func opAt[T paygate.Op](ops []paygate.Op, i int) (T, bool) {
	var zero T
	if i >= len(ops) {
		return zero, false
	}
	op, ok := ops[i].(T)
	return op, ok
}

// eventsFrom returns the Event operations of ops from index i up to the
// first operation that is not one, and the index of that operation.
func eventsFrom(ops []paygate.Op, i int) ([]paygate.Event, int) {
	var events []paygate.Event
	for ; i < len(ops); i++ {
		e, ok := ops[i].(paygate.Event)
		if !ok {
			break
		}
		events = append(events, e)
	}
	return events, i
}
