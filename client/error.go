package client

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The error names the gateway answers with (Error.Name).
const (
	NameInvalidRequest     = "INVALID_REQUEST"     // 400 (413 for a body over 64 KiB): Param names the field
	NameUnauthorized       = "UNAUTHORIZED"        // 401: the key is missing, unknown, revoked or expired
	NameNotFound           = "NOT_FOUND"           // 404: no such resource for this merchant and mode
	NameMethodNotAllowed   = "METHOD_NOT_ALLOWED"  // 405
	NameDuplicateRequest   = "DUPLICATE_REQUEST"   // 409: the key was used with another request, or is still running
	NameRateLimited        = "RATE_LIMITED"        // 429
	NameCardDeclined       = "CARD_DECLINED"       // 400: DeclineCode and TransactionID are set
	NameProviderError      = "PROVIDER_ERROR"      // 502: TransactionID is set; the payment failed
	NameInternalError      = "INTERNAL_ERROR"      // 500
	NameServiceUnavailable = "SERVICE_UNAVAILABLE" // 503
)

// The decline codes of a CARD_DECLINED error (Error.DeclineCode, and
// Payment.DeclineCode).
const (
	DeclineGeneric           = "generic_decline"
	DeclineInsufficientFunds = "insufficient_funds"
	DeclineExpiredCard       = "expired_card"
	DeclineIncorrectCVC      = "incorrect_cvc"
	// DeclineBlocked: the gateway's card-testing guard refused the attempt
	// before any provider saw it.
	DeclineBlocked = "blocked"
)

// Error is an error answer of the gateway.
type Error struct {
	// StatusCode is the HTTP status of the answer.
	StatusCode int `json:"status"`
	// Name is the error's name (NameCardDeclined, …); empty when the
	// answer was not the API's envelope (a proxy's 4xx page; a proxy's 5xx
	// page is a lost answer, returned as a *TransportError).
	Name string `json:"name"`
	// Message is human-readable text, for logs rather than for customers.
	Message string `json:"message"`
	// Param names the field to blame, dotted ("card.number",
	// "billing.state"), or a header ("Idempotency-Key"); empty when no
	// single field is.
	Param string `json:"param"`
	// DeclineCode says why the issuer declined (CARD_DECLINED only).
	DeclineCode string `json:"declineCode"`
	// TransactionID is the payment that a CARD_DECLINED or PROVIDER_ERROR
	// answer recorded as failed.
	TransactionID string `json:"transactionId"`

	// RequestID is the answer's X-Request-Id: quote it when asking the
	// gateway's operator about the request.
	RequestID string `json:"-"`
	// IdempotencyKey is the key the call sent ("" for GET and DELETE).
	IdempotencyKey string `json:"-"`
	// RetryAfter is the answer's Retry-After (0 when absent).
	RetryAfter time.Duration `json:"-"`
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "paygate: %d", e.StatusCode)
	if e.Name != "" {
		b.WriteString(" " + e.Name)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Param != "" {
		b.WriteString(" (param " + e.Param + ")")
	}
	if e.DeclineCode != "" {
		b.WriteString(" (decline code " + e.DeclineCode + ")")
	}
	if e.RequestID != "" {
		b.WriteString(" [request " + e.RequestID + "]")
	}
	return b.String()
}

// ErrorName returns the Name of the *Error in err's chain, or "" when err
// is not an error answer of the gateway.
func ErrorName(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Name
	}
	return ""
}
