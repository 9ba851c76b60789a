package paygate

import "fmt"

// Unit is what one atomic step of a use case writes: small operations that a
// store applies in their order, all of them or none (Store.Commit). The use
// case says what is written; how many statements, round trips and commits
// that takes is the engine's.
type Unit struct {
	Ops []Op
}

// Op is one write of a Unit. The operations are the types of this package
// that implement it, as values (a pointer is refused):
//
//   - NewPayment inserts its payment in the status it has (CreatePayment
//     always inserts created): a payment whose charge was answered before
//     anything was written, with its outcome (decisions.md section 22). It
//     resolves the customer as CreatePayment does, and with Reservation
//     reserves the idempotency key first, the record naming the payment
//     (an IdempotencyCompletion of the key later in the unit then stores
//     its answer). It fails the unit with a *KeyTakenError when the key
//     has a live record, with UNAUTHORIZED when the reservation's API key
//     is not active, and with ErrConflict on a duplicate payment id. Route
//     plays no part: a unit commits durably.
//   - PaymentTransition moves a payment from one of From to To. When the
//     payment is in none of From the whole unit fails with ErrStateConflict,
//     and with NOT_FOUND when it does not exist for its merchant and mode.
//   - Event appends the event to the outbox, with its webhook delivery when
//     the event's (merchant, mode) has an endpoint subscribed to it.
//   - IdempotencyCompletion stores the answer of an in-flight key. A
//     complete record keeps its first answer and a key without a record is
//     left alone: neither fails the unit.
//   - SandboxCharge inserts a sandbox ledger entry unless the provider has
//     one for the payment: the first entry wins and is kept, and the unit
//     does not fail.
//   - ThreeDSChallenge inserts a 3-D Secure challenge. It must follow, in
//     the unit, a PaymentTransition of its payment (ID, MerchantID, Mode)
//     to pending_3ds, or its NewPayment in pending_3ds, so that a payment
//     is never pending_3ds without its challenge and a challenge never
//     names another merchant's payment (Validate). A duplicate token hash fails the unit with ErrConflict.
//   - NewRefund inserts its refund in status created after reserving its
//     amount on the payment, in one conditional write of the payment's
//     refunded total, so that concurrent refunds never overshoot together.
//     It fails the unit with NOT_FOUND when the payment does not exist for
//     (merchant, mode); INVALID_REQUEST param transactionId when the
//     payment is not captured, param currency when the currency differs,
//     param amount when the amount is not positive (Validate) or the
//     refunds that are not failed would exceed the captured amount;
//     ErrConflict on a duplicate refund id.
//   - RefundTransition moves a refund from From to To (empty fields other
//     than To leave the stored values unchanged); moving to failed gives
//     the amount back to the payment's refundable balance. It fails the
//     unit with ErrStateConflict when the refund is not in From, and with
//     NOT_FOUND when it does not exist for its merchant and mode.
//
// Webhook operations (store_webhook.go, where each type says what it
// writes and how it refuses the unit):
//
//   - DeliveryFinish records a claimed delivery's attempt and outcome; it
//     fails the unit with ErrStateConflict when the lease is lost and with
//     NOT_FOUND when the delivery does not exist.
//   - WebhookSecretsReplacement compares and sets an endpoint's stored
//     secrets; it fails the unit with ErrStateConflict when they changed.
//   - WebhookEndpointConfig creates or replaces an endpoint; it fails the
//     unit with NOT_FOUND when the merchant does not exist and with
//     ErrStateConflict when a rotation would copy a plain secret.
//   - WebhookPing inserts a ping event and its delivery, and EventResend a
//     new delivery of an event; each fails the unit with NOT_FOUND when
//     there is no endpoint (or no such event) and with ErrStateConflict
//     when the endpoint is disabled.
//
// Vault, 3-D Secure, routing and idempotency operations:
//
//   - IdempotencyRelease deletes the in-flight record of a key (the key may
//     be used again at once). A complete record is kept and a key without a
//     record is left alone: neither fails the unit.
//   - ProviderDrain sets a provider's drained state; setting the state it
//     already has keeps its UpdatedAt. It never fails the unit.
//   - SandboxApproval sets or clears a sandbox provider's approval rate
//     override in its state. It never fails the unit.
//   - BreakerReplacement replaces every breaker report of a node (none:
//     forgets the node). It never fails the unit.
//   - RoutingScoreReplacement replaces every routing score of a node (none:
//     forgets the node). It never fails the unit.
//   - ThreeDSConsumption consumes a 3-D Secure challenge of its payment. It
//     fails the unit with ErrStateConflict when the challenge is consumed
//     (or, OnlyExpired, not expired or claimed at At), with NOT_FOUND when
//     the payment has no challenge with the hash. ThreeDSFinish.Ops puts it
//     in one unit with the payment's transition.
//   - ThreeDSRelease drops the claim of an unconsumed challenge. It never
//     fails the unit.
//   - StoredCard inserts a stored card, active or pending (Validate). It
//     fails the unit with NOT_FOUND when its customer does not exist for
//     its merchant and mode, and with ErrConflict on a duplicate id or when
//     the customer has an active card of the same fingerprint (the store
//     keeps one active card per number: a caller that deduplicates looks
//     for it first with StoredCards, and looks again on ErrConflict).
//   - StoredCardLink, StoredCardDeletion, PendingCardActivation,
//     PendingCardDiscard and StoredCardRewrap: see their types.
//   - RecoveryClaim claims a payment for one recovery attempt. It fails the
//     unit with ErrStateConflict when the payment is not recoverable at Now
//     (claimed, no longer created, or in its lease), with NOT_FOUND when it
//     does not exist for its merchant and mode.
//
// GuardChange (guard.go) stores one rule of the card-testing guard, and
// OriginsChange (origins.go) the origins allowed to embed the card fields.
//
// Card tokens (token.go): CardToken inserts a token; TokenUse uses one,
// once, and fails the unit with INVALID_REQUEST param token otherwise.
//
// Accounts and dashboard operations, documented beside their types:
// Merchant, APIKey, APIKeyRotation and APIKeyRevocation (merchant.go);
// User, Session, SessionTouch, SessionRevocation, PasswordChange,
// AuditEntry and APIKeyUsage (store_dashboard.go).
type Op interface {
	unitOp()
}

