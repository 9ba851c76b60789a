// Package payment holds the use cases: create, capture, void and refund
// payments, and the background work that drives refunds. It owns the order of
// steps of "A payment's way": insert created, call the provider outside any
// transaction, then write the final status, events and idempotency answer in
// one transaction.
package payment

import (
	"context"
	"unicode"
	"unicode/utf8"

	"github.com/paygate/paygate/internal/card"
	"github.com/paygate/paygate/internal/paygate"
)

// Request identifies who asks: the authenticated merchant and mode, and the
// Idempotency-Key the request reserved.
type Request struct {
	MerchantID     string
	Mode           paygate.Mode
	IdempotencyKey string
	// Reservation, for Create only, asks that the key be reserved with the
	// payment's insert rather than before Create (see Create).
	Reservation *paygate.IdempotencyReservation
	// Authenticate, when set, says that the request's API key has not been
	// verified yet (its insert would verify it, ReadAhead.Unread): Create
	// calls it before it reads anything of the merchant's (a stored card).
	// It returns the key's refusal, or a *paygate.KeyTakenError when the
	// idempotency key has a live record to answer instead.
	Authenticate func(ctx context.Context) error
}

// CreateInput is a validated payment request. httpapi produces it; every
// field has passed the rules of the specification and decisions.md.
type CreateInput struct {
	Amount             paygate.Money
	AmountText         string // exactly as submitted
	Method             paygate.PaymentMethod
	CustomerExternalID string
	Card               *paygate.Card // set for MethodCard
	StoredCardID       string        // set for MethodStoredCard
	TokenID            string        // set for MethodToken
	Billing            *paygate.Billing
	MerchantRef        string
	ReturnURL          string
	DeviceFingerprint  string
	Metadata           []byte // compact JSON object; nil when none
	SaveCard           bool
	// ClientAddr is the request's client address (decisions §15), which
	// the card-testing guard counts declines by.
	ClientAddr string
	// BillingIPDefaulted says that Billing.IPAddress was not sent but
	// defaulted to ClientAddr: a token payment replaces it with the
	// address that tokenized the card, and the guard does not take it
	// for the shopper's.
	BillingIPDefaulted bool
}

// RefundInput is a validated refund request.
type RefundInput struct {
	PaymentID  string
	Amount     paygate.Money // in the request's currency
	AmountText string
	Reason     string
}

// CaptureInput is a validated capture request. AmountText is "" for a
// capture of the whole authorized amount; otherwise it has the decimal
// syntax checked and is parsed against the payment's currency here.
type CaptureInput struct {
	PaymentID  string
	AmountText string
}

// maxReason is the longest refund reason, in characters.
const maxReason = 500

// NewRefundInput returns the refund of amount (amountText as submitted) of
// a payment, with reason checked: at most 500 characters, no control
// characters but line breaks and tabs, and no card number (decisions §15).
// Errors: INVALID_REQUEST param reason. The API and the dashboard refund
// through it alike.
func NewRefundInput(paymentID string, amount paygate.Money, amountText, reason string) (RefundInput, *paygate.Error) {
	if utf8.RuneCountInString(reason) > maxReason {
		return RefundInput{}, paygate.Errorf(paygate.CodeInvalidRequest, "reason", "reason must be at most %d characters", maxReason)
	}
	for _, r := range reason {
		if unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' {
			return RefundInput{}, paygate.Errorf(paygate.CodeInvalidRequest, "reason", "reason must not contain control characters")
		}
	}
	if card.ContainsNumber(reason) {
		return RefundInput{}, paygate.Errorf(paygate.CodeInvalidRequest, "reason", "card numbers do not belong in reason")
	}
	return RefundInput{PaymentID: paymentID, Amount: amount, AmountText: amountText, Reason: reason}, nil
}
