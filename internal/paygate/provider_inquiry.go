package paygate

import "context"

// Inquirer is the optional capability of a Provider to answer a status
// inquiry keyed by our payment id (the id every Charge carries). The
// recovery job type-asserts it to finish payments whose charge has no
// recorded answer: a timeout (the create call answered 202) or a crash
// between the charge and the write of its outcome. Connectors must implement
// it: a payment sent to a provider that cannot be asked stays created until
// an operator resolves it.
type Inquirer interface {
	// Inquire reports what the provider knows of the charge of the payment.
	// It must not charge anything. An error means that no answer could be
	// had now (the provider is unreachable, the call timed out): the caller
	// asks again later. Every answer, including "unknown", is an Inquiry.
	Inquire(ctx context.Context, paymentID string) (Inquiry, error)
}

// InquiryStatus classifies a provider's answer to a status inquiry.
type InquiryStatus int

const (
	// InquiryUnknown: the provider never received a charge for the payment,
	// so nothing was charged. This is a definite answer, not a failure to
	// answer: recovery marks the payment failed with PROVIDER_ERROR.
	InquiryUnknown InquiryStatus = iota
	// InquiryPending: the provider received the charge and has not decided
	// it yet. Ask again later.
	InquiryPending
	// InquiryAnswered: Result is the charge's outcome, as Charge would have
	// answered it (captured, authorized, pending_3ds, or failed with a
	// decline code and message).
	InquiryAnswered
	// InquiryErrored: the provider received the charge and failed it
	// without charging (what Charge answers as ProviderFailed); Message says
	// why and is safe to show.
	InquiryErrored
)

// Inquiry is a provider's answer to a status inquiry.
type Inquiry struct {
	Status  InquiryStatus
	Result  ChargeResult // when InquiryAnswered
	Message string       // when InquiryErrored
}
