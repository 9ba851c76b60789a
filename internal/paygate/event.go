package paygate

import "time"

// EventType names a webhook event.
type EventType string

// The events of decisions.md section 11.
const (
	EventPaymentCaptured   EventType = "payment.captured"
	EventPaymentFailed     EventType = "payment.failed"
	EventPaymentAuthorized EventType = "payment.authorized"
	EventPaymentVoided     EventType = "payment.voided"
	EventRefundCreated     EventType = "refund.created"
	EventRefundSucceeded   EventType = "refund.succeeded"
	EventRefundFailed      EventType = "refund.failed"
	EventPing              EventType = "ping"
)

// EventTypes lists every subscribable event.
var EventTypes = []EventType{
	EventPaymentCaptured, EventPaymentFailed, EventPaymentAuthorized, EventPaymentVoided,
	EventRefundCreated, EventRefundSucceeded, EventRefundFailed,
}

// Event is one state change, written to the outbox in the same transaction as
// the change. Its ID is the webhook-id of every delivery of it.
type Event struct {
	ID         string
	MerchantID string
	Mode       Mode
	Type       EventType
	PaymentID  string
	RefundID   string // "" for payment events
	Payload    []byte // the JSON body delivered to the merchant
	CreatedAt  time.Time
}
