package httpapi

import (
	"encoding/json"
	"fmt"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
)

// RefundBody is the JSON body an API client sends to POST /v1/refunds for
// these fields: the merchant dashboard builds it so that its refund form
// fingerprints, decodes and validates exactly like the API. An empty reason
// is left out, as a client that gives none would.
func RefundBody(transactionID, amount, currency, reason string) ([]byte, error) {
	m := map[string]string{"transactionId": transactionID, "amount": amount, "currency": currency}
	if reason != "" {
		m["reason"] = reason
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode refund body: %w", err)
	}
	return b, nil
}

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
