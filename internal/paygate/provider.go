package paygate

import "context"

// Provider is an upstream connector. It answers in paygate's terms, never in
// a vendor's types. Errors are *ProviderError; any other error is treated as
// ProviderFailed.
type Provider interface {
	// ID is the provider id shown to merchants (sandbox-eu, ...).
	ID() string
	// Charge submits a payment. A decline is a result with Status failed
	// and a DeclineCode, not an error. Errors: *ProviderError of kind
	// ProviderUnavailable (nothing was processed: the caller may fail over),
	// ProviderUnknownOutcome (sent, answer unknown: never fail over) or
	// ProviderFailed.
	Charge(ctx context.Context, req ChargeRequest) (ChargeResult, error)
	// Capture captures an authorized payment, fully or partly.
	Capture(ctx context.Context, op PaymentOp) error
	// Void cancels an authorized payment.
	Void(ctx context.Context, op PaymentOp) error
	// Refund refunds a captured payment. The refund id is the provider's
	// idempotency key: repeating a call with one RefundID refunds once.
	Refund(ctx context.Context, req RefundRequest) (RefundResult, error)
}

// ChargeRequest is one payment as a provider sees it. Metadata is never part
// of it: the specification says metadata is not forwarded.
type ChargeRequest struct {
	PaymentID         string // our id: the provider's idempotency key and inquiry key
	MerchantID        string
	Mode              Mode
	Amount            Money
	Card              Card
	Billing           *Billing
	DeviceFingerprint string
	ReturnURL         string
	// ThreeDSReturnURL is where a provider that redirects the customer to
	// 3-D Secure itself (Stripe) sends the customer back: paygate's
	// callback, {base_url}/v1/3ds/callback/<token>, minted before the
	// charge. Empty when the payment service did not mint one.
	ThreeDSReturnURL string
}

// ThreeDSAction tells the merchant where to send the customer's browser.
type ThreeDSAction struct {
	RedirectURL string
	Method      string // GET or POST
	Parameters  map[string]string
}

// ChargeResult is a provider's definite answer to a charge.
type ChargeResult struct {
	// Status is captured, authorized, pending_3ds or failed (declined).
	Status      PaymentStatus
	ProviderRef string
	DeclineCode string // set when declined
	Message     string // human text of a decline
	ThreeDS     *ThreeDSAction
	// Commit lists writes the provider asks the gateway to commit in the
	// same unit as the payment's outcome (decisions.md section 22), with
	// whatever outcome is written: a final status, or a created payment
	// whose answer is unknown. Only a provider whose records live in the
	// gateway's database sets it (the test-mode sandboxes' ledger entries):
	// a crash before that commit leaves neither the outcome nor the
	// provider's record, so the provider never processed the payment as
	// far as an inquiry can tell. It may come with an error other than
	// ProviderUnavailable (the result is otherwise empty then); with
	// ProviderUnavailable nothing was processed and it is ignored.
	Commit []Op
}

// PaymentOp names a payment at its provider, for capture and void.
type PaymentOp struct {
	PaymentID   string
	ProviderRef string
	Amount      Money
}

// RefundRequest is one refund as a provider sees it.
type RefundRequest struct {
	RefundID    string
	PaymentID   string
	ProviderRef string // the payment's reference at the provider
	Amount      Money
	Reason      string
}

// RefundResult is a provider's answer to a refund: pending (the provider
// accepted it and will settle later), succeeded or failed.
type RefundResult struct {
	Status        RefundStatus
	ProviderRef   string
	FailureReason string
}

// ProviderErrorKind classifies a provider failure by what it means for the
// money: whether anything may have been processed.
type ProviderErrorKind int

const (
	// ProviderFailed: the provider answered with an error; nothing was
	// charged, but do not fail over (the provider did process the request).
	ProviderFailed ProviderErrorKind = iota
	// ProviderUnavailable: provably nothing was processed (connection
	// refused, explicit "unavailable"); the next provider may be tried.
	ProviderUnavailable
	// ProviderUnknownOutcome: the request was sent and no answer came; the
	// payment may or may not exist at the provider. Never fail over.
	ProviderUnknownOutcome
)

// ProviderError is a failure of a provider call.
type ProviderError struct {
	Kind     ProviderErrorKind
	Provider string
	Message  string // safe to show: never card data
}

func (e *ProviderError) Error() string { return e.Provider + ": " + e.Message }

// Router chooses providers for a payment.
type Router interface {
	// Route returns the providers for a currency in the order to try them.
	// An empty list means no provider serves the currency in that mode.
	Route(mode Mode, currency string) []Provider
	// Provider returns the provider with the id, for operations on a
	// payment it already processed (capture, void, refund).
	Provider(mode Mode, id string) (Provider, bool)
}
