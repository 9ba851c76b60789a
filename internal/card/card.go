// Package card holds the facts about a card number that need no network:
// the Luhn check digit, the brand from the number's prefix, whether an
// expiry date has passed, and the keyed fingerprint that recognises a card
// without keeping its number.
//
// Nothing here logs or formats a number; callers keep it in a paygate.PAN.
package card

import (
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// Brands returned by Brand (decisions.md section 13).
const (
	BrandVisa       = "visa"
	BrandMastercard = "mastercard"
	BrandAmex       = "amex"
	BrandDiscover   = "discover"
	BrandJCB        = "jcb"
	BrandDiners     = "diners"
	BrandUnionPay   = "unionpay"
	BrandUnknown    = "unknown"
)

// Luhn reports whether digits is a non-empty string of ASCII digits whose
// last digit is the correct Luhn (mod 10) check digit. Any other character,
// spaces included, makes it false.
func Luhn(digits string) bool {
	if digits == "" {
		return false
	}
	sum := 0
	double := false
	for i := len(digits) - 1; i >= 0; i-- {
		c := digits[i]
		if c < '0' || c > '9' {
			return false
		}
		sum += luhnTerm(c, double)
		double = !double
	}
	return sum%10 == 0
}

// luhnTerm is the ASCII digit c's share of a Luhn sum: its value, or when
// it stands at an even place from the right (double), twice its value with
// the digits of the product added. Small enough to inline in the scanner's
// loop.
func luhnTerm(c byte, double bool) int {
	d := int(c - '0')
	if double {
		d *= 2
		if d > 9 {
			d -= 9
		}
	}
	return d
}

// Brand names the card scheme from the number's leading digits: visa (4),
// mastercard (51–55, 2221–2720), amex (34, 37), discover (6011, 644–649,
// 65), jcb (3528–3589), diners (300–305, 36, 38, 39), unionpay (62), and
// unknown for anything else, including numbers too short to tell. It does
// not check length or the Luhn digit.
//
// Ranges shared by two schemes resolve to the one listed first above that
// claims them; the ranges given do not overlap.
func Brand(number string) string {
	p2, ok2 := prefix(number, 2)
	p3, ok3 := prefix(number, 3)
	p4, ok4 := prefix(number, 4)
	switch {
	case len(number) > 0 && number[0] == '4':
		return BrandVisa
	case ok2 && p2 >= 51 && p2 <= 55, ok4 && p4 >= 2221 && p4 <= 2720:
		return BrandMastercard
	case ok2 && (p2 == 34 || p2 == 37):
		return BrandAmex
	case ok4 && p4 == 6011, ok3 && p3 >= 644 && p3 <= 649, ok2 && p2 == 65:
		return BrandDiscover
	case ok4 && p4 >= 3528 && p4 <= 3589:
		return BrandJCB
	case ok3 && p3 >= 300 && p3 <= 305, ok2 && (p2 == 36 || p2 == 38 || p2 == 39):
		return BrandDiners
	case ok2 && p2 == 62:
		return BrandUnionPay
	}
	return BrandUnknown
}

// prefix returns the first n characters of s as a number, and false when s
// is shorter or they are not all digits.
func prefix(s string, n int) (int, bool) {
	if len(s) < n {
		return 0, false
	}
	v := 0
	for i := range n {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// Expired reports whether a card expiring in month (1–12) of year4 (four
// digits) can no longer be used at now. A card is valid through the last
// instant of its expiry month in UTC, so it expires at 00:00 UTC on the
// first day of the following month. A month outside 1–12 counts as
// expired, so that a bad value can never pass for a valid card.
func Expired(month, year4 int, now time.Time) bool {
	if month < 1 || month > 12 {
		return true
	}
	end := time.Date(year4, time.Month(month)+1, 1, 0, 0, 0, 0, time.UTC)
	return !now.Before(end)
}

// Summary returns what a payment keeps of c: brand, last four digits,
// expiry, holder name and the fingerprint given (the vault's, keyed by a
// key the database never holds). Nothing in it allows a charge.
func Summary(c paygate.Card, fingerprint string) paygate.CardSummary {
	number := c.Number.Reveal()
	return paygate.CardSummary{
		Brand:       Brand(number),
		Last4:       c.Number.Last4(),
		ExpMonth:    c.ExpMonth,
		ExpYear:     c.ExpYear,
		HolderName:  c.HolderName,
		Fingerprint: fingerprint,
	}
}
