package payment

import "github.com/paygate/paygate/internal/paygate"

// ResultKind says what a use case did, and so which of Result's fields are
// set.
type ResultKind int

const (
	// PaymentCreated: a payment was created and charged (Payment; ThreeDS
	// when the customer must authenticate). A payment still created has an
	// unknown outcome, which recovery resolves.
	PaymentCreated ResultKind = iota + 1
	// PaymentDeclined: the provider declined the card (Payment, with its
	// decline code).
	PaymentDeclined
	// PaymentProviderError: the provider failed (Payment, Message).
	PaymentProviderError
	// PaymentUpdated: a capture or void went through (Payment).
	PaymentUpdated
	// RefundCreated: a refund was created (Refund).
	RefundCreated
	// CustomerSaved: a customer was created or updated (Customer).
	CustomerSaved
	// CardStored: a card was stored for a customer (StoredCard).
	CardStored
)

// Result is what an idempotent use case did, in domain terms. The answer
// stored under the request's idempotency key is its rendering by the
// service's Encoder.
type Result struct {
	Kind       ResultKind
	Payment    *paygate.Payment
	ThreeDS    *paygate.ThreeDSAction // PaymentCreated in pending_3ds
	Message    string                 // PaymentProviderError
	Refund     *paygate.Refund
	Customer   *paygate.Customer
	StoredCard *paygate.StoredCard

	// answer is the rendering the use case stored, so that a request
	// renders its result once.
	answer Answer
}

// Answer is the rendering of a Result that is stored as the request's
// idempotency record and replayed byte for byte.
type Answer struct {
	Status int
	Body   []byte
}

// Encoder renders results as the answers the service stores. httpapi
// implements it, so that the first answer and every replay are the same
// bytes, and so that the recovery job can write the answer a crashed
// request would have given.
type Encoder interface {
	// Encode renders r.
	Encode(r Result) Answer
	// ResourceID returns the id of the resource an answer that Encode
	// wrote names (the payment, refund, customer or card), "" when it
	// names none.
	ResourceID(a Answer) string
}

// result returns r with its rendering, ready to be stored.
func (s *Service) result(r Result) Result {
	r.answer = s.encoder.Encode(r)
	return r
}

// paymentResult is the result of a payment's creation as it stands: created
// (with a challenge to show, or with an outcome still unknown), declined or
// failed at the provider.
func (s *Service) paymentResult(p paygate.Payment, threeDS *paygate.ThreeDSAction) Result {
	switch {
	case p.Status == paygate.PaymentFailed && p.ErrorCode == string(paygate.CodeCardDeclined):
		return s.result(Result{Kind: PaymentDeclined, Payment: &p})
	case p.Status == paygate.PaymentFailed:
		return s.result(Result{Kind: PaymentProviderError, Payment: &p, Message: p.ErrorMessage})
	default:
		return s.result(Result{Kind: PaymentCreated, Payment: &p, ThreeDS: threeDS})
	}
}
