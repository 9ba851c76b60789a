// Package webhook delivers events to merchants: it builds the events'
// payloads (written to the outbox in the same transaction as the state
// change they describe), signs deliveries the Standard Webhooks way, runs
// the dispatcher that claims due deliveries and POSTs them with retries,
// and guards live-mode endpoints against server-side request forgery.
package webhook

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	swh "github.com/paygate/paygate/webhook"
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
	// Why a failed refund failed; null in every other refund event
	// (decisions §15).
	ErrorCode    *string `json:"errorCode"`
	ErrorMessage *string `json:"errorMessage"`
}

// nullable is s, or JSON null when s is empty.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
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

// RefundEvent returns the event of a refund reaching r.Status; a failed
// refund's event carries its ErrorCode and ErrorMessage.
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
			ErrorCode: nullable(r.ErrorCode), ErrorMessage: nullable(r.ErrorMessage),
		},
	})
	return ev
}

type pingData struct {
	MerchantID string `json:"merchantId"`
	Message    string `json:"message"`
}

// PingEvent returns a ping event of (merchant, mode): `paygate webhook
// test` sends it to check an endpoint and its signature check.
func PingEvent(merchantID string, mode paygate.Mode, now time.Time) paygate.Event {
	ev := paygate.Event{ID: id.New(), MerchantID: merchantID, Mode: mode, Type: paygate.EventPing, CreatedAt: now}
	ev.Payload = mustJSON(envelope{
		ID: ev.ID, Event: string(paygate.EventPing), Mode: string(mode), Timestamp: now.UTC().Format(timeFormat),
		Data: pingData{MerchantID: merchantID, Message: "A test event from paygate webhook test."},
	})
	return ev
}

// NewSecret returns a fresh endpoint secret: whsec_ and the base64 of 32
// random bytes.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails; a broken random source panics
	return swh.SecretPrefix + base64.StdEncoding.EncodeToString(b[:])
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