func (NewPayment) unitOp()            {}
func (PaymentTransition) unitOp()     {}
func (Event) unitOp()                 {}
func (IdempotencyCompletion) unitOp() {}
func (SandboxCharge) unitOp()         {}
func (ThreeDSChallenge) unitOp()      {}
func (NewRefund) unitOp()             {}
func (RefundTransition) unitOp()      {}

// Vault, 3-D Secure, routing and idempotency operations.
func (IdempotencyRelease) unitOp()    {}
func (ProviderDrain) unitOp()         {}
func (SandboxApproval) unitOp()       {}
func (BreakerReplacement) unitOp()    {}
func (ThreeDSConsumption) unitOp()    {}
func (ThreeDSRelease) unitOp()        {}
func (StoredCard) unitOp()            {}
func (StoredCardLink) unitOp()        {}
func (StoredCardDeletion) unitOp()    {}
func (PendingCardActivation) unitOp() {}
func (PendingCardDiscard) unitOp()    {}
func (StoredCardRewrap) unitOp()      {}
func (RecoveryClaim) unitOp()         {}

// Add appends the operations to the unit.
func (u *Unit) Add(ops ...Op) {
	u.Ops = append(u.Ops, ops...)
}

// AddEvents appends one Event operation per event, in their order.
func (u *Unit) AddEvents(events []Event) {
	for _, e := range events {
		u.Ops = append(u.Ops, e)
	}
}

// AddCompletion appends the completion when it is not nil.
func (u *Unit) AddCompletion(done *IdempotencyCompletion) {
	if done != nil {
		u.Ops = append(u.Ops, *done)
	}
}

