package money

import (
	"sync"

	"golang.org/x/text/currency"
)

// Digits returns the ISO 4217 minor-unit digits of a current currency one
// can pay with: 2 for EUR, 0 for JPY, 3 for KWD. code is matched
// case-insensitively. It reports false for anything else: codes that are
// not three letters, unknown codes, withdrawn codes (DEM, HRK, VEF), funds
// codes (USN, CLF, CHE) and the codes decisions.md section 3 names as not
// money (XAU, XAG, XPD, XPT, XDR, XSU, XUA, XBA–XBD, XTS, XXX).
func Digits(code string) (int, bool) {
	_, d, ok := lookup(code)
	return d, ok
}

// lookup is Digits that also returns the upper-case code, without
// allocating when code is upper-case already.
func lookup(code string) (string, int, bool) {
	if len(code) != 3 {
		return "", 0, false
	}
	var key [3]byte
	changed := false
	for i := range 3 {
		c := code[i]
		switch {
		case c >= 'A' && c <= 'Z':
		case c >= 'a' && c <= 'z':
			c -= 'a' - 'A'
			changed = true
		default:
			return "", 0, false
		}
		key[i] = c
	}
	d, ok := currencies()[string(key[:])]
	if !ok {
		return "", 0, false
	}
	if changed {
		code = string(key[:])
	}
	return code, int(d), true
}

// currencies maps each accepted code to its minor-unit digits. It is built
// once, on first use, from x/text's list of the currencies that are legal
// tender somewhere today (currency.Query() without options: funds codes
// and the X codes are not tender, withdrawn codes have an end date), with
// the corrections below applied.
var currencies = sync.OnceValue(func() map[string]int8 {
	m := make(map[string]int8, 160)
	for it := currency.Query(); it.Next(); {
		u := it.Unit()
		scale, _ := currency.Standard.Rounding(u)
		m[u.String()] = int8(scale)
	}
	for code := range withdrawnSinceCLDR32 {
		delete(m, code)
	}
	for code, d := range introducedSinceCLDR32 {
		m[code] = d
	}
	for code, d := range isoMinorUnit {
		if _, ok := m[code]; ok {
			m[code] = d
		}
	}
	for _, code := range notMoney {
		delete(m, code)
	}
	return m
})

// The corrections. x/text cannot tell that these changed, because its data
// stops in 2017; each entry is checked by a test against what x/text
// reports, so a stale one is noticed when x/text is upgraded.
var (
	// isoMinorUnit is the ISO 4217 minor unit of currencies for which x/text
	// reports something else. x/text gives CLDR's "standard" rounding: the
	// decimals CLDR recommends for display, which drops minor units that are
	// worthless in practice (IQD 0, IDR 0). Card schemes and providers use
	// the ISO 4217 minor unit, and so does this service.
	isoMinorUnit = map[string]int8{
		"AFN": 2, "ALL": 2, "AMD": 2, "COP": 2, "GYD": 2, "IDR": 2, "IQD": 3,
		"IRR": 2, "KPW": 2, "LAK": 2, "LBP": 2, "MGA": 2, "MMK": 2, "MNT": 2,
		"MUR": 2, "PKR": 2, "RSD": 2, "SOS": 2, "SYP": 2, "TZS": 2, "UZS": 2,
		"YER": 2,
	}

	// introducedSinceCLDR32 are legal-tender currencies that ISO 4217 added
	// after CLDR 32, unknown to x/text, with their ISO minor units.
	introducedSinceCLDR32 = map[string]int8{
		"MRU": 2, // Mauritania, replaced MRO in 2018
		"VES": 2, // Venezuela, replaced VEF in 2018
		"SLE": 2, // Sierra Leone, replaced SLL in 2022
		"ZWG": 2, // Zimbabwe gold, 2024
		"XCG": 2, // Caribbean guilder (Curaçao, Sint Maarten), replaced ANG in 2025
	}

	// withdrawnSinceCLDR32 are codes x/text still reports as legal tender but
	// ISO 4217 has withdrawn (moved to its list of historic codes).
	withdrawnSinceCLDR32 = map[string]bool{
		"MRO": true, // by MRU, 2018
		"VEF": true, // by VES, 2018
		"CUC": true, // Cuba's convertible peso, ended 2021
		"SLL": true, // by SLE
		"HRK": true, // Croatia adopted EUR, 2023
		"ANG": true, // by XCG, 2025
	}
)

// notMoney are the codes decisions.md section 3 refuses as not money one
// can pay with. x/text already leaves them out of legal tender; the list is
// applied anyway so that the rule holds whatever x/text's data says.
var notMoney = []string{
	"XAU", "XAG", "XPD", "XPT", "XDR", "XSU", "XUA",
	"XBA", "XBB", "XBC", "XBD", "XTS", "XXX",
}
