package paygate

import (
	"errors"
	"fmt"
)

// Code is an error name of the API (decisions.md section 2).
type Code string

// The error names. Their HTTP statuses live in one table in httpapi.
const (
	CodeInvalidRequest     Code = "INVALID_REQUEST"
	CodeUnauthorized       Code = "UNAUTHORIZED"
	CodeNotFound           Code = "NOT_FOUND"
	CodeMethodNotAllowed   Code = "METHOD_NOT_ALLOWED"
	CodeDuplicateRequest   Code = "DUPLICATE_REQUEST"
	CodeRateLimited        Code = "RATE_LIMITED"
	CodeCardDeclined       Code = "CARD_DECLINED"
	CodeProviderError      Code = "PROVIDER_ERROR"
	CodeInternal           Code = "INTERNAL_ERROR"
	CodeServiceUnavailable Code = "SERVICE_UNAVAILABLE"
	// CodeBodyTooLarge is INVALID_REQUEST answered with 413; it is reported
	// to clients under the name INVALID_REQUEST.
	CodeBodyTooLarge Code = "INVALID_REQUEST_TOO_LARGE"
	// CodeAuthenticationFailed and CodeAuthenticationExpired are payment
	// errorCodes of 3-D Secure, never HTTP error names.
	CodeAuthenticationFailed  Code = "AUTHENTICATION_FAILED"
	CodeAuthenticationExpired Code = "AUTHENTICATION_EXPIRED"
)

// Error is the one error type that reaches clients. Any other error is an
// internal failure and is answered as INTERNAL_ERROR without its text.
type Error struct {
	Code    Code
	Message string
	// Param names the offending field, dotted (card.number), or header
	// (Idempotency-Key), when one field is to blame.
	Param string
	// TransactionID and DeclineCode extend CARD_DECLINED and PROVIDER_ERROR.
	TransactionID string
	DeclineCode   string
}

func (e *Error) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%s: %s (%s)", e.Code, e.Message, e.Param)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Errorf returns an *Error with the code, the param (may be empty) and a
// formatted message. Messages are shown to clients: never put card data or
// internal detail in them.
func Errorf(code Code, param, format string, args ...any) *Error {
	return &Error{Code: code, Param: param, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the Code of err if it is (or wraps) an *Error, and
// CodeInternal otherwise.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// IsNotFound reports whether err is a NOT_FOUND *Error.
func IsNotFound(err error) bool { return err != nil && ErrorCode(err) == CodeNotFound }

// ErrStateConflict is returned by stores when a conditional transition finds
// the row no longer in the expected state (another request or node moved it).
var ErrStateConflict = errors.New("paygate: state changed concurrently")

// ErrConflict is returned by stores when a unique constraint refuses a write
// (a duplicate id, a duplicate merchant reference where one is unique).
var ErrConflict = errors.New("paygate: conflicting row exists")
