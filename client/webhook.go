package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/paygate/paygate/webhook"
)

// The event types of webhooks (Event.Type).
const (
	EventPaymentCaptured   = "payment.captured"
	EventPaymentFailed     = "payment.failed"
	EventPaymentAuthorized = "payment.authorized"
	EventPaymentVoided     = "payment.voided"
	EventRefundCreated     = "refund.created"
	EventRefundSucceeded   = "refund.succeeded"
	EventRefundFailed      = "refund.failed"
	EventPing              = "ping" // sent by `paygate webhook test`
)

// Event is a webhook's body.
type Event struct {
	// ID is the event's id, the same as the webhook-id header and on every
	// redelivery: deduplicate on it.
	ID        string    `json:"id"`
	Type      string    `json:"event"`
	Mode      string    `json:"mode"` // "test" or "live"
	Timestamp time.Time `json:"timestamp"`
	Data      EventData `json:"data"`
}

// EventData is an event's data. Payment events set TransactionID and
// the payment's Status; refund events set RefundID, TransactionID and the
// refund's Status.
type EventData struct {
	TransactionID string `json:"transactionId"`
	RefundID      string `json:"refundId"`
	MerchantID    string `json:"merchantId"`
	Status        string `json:"status"`
	// Amount is in the currency's minor units (1050 is 10.50 EUR), unlike
	// the REST API's decimal strings.
	Amount       int64  `json:"amount"`
	Currency     string `json:"currency"`
	ErrorCode    string `json:"errorCode"`
	ErrorMessage string `json:"errorMessage"`
	DeclineCode  string `json:"declineCode"`
	Message      string `json:"message"` // ping only
}

// VerifyWebhook checks that body, the raw body of a webhook request with
// its headers, was signed by the gateway with the endpoint's secret
// ("whsec_…") less than five minutes ago, and returns the event. Check the
// raw bytes as received: re-encoded JSON does not verify. Errors wrap
// those of package github.com/paygate/paygate/webhook
// (webhook.ErrNoMatchingSignature, webhook.ErrInvalidTimestamp,
// webhook.ErrMissingHeader, webhook.ErrInvalidSecret); test them with
// errors.Is.
func VerifyWebhook(secret string, header http.Header, body []byte) (*Event, error) {
	if err := webhook.Verify(secret, header, body); err != nil {
		return nil, err
	}
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, fmt.Errorf("paygate client: a signed webhook body is not an event: %w", err)
	}
	return &ev, nil
}