// Validate checks what the operations require of the unit itself: each
// ThreeDSChallenge follows a transition of its payment to pending_3ds (or
// its insert in pending_3ds), each NewRefund has a positive amount
// (INVALID_REQUEST param amount), each GuardChange has valid settings
// (GuardRuleSettings.Validate), each OriginsChange valid origins
// (OriginsChange.Validate), each StoredCard is active or pending, and
// each NewPayment has a status and a reservation for its own key
// (CheckReservation). An engine refuses an invalid unit before it writes
// anything.
func (u Unit) Validate() error {
	for i, op := range u.Ops {
		if np, ok := op.(NewPayment); ok {
			if np.Payment.Status == "" {
				return fmt.Errorf("operation %d of the unit: payment %s is inserted without a status", i, np.Payment.ID)
			}
			if err := np.CheckReservation(); err != nil {
				return fmt.Errorf("operation %d of the unit: %w", i, err)
			}
		}
		if c, ok := op.(StoredCard); ok && c.State != StoredCardActive && c.State != StoredCardPending {
			return fmt.Errorf("operation %d of the unit: a stored card is saved active or pending, not %q", i, c.State)
		}
		if g, ok := op.(GuardChange); ok {
			if err := g.Settings.Validate(); err != nil {
				return err
			}
		}
		if o, ok := op.(OriginsChange); ok {
			if err := o.Validate(); err != nil {
				return err
			}
		}
		if r, ok := op.(NewRefund); ok && r.Refund.Amount.Amount <= 0 {
			return Errorf(CodeInvalidRequest, "amount", "The refund amount must be greater than zero.")
		}
		c, ok := op.(ThreeDSChallenge)
		if !ok {
			continue
		}
		owned := false
		for _, prev := range u.Ops[:i] {
			if t, ok := prev.(PaymentTransition); ok && t.To == PaymentPending3DS &&
				t.ID == c.PaymentID && t.MerchantID == c.MerchantID && t.Mode == c.Mode {
				owned = true
			}
			if np, ok := prev.(NewPayment); ok && np.Payment.Status == PaymentPending3DS &&
				np.Payment.ID == c.PaymentID && np.Payment.MerchantID == c.MerchantID && np.Payment.Mode == c.Mode {
				owned = true
			}
		}
		if !owned {
			return fmt.Errorf("operation %d of the unit: the challenge does not follow its payment's move to pending_3ds", i)
		}
	}
	return nil
}

// OnlyLedgerEntries reports whether the unit writes sandbox ledger entries
// (SandboxCharge) and nothing else: a charge that is not answered at once
// writes its entry alone before it answers. Such a unit may commit without
// waiting for its flush: the payment's outcome, the only thing a client is
// told, commits durably after it, and that flush covers it.
func (u Unit) OnlyLedgerEntries() bool {
	for _, op := range u.Ops {
		if _, ok := op.(SandboxCharge); !ok {
			return false
		}
	}
	return len(u.Ops) > 0
}

// OnlyCardTokens reports whether the unit inserts card tokens (CardToken)
// and nothing else. Such a unit may commit without waiting for its flush:
// nothing of money rests on a token until a payment uses it, and that
// payment's unit (TokenUse) commits durably after it, which flushes the
// token's insert first. A crash before then loses the token: its payment
// is refused (INVALID_REQUEST param token), nothing is charged, and the
// customer enters the card again.
func (u Unit) OnlyCardTokens() bool {
	for _, op := range u.Ops {
		if _, ok := op.(CardToken); !ok {
			return false
		}
	}
	return len(u.Ops) > 0
}

// HasEvents reports whether the unit appends events: after it commits, the
// store's OnEvents hook is called.
func (u Unit) HasEvents() bool {
	for _, op := range u.Ops {
		if _, ok := op.(Event); ok {
			return true
		}
	}
	return false
}
