// Package webhook builds the events merchants receive. Events are written to
// the outbox in the same transaction as the state change they describe.
package webhook

import (
	"encoding/json"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// timeFormat is RFC 3339 with milliseconds, in UTC, as everywhere at the edge.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

type envelope struct {
	ID        string `json:"id"`
	Event     string `json:"event"`
	Mode      string `json:"mode"`
	Timestamp string `json:"timestamp"`
	Data      any    `json:"data"`
}

type paymentData struct {
	TransactionID string `json:"transactionId"`
	MerchantID    string `json:"merchantId"`
	Status        string `json:"status"`
	Amount        int64  `json:"amount"`
	Currency      string `json:"currency"`
	ErrorCode     string `json:"errorCode,omitempty"`
	DeclineCode   string `json:"declineCode,omitempty"`
}

type refundData struct {
	RefundID      string `json:"refundId"`
	TransactionID string `json:"transactionId"`
	MerchantID    string `json:"merchantId"`
	Status        string `json:"status"`
	Amount        int64  `json:"amount"`
	Currency      string `json:"currency"`
}

// PaymentEvent returns the event of a payment reaching p.Status. amount is
// in minor units: the captured amount for payment.captured, the payment's
// amount otherwise.
func PaymentEvent(typ paygate.EventType, p paygate.Payment, amount int64, now time.Time) paygate.Event {
	ev := paygate.Event{
		ID: id.New(), MerchantID: p.MerchantID, Mode: p.Mode, Type: typ,
		PaymentID: p.ID, CreatedAt: now,
	}
	ev.Payload = mustJSON(envelope{
		ID: ev.ID, Event: string(typ), Mode: string(p.Mode), Timestamp: now.UTC().Format(timeFormat),
		Data: paymentData{
			TransactionID: p.ID, MerchantID: p.MerchantID, Status: string(p.Status),
			Amount: amount, Currency: p.Amount.Currency,
			ErrorCode: p.ErrorCode, DeclineCode: p.DeclineCode,
		},
	})
	return ev
}

// RefundEvent returns the event of a refund reaching r.Status.
func RefundEvent(typ paygate.EventType, r paygate.Refund, now time.Time) paygate.Event {
	ev := paygate.Event{
		ID: id.New(), MerchantID: r.MerchantID, Mode: r.Mode, Type: typ,
		PaymentID: r.PaymentID, RefundID: r.ID, CreatedAt: now,
	}
	ev.Payload = mustJSON(envelope{
		ID: ev.ID, Event: string(typ), Mode: string(r.Mode), Timestamp: now.UTC().Format(timeFormat),
		Data: refundData{
			RefundID: r.ID, TransactionID: r.PaymentID, MerchantID: r.MerchantID,
			Status: string(r.Status), Amount: r.Amount.Amount, Currency: r.Amount.Currency,
		},
	})
	return ev
}

// mustJSON marshals values built only of strings and integers, which cannot
// fail.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("webhook: marshal event: " + err.Error())
	}
	return b
}
