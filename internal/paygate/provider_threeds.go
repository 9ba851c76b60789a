package paygate

import "context"

// ThreeDSProvider is the optional capability of a Provider that can ask for
// 3-D Secure: its Charge may answer pending_3ds with a ThreeDSAction, and it
// finishes such a payment once the customer's browser comes back. The payment
// service type-asserts it; a provider without it never answers pending_3ds.
//
// The ThreeDSAction of a pending_3ds answer carries the provider's own
// parameters (creq, threeDSSessionData, ...). paygate adds the return-address
// parameter TermUrl, {base_url}/v1/3ds/callback/<token>, and resolves a
// RedirectURL that is a path ("/v1/...") against its base URL: a page of the
// service itself, as the test-mode challenge page is.
type ThreeDSProvider interface {
	Provider
	// CompleteThreeDS finishes a pending_3ds payment with what the customer's
	// browser posted to the callback. It must be idempotent by PaymentID: a
	// repeated call gives the same answer and charges once. A failed
	// authentication is a result with Authenticated false, not an error.
	// Errors: *ProviderError of kind ProviderUnavailable (nothing was
	// processed: the customer may retry), ProviderUnknownOutcome or
	// ProviderFailed (the response was refused, or the provider erred).
	CompleteThreeDS(ctx context.Context, req ThreeDSCompletion) (ThreeDSResult, error)
}

// ThreeDSCompletion is the customer's return from a challenge, as the
// provider sees it.
type ThreeDSCompletion struct {
	PaymentID   string
	ProviderRef string // the pending_3ds payment's reference at the provider
	Amount      Money
	// Response holds the form fields the challenge posted to the callback
	// (cres, threeDSSessionData, ...). They come from the customer's
	// browser: the provider must verify them.
	Response map[string]string
}

// ThreeDSResult is a provider's definite answer to a completed challenge.
type ThreeDSResult struct {
	// Authenticated is false when the cardholder failed (or refused) the
	// challenge; nothing was charged and the other fields but ProviderRef
	// are empty.
	Authenticated bool
	// Status is captured, authorized or failed (declined after
	// authentication, with DeclineCode and Message).
	Status      PaymentStatus
	ProviderRef string
	DeclineCode string
	Message     string
}
