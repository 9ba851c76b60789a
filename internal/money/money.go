// Package money converts amounts at the edge of the service: decimal
// strings of the REST interface ("10.50") to integer minor units and back,
// checked against the currency's ISO 4217 minor unit.
//
// Currency facts come from golang.org/x/text/currency. Its tables are
// derived from CLDR 32 (2017) and have not been regenerated since
// (golang/go#36543), so this package applies three small, documented
// corrections on top of them (see currencies.go). Every correction has a test
// that fails once x/text catches up, so that it can be dropped.
package money

import (
	"strconv"

	"github.com/paygate/paygate/internal/paygate"
)

// MaxText is the largest amount accepted, as text (decisions.md section 3).
const MaxText = "999999999.99"

// maxIntegerDigits is the number of digits of the integer part of MaxText.
const maxIntegerDigits = 9

// maxShownDecimals is the most decimals an amount has on the REST
// interface, for any currency.
const maxShownDecimals = 2

// pow10 holds 10^0 .. 10^4, enough for every minor unit in use (0–3) and the
// scaling between them.
var pow10 = [...]int64{1, 10, 100, 1000, 10000}

// ParseSyntax checks the syntax and range of an amount without its
// currency: a string matching ^(0|[1-9][0-9]*)(\.[0-9]{1,2})?$, greater
// than zero, at most 999999999.99. Errors are INVALID_REQUEST with param
// amount; messages never contain the value.
func ParseSyntax(s string) *paygate.Error {
	_, _, _, err := parseDecimal(s)
	return err
}

// Parse converts an amount in currency to minor units: "10.50" EUR is 1050,
// "100" JPY is 100, "1.23" KWD is 1230. The amount must pass ParseSyntax
// and have no more decimals than the currency has (none for JPY). currency
// is matched case-insensitively and returned upper-cased in the Money.
//
// Errors are INVALID_REQUEST: param amount for the syntax, the range or too
// many decimals; param currency when the code is not a current ISO 4217
// currency one can pay with (see Digits).
func Parse(s, currency string) (paygate.Money, *paygate.Error) {
	units, frac, fracDigits, err := parseDecimal(s)
	if err != nil {
		return paygate.Money{}, err
	}
	code, digits, ok := lookup(currency)
	if !ok {
		return paygate.Money{}, paygate.Errorf(paygate.CodeInvalidRequest, "currency",
			"currency must be a current ISO 4217 currency code")
	}
	if fracDigits > digits {
		if digits == 0 {
			return paygate.Money{}, paygate.Errorf(paygate.CodeInvalidRequest, "amount",
				"amount must be a whole number for %s", code)
		}
		return paygate.Money{}, paygate.Errorf(paygate.CodeInvalidRequest, "amount",
			"amount has more decimal places than %s allows (%d)", code, digits)
	}
	minor := units*pow10[digits] + frac*pow10[digits-fracDigits]
	return paygate.Money{Amount: minor, Currency: code}, nil
}

// parseDecimal splits s into its integer part, its fractional digits as a
// number and how many there were. It implements the regular expression of
// ParseSyntax by hand: the amount is on every payment's hot path and a
// scanner needs no allocation.
func parseDecimal(s string) (units, frac int64, fracDigits int, err *paygate.Error) {
	if len(s) > 1 && s[0] == '-' && isDigit(s[1]) {
		// A negative amount is refused for its sign, not its syntax, when
		// the rest is a well-formed decimal (decisions §15): the client
		// should learn that the amount must be positive.
		if _, _, _, e := parseDecimal(s[1:]); e == nil || e.Message != syntaxMessage {
			return 0, 0, 0, notPositiveError()
		}
		return 0, 0, 0, syntaxError()
	}
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intLen := i
	if intLen == 0 || (intLen > 1 && s[0] == '0') {
		return 0, 0, 0, syntaxError()
	}
	if i < len(s) {
		if s[i] != '.' {
			return 0, 0, 0, syntaxError()
		}
		i++
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		fracDigits = i - start
		if fracDigits == 0 || fracDigits > maxShownDecimals || i != len(s) {
			return 0, 0, 0, syntaxError()
		}
		for _, c := range []byte(s[start:i]) {
			frac = frac*10 + int64(c-'0')
		}
	}
	// The syntax is valid from here on; what is left is the range. No
	// leading zeros, so more than nine integer digits is at least 1e9.
	if intLen > maxIntegerDigits {
		return 0, 0, 0, rangeError()
	}
	for _, c := range []byte(s[:intLen]) {
		units = units*10 + int64(c-'0')
	}
	if units == 0 && frac == 0 {
		return 0, 0, 0, notPositiveError()
	}
	return units, frac, fracDigits, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func notPositiveError() *paygate.Error {
	return paygate.Errorf(paygate.CodeInvalidRequest, "amount", "amount must be greater than zero")
}

const syntaxMessage = "amount must be a decimal string with at most two decimal places, such as \"10.50\""

func syntaxError() *paygate.Error {
	return paygate.Errorf(paygate.CodeInvalidRequest, "amount", "%s", syntaxMessage)
}

func rangeError() *paygate.Error {
	return paygate.Errorf(paygate.CodeInvalidRequest, "amount", "amount must be at most %s", MaxText)
}

// Format writes minor units of currency as a decimal string with the
// currency's decimals, at most two: 0 EUR is "0.00", 550 EUR "5.50", 0 JPY
// "0", 500 KWD "0.50". It is for amounts the service computes (refunded,
// captured); submitted amounts are echoed exactly as given instead.
//
// For a three-decimal currency the third decimal is rounded half away from
// zero (1235 KWD fils is "1.24", 1234 is "1.23"). Amounts that come from
// REST input never have a third decimal, since input has at most two, so
// this only matters for values computed some other way. An unknown currency
// is written with two decimals. Negative amounts get a leading "-".
func Format(minor int64, currency string) string {
	digits, ok := Digits(currency)
	if !ok {
		digits = maxShownDecimals
	}
	shown := min(digits, maxShownDecimals)
	neg := minor < 0
	// Work in uint64 so that the magnitude of math.MinInt64 fits.
	mag := uint64(minor)
	if neg {
		mag = -mag
	}
	if cut := digits - shown; cut > 0 {
		div := uint64(pow10[cut])
		q, r := mag/div, mag%div
		if r*2 >= div {
			q++
		}
		mag = q
	}
	var buf [32]byte
	b := buf[:0]
	if neg && mag != 0 {
		b = append(b, '-')
	}
	unit := uint64(pow10[shown])
	b = strconv.AppendUint(b, mag/unit, 10)
	if shown > 0 {
		b = append(b, '.')
		f := mag % unit
		for p := unit / 10; p > 0; p /= 10 {
			b = append(b, byte('0'+f/p%10))
		}
	}
	return string(b)
}
