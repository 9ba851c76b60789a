package paygate

import "time"

// RefundStatus is the status of a refund: created → pending →
// succeeded | failed.
type RefundStatus string

// Refund statuses.
const (
	RefundCreated   RefundStatus = "created"
	RefundPending   RefundStatus = "pending"
	RefundSucceeded RefundStatus = "succeeded"
	RefundFailed    RefundStatus = "failed"
)

// Refund is a full or partial refund of a captured payment.
type Refund struct {
	ID            string
	MerchantID    string
	Mode          Mode
	PaymentID     string
	Amount        Money
	AmountText    string // as submitted
	Reason        string // "" when none
	Status        RefundStatus
	ProviderID    string // the provider that captured the payment; a NewRefund without one gets the payment's
	ProviderRef   string
	FailureReason string
	// ErrorCode and ErrorMessage say why a failed refund failed (decisions
	// §15): ErrorCode is PROVIDER_ERROR, ErrorMessage the provider's reason
	// made fit for the merchant (no card data). "" on other refunds.
	ErrorCode    string
	ErrorMessage string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// NewRefund is the unit operation that inserts Refund in status created
// (whatever its Status), reserving its amount on its payment (Op).
type NewRefund struct {
	Refund Refund
}

// RefundTransition moves a refund from From to To, conditionally (the store
// returns ErrStateConflict otherwise). Moving to failed gives the amount back
// to the payment's refundable balance in the same transaction.
type RefundTransition struct {
	ID            string
	MerchantID    string
	Mode          Mode
	From          RefundStatus
	To            RefundStatus
	ProviderRef   string
	FailureReason string
	ErrorCode     string
	ErrorMessage  string
	UpdatedAt     time.Time
}
