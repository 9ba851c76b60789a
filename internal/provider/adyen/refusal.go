package adyen

import (
	"strings"

	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/paygate"
)

// Adyen's refusal reasons (refusalReasonCode and refusalReason of a Refused
// result, https://docs.adyen.com/development-resources/refusal-reasons)
// that have a decline code of their own; every other refusal is
// generic_decline.
var declineByReason = map[string]string{
	"12": paygate.DeclineInsufficientFunds, "not enough balance": paygate.DeclineInsufficientFunds,
	"6": paygate.DeclineExpiredCard, "expired card": paygate.DeclineExpiredCard,
	"24": paygate.DeclineIncorrectCVC, "cvc declined": paygate.DeclineIncorrectCVC,
}

var declineMessage = map[string]string{
	paygate.DeclineGeneric:           "The card was declined.",
	paygate.DeclineInsufficientFunds: "The card has insufficient funds.",
	paygate.DeclineExpiredCard:       "The card has expired.",
	paygate.DeclineIncorrectCVC:      "The card's security code is incorrect.",
}

// declineOf maps a refusal to our decline code and a human message that
// names Adyen's reason.
func declineOf(code, reason string) (string, string) {
	d, ok := declineByReason[code]
	if !ok {
		d, ok = declineByReason[strings.ToLower(strings.TrimSpace(reason))]
	}
	if !ok {
		d = paygate.DeclineGeneric
	}
	msg := declineMessage[d]
	if reason != "" {
		msg += " (Adyen: " + scrub(reason) + ")"
	}
	return d, msg
}

// isAuthenticationFailure reports whether a refusal after a challenge means
// the cardholder did not pass 3-D Secure ("3D Not Authenticated", code 11).
func isAuthenticationFailure(code, reason string) bool {
	return code == "11" || strings.EqualFold(strings.TrimSpace(reason), "3D Not Authenticated")
}

// adyenDigits are the currencies whose minor units at Adyen differ from
// ISO 4217 (https://docs.adyen.com/development-resources/currency-codes:
// "For CLP, CVE, IDR, and ISK the standard has a different number of
// decimals").
var adyenDigits = map[string]int{"CLP": 2, "CVE": 0, "IDR": 0, "ISK": 2}

// minorUnits converts an amount in ISO 4217 minor units (paygate's) to
// Adyen's minor units of the currency. An amount Adyen cannot express (a
// fraction of a CVE or IDR) is an error.
func minorUnits(m paygate.Money) (int64, bool) {
	iso, ok := money.Digits(m.Currency)
	if !ok {
		return 0, false
	}
	ad, ok := adyenDigits[strings.ToUpper(m.Currency)]
	if !ok {
		return m.Amount, true
	}
	v := m.Amount
	for ; ad > iso; ad-- {
		v *= 10
	}
	for ; iso > ad; iso-- {
		if v%10 != 0 {
			return 0, false
		}
		v /= 10
	}
	return v, true
}

func (p *Provider) amount(m paygate.Money) (amount, error) {
	v, ok := minorUnits(m)
	if !ok {
		return amount{}, p.fail(paygate.ProviderFailed, "the amount cannot be expressed in Adyen's minor units of "+m.Currency)
	}
	return amount{Currency: strings.ToUpper(m.Currency), Value: v}, nil
}
