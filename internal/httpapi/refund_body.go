package httpapi

import (
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
)

// ParseRefund decodes and validates a POST /v1/refunds body with the API's
// own rules (strict decoding, amount syntax and decimals for the currency,
// reason length). It returns the use case's input and the request's
// upper-cased currency, or an INVALID_REQUEST *paygate.Error naming the
// field to blame.
func ParseRefund(body []byte) (payment.RefundInput, string, *paygate.Error) {
	var rr refundRequest
	if e := decodeJSON(body, &rr); e != nil {
		return payment.RefundInput{}, "", e
	}
	return rr.validate()
}
