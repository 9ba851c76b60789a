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
//   - PaymentTransition moves a payment from one of From to To. When the
//     payment is in none of From the whole unit fails with ErrStateConflict,
//     and with NOT_FOUND when it does not exist for its merchant and mode.
//   - Event appends the event to the outbox, with its webhook delivery when
//     the event's (merchant, mode) has an endpoint subscribed to it.
//   - IdempotencyCompletion stores the answer of an in-flight key. A
//     complete record keeps its first answer and a key without a record is
//     left alone: neither fails the unit (as CompleteIdempotency).
//   - SandboxCharge inserts a sandbox ledger entry unless the provider has
//     one for the payment: the first entry wins and is kept, and the unit
//     does not fail (as RecordSandboxCharge).
//   - ThreeDSChallenge inserts a 3-D Secure challenge. It must follow, in
//     the unit, a PaymentTransition of its payment (ID, MerchantID, Mode)
//     to pending_3ds, so that a payment is never pending_3ds without its
//     challenge and a challenge never names another merchant's payment
//     (Validate). A duplicate token hash fails the unit with ErrConflict.
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
// Accounts and dashboard operations, documented beside their types:
// Merchant, APIKey, APIKeyRotation and APIKeyRevocation (merchant.go);
// User, Session, SessionTouch, SessionRevocation, PasswordChange,
// AuditEntry and APIKeyUsage (store_dashboard.go).
type Op interface {
	unitOp()
}

func (PaymentTransition) unitOp()     {}
func (Event) unitOp()                 {}
func (IdempotencyCompletion) unitOp() {}
func (SandboxCharge) unitOp()         {}
func (ThreeDSChallenge) unitOp()      {}
func (NewRefund) unitOp()             {}
func (RefundTransition) unitOp()      {}

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
// ThreeDSChallenge follows a transition of its payment to pending_3ds, and
// each NewRefund has a positive amount (INVALID_REQUEST param amount). An
// engine refuses an invalid unit before it writes anything.
func (u Unit) Validate() error {
	for i, op := range u.Ops {
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
		}
		if !owned {
			return fmt.Errorf("operation %d of the unit: the challenge does not follow its payment's transition to pending_3ds", i)
		}
	}
	return nil
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
