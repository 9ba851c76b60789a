package money

import (
	"math"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/currency"

	"github.com/paygate/paygate/internal/paygate"
)

func TestDigits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		code   string
		want   int
		wantOK bool
	}{
		{"OKEUR", "EUR", 2, true},
		{"OKUSD", "USD", 2, true},
		{"OKLowerCase", "eur", 2, true},
		{"OKMixedCase", "eUr", 2, true},
		{"OKJPY", "JPY", 0, true},
		{"OKKRW", "KRW", 0, true},
		{"OKCLP", "CLP", 0, true},
		{"OKISK", "ISK", 0, true},
		{"OKXOF", "XOF", 0, true},
		{"OKKWD", "KWD", 3, true},
		{"OKBHD", "BHD", 3, true},
		{"OKJOD", "JOD", 3, true},
		{"OKOMR", "OMR", 3, true},
		{"OKTND", "TND", 3, true},
		{"OKIQD", "IQD", 3, true}, // x/text says 0
		{"OKLYD", "LYD", 3, true},
		{"OKIDR", "IDR", 2, true}, // x/text says 0
		{"OKCOP", "COP", 2, true}, // x/text says 0
		{"OKHUF", "HUF", 2, true},
		{"OKMRU", "MRU", 2, true}, // unknown to x/text
		{"OKVES", "VES", 2, true}, // unknown to x/text
		{"OKSLE", "SLE", 2, true},
		{"OKZWG", "ZWG", 2, true},
		{"OKXCG", "XCG", 2, true},
		{"OKSTN", "STN", 2, true},
		{"OKBYN", "BYN", 2, true},
		{"ErrEmpty", "", 0, false},
		{"ErrTwoLetters", "EU", 0, false},
		{"ErrFourLetters", "EURO", 0, false},
		{"ErrDigit", "E1R", 0, false},
		{"ErrSpace", "EUR ", 0, false},
		{"ErrNonASCII", "EÜR", 0, false},
		{"ErrUnknown", "ABC", 0, false},
		{"ErrHistoricDEM", "DEM", 0, false},
		{"ErrHistoricLTL", "LTL", 0, false},
		{"ErrWithdrawnHRK", "HRK", 0, false},
		{"ErrWithdrawnMRO", "MRO", 0, false},
		{"ErrWithdrawnVEF", "VEF", 0, false},
		{"ErrWithdrawnCUC", "CUC", 0, false},
		{"ErrWithdrawnSLL", "SLL", 0, false},
		{"ErrWithdrawnANG", "ANG", 0, false},
		{"ErrFundsUSN", "USN", 0, false},
		{"ErrFundsCLF", "CLF", 0, false},
		{"ErrFundsCHE", "CHE", 0, false},
		{"ErrOffshoreCNH", "CNH", 0, false},
	}
	for _, code := range notMoney {
		tests = append(tests, struct {
			name   string
			code   string
			want   int
			wantOK bool
		}{"ErrNotMoney" + code, code, 0, false})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := Digits(tt.code)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Digits(%q) = %d, %v; want %d, %v", tt.code, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// TestDigitsMatchISO4217 checks the whole table against the two short ISO
// 4217 lists that are not two decimals: every accepted currency has two
// decimals unless it is on one of them.
func TestDigitsMatchISO4217(t *testing.T) {
	t.Parallel()
	zero := []string{"BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF",
		"UGX", "VND", "VUV", "XAF", "XOF", "XPF"}
	three := []string{"BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"}
	m := currencies()
	if n := len(m); n < 145 || n > 170 {
		t.Errorf("%d currencies accepted; ISO 4217 has about 155 current legal-tender codes", n)
	}
	for code, d := range m {
		want := int8(2)
		switch {
		case slices.Contains(zero, code):
			want = 0
		case slices.Contains(three, code):
			want = 3
		}
		if d != want {
			t.Errorf("%s has %d digits, ISO 4217 says %d", code, d, want)
		}
	}
	for _, code := range append(zero, three...) {
		if _, ok := m[code]; !ok {
			t.Errorf("%s is not accepted", code)
		}
	}
}

// TestCorrectionsStillNeeded fails when an upgrade of golang.org/x/text makes
// a correction redundant: drop the entry then.
func TestCorrectionsStillNeeded(t *testing.T) {
	t.Parallel()
	tender := map[string]bool{}
	for it := currency.Query(); it.Next(); {
		tender[it.Unit().String()] = true
	}
	for code, d := range isoMinorUnit {
		u, err := currency.ParseISO(code)
		if err != nil {
			t.Errorf("isoMinorUnit[%s]: x/text does not know the code: %v", code, err)
			continue
		}
		if scale, _ := currency.Standard.Rounding(u); scale == int(d) {
			t.Errorf("isoMinorUnit[%s]: x/text now reports %d itself", code, scale)
		}
		if !tender[code] {
			t.Errorf("isoMinorUnit[%s]: not a current currency in x/text", code)
		}
	}
	for code := range introducedSinceCLDR32 {
		if tender[code] {
			t.Errorf("introducedSinceCLDR32[%s]: x/text now knows it", code)
		}
	}
	for code := range withdrawnSinceCLDR32 {
		if !tender[code] {
			t.Errorf("withdrawnSinceCLDR32[%s]: x/text no longer lists it as current", code)
		}
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		amount    string
		currency  string
		want      paygate.Money
		wantParam string // "" for success
	}{
		{"OK", "10.50", "EUR", paygate.Money{Amount: 1050, Currency: "EUR"}, ""},
		{"OKOneDecimal", "10.5", "EUR", paygate.Money{Amount: 1050, Currency: "EUR"}, ""},
		{"OKWhole", "10", "EUR", paygate.Money{Amount: 1000, Currency: "EUR"}, ""},
		{"OKSmallest", "0.01", "EUR", paygate.Money{Amount: 1, Currency: "EUR"}, ""},
		{"OKLeadingZeroFraction", "0.5", "USD", paygate.Money{Amount: 50, Currency: "USD"}, ""},
		{"OKMax", "999999999.99", "EUR", paygate.Money{Amount: 99999999999, Currency: "EUR"}, ""},
		{"OKJPY", "100", "JPY", paygate.Money{Amount: 100, Currency: "JPY"}, ""},
		{"OKJPYMax", "999999999", "JPY", paygate.Money{Amount: 999999999, Currency: "JPY"}, ""},
		{"OKKWDTwoDecimals", "1.23", "KWD", paygate.Money{Amount: 1230, Currency: "KWD"}, ""},
		{"OKKWDOneDecimal", "1.2", "KWD", paygate.Money{Amount: 1200, Currency: "KWD"}, ""},
		{"OKKWDMax", "999999999.99", "KWD", paygate.Money{Amount: 999999999990, Currency: "KWD"}, ""},
		{"OKIQD", "5", "IQD", paygate.Money{Amount: 5000, Currency: "IQD"}, ""},
		{"OKLowerCaseCurrency", "1", "eur", paygate.Money{Amount: 100, Currency: "EUR"}, ""},
		{"ErrAmountEmpty", "", "EUR", paygate.Money{}, "amount"},
		{"ErrAmountZero", "0", "EUR", paygate.Money{}, "amount"},
		{"ErrAmountZeroDecimals", "0.00", "EUR", paygate.Money{}, "amount"},
		{"ErrAmountTooPrecise", "10.505", "EUR", paygate.Money{}, "amount"},
		{"ErrAmountTooPreciseKWD", "1.234", "KWD", paygate.Money{}, "amount"},
		{"ErrAmountTooPreciseJPY", "100.5", "JPY", paygate.Money{}, "amount"},
		{"ErrAmountTooPreciseJPYZeroDecimal", "100.0", "JPY", paygate.Money{}, "amount"},
		{"ErrAmountTooLarge", "1000000000", "EUR", paygate.Money{}, "amount"},
		{"ErrAmountTooLargeDecimals", "1000000000.00", "EUR", paygate.Money{}, "amount"},
		{"ErrAmountHuge", strings.Repeat("9", 40), "EUR", paygate.Money{}, "amount"},
		{"ErrAmountLeadingZero", "01.50", "EUR", paygate.Money{}, "amount"},
		{"ErrAmountNegative", "-1", "EUR", paygate.Money{}, "amount"},
		{"ErrAmountPlus", "+1", "EUR", paygate.Money{}, "amount"},
		{"ErrAmountTrailingDot", "1.", "EUR", paygate.Money{}, "amount"},
		{"ErrAmountLeadingDot", ".5", "EUR", paygate.Money{}, "amount"},
		{"ErrAmountComma", "1,50", "EUR", paygate.Money{}, "amount"},
		{"ErrAmountExponent", "1e2", "EUR", paygate.Money{}, "amount"},
		{"ErrAmountSpace", " 1", "EUR", paygate.Money{}, "amount"},
		{"ErrAmountTrailingSpace", "1 ", "EUR", paygate.Money{}, "amount"},
		{"ErrAmountTwoDots", "1.0.0", "EUR", paygate.Money{}, "amount"},
		{"ErrAmountArabicDigit", "١", "EUR", paygate.Money{}, "amount"},
		{"ErrCurrencyUnknown", "1", "ABC", paygate.Money{}, "currency"},
		{"ErrCurrencyEmpty", "1", "", paygate.Money{}, "currency"},
		{"ErrCurrencyGold", "1", "XAU", paygate.Money{}, "currency"},
		{"ErrSyntaxBeforeCurrency", "1.234", "ABC", paygate.Money{}, "amount"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.amount, tt.currency)
			if tt.wantParam == "" {
				if err != nil {
					t.Fatalf("Parse(%q, %q) error %v", tt.amount, tt.currency, err)
				}
				if got != tt.want {
					t.Errorf("Parse(%q, %q) = %+v, want %+v", tt.amount, tt.currency, got, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse(%q, %q) = %+v, want error with param %s", tt.amount, tt.currency, got, tt.wantParam)
			}
			if err.Code != paygate.CodeInvalidRequest || err.Param != tt.wantParam {
				t.Errorf("Parse(%q, %q) error %v, want INVALID_REQUEST param %s", tt.amount, tt.currency, err, tt.wantParam)
			}
			if len(tt.amount) >= 4 && strings.Contains(err.Message, tt.amount) {
				t.Errorf("message %q echoes the value", err.Message)
			}
		})
	}
}

func TestParseSyntax(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"1", "1.5", "1.50", "999999999.99", "0.01"} {
		if err := ParseSyntax(s); err != nil {
			t.Errorf("ParseSyntax(%q) = %v", s, err)
		}
	}
	for _, s := range []string{"", "0", "1.505", "1000000000", "abc", "1.2.3"} {
		err := ParseSyntax(s)
		if err == nil || err.Param != "amount" || err.Code != paygate.CodeInvalidRequest {
			t.Errorf("ParseSyntax(%q) = %v, want INVALID_REQUEST param amount", s, err)
		}
	}
}

var amountRegexp = regexp.MustCompile(`^(0|[1-9][0-9]*)(\.[0-9]{1,2})?$`)

// referenceValid is the rule of decisions.md section 3 written the slow,
// obvious way.
func referenceValid(s string) bool {
	if !amountRegexp.MatchString(s) {
		return false
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return false
	}
	maxRat, _ := new(big.Rat).SetString(MaxText)
	return r.Sign() > 0 && r.Cmp(maxRat) <= 0
}

// TestParseSyntaxMatchesRule compares the hand-written scanner with the
// regular expression on every string over a small alphabet up to length 5,
// plus boundary values.
// TestNotPositiveMessage checks decisions §15: a negative or zero amount is
// refused with a message saying that it must be greater than zero, also
// when its magnitude would be out of range; other malformed amounts keep
// the syntax message.
func TestNotPositiveMessage(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"-10.00", "-1", "-0", "-0.00", "-0.5", "0", "0.00", "0.0", "-1000000000"} {
		err := ParseSyntax(s)
		if err == nil || err.Param != "amount" || !strings.Contains(err.Message, "greater than zero") {
			t.Errorf("ParseSyntax(%q) = %v, want param amount and \"greater than zero\"", s, err)
		}
		if _, err := Parse(s, "EUR"); err == nil || !strings.Contains(err.Message, "greater than zero") {
			t.Errorf("Parse(%q, EUR) = %v, want \"greater than zero\"", s, err)
		}
	}
	for _, s := range []string{"-", "--1", "-1.", "-.5", "-1.505", "- 1", "-1e2", "-abc", "-01"} {
		err := ParseSyntax(s)
		if err == nil || err.Param != "amount" || strings.Contains(err.Message, "greater than zero") {
			t.Errorf("ParseSyntax(%q) = %v, want the syntax message", s, err)
		}
	}
}

func TestParseSyntaxMatchesRule(t *testing.T) {
	t.Parallel()
	alphabet := []byte("019.-e ")
	var walk func(prefix []byte)
	walk = func(prefix []byte) {
		s := string(prefix)
		if got, want := ParseSyntax(s) == nil, referenceValid(s); got != want {
			t.Errorf("ParseSyntax(%q) valid = %v, rule says %v", s, got, want)
		}
		if len(prefix) == 5 {
			return
		}
		for _, c := range alphabet {
			walk(append(prefix, c))
		}
	}
	walk(nil)
	for _, s := range []string{"999999999.99", "999999999.990", "1000000000", "999999999", "9999999999.99"} {
		if got, want := ParseSyntax(s) == nil, referenceValid(s); got != want {
			t.Errorf("ParseSyntax(%q) valid = %v, rule says %v", s, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"10.50", "0", "0.01", "999999999.99", "1.234", "01", "1e3", "", "١"} {
		f.Add(s, "EUR")
	}
	f.Add("1.23", "KWD")
	f.Add("100", "JPY")
	f.Fuzz(func(t *testing.T, s, cur string) {
		if got, want := ParseSyntax(s) == nil, referenceValid(s); got != want {
			t.Fatalf("ParseSyntax(%q) valid = %v, rule says %v", s, got, want)
		}
		m, err := Parse(s, cur)
		if err != nil {
			return
		}
		// A parsed amount formats back to the same value.
		r, _ := new(big.Rat).SetString(s)
		d, _ := Digits(cur)
		back := new(big.Rat).SetFrac64(m.Amount, int64(math.Pow10(d)))
		if r.Cmp(back) != 0 {
			t.Fatalf("Parse(%q, %q) = %d minor units, which is %s", s, cur, m.Amount, back.FloatString(3))
		}
	})
}

func TestFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		minor    int64
		currency string
		want     string
	}{
		{"OKZeroEUR", 0, "EUR", "0.00"},
		{"OKEUR", 550, "EUR", "5.50"},
		{"OKEURCents", 5, "EUR", "0.05"},
		{"OKEURLarge", 99999999999, "EUR", "999999999.99"},
		{"OKZeroJPY", 0, "JPY", "0"},
		{"OKJPY", 1234, "JPY", "1234"},
		{"OKZeroKWD", 0, "KWD", "0.00"},
		{"OKKWD", 500, "KWD", "0.50"},
		{"OKKWDFromInput", 1230, "KWD", "1.23"},
		{"OKKWDRoundDown", 1234, "KWD", "1.23"},
		{"OKKWDRoundHalfUp", 1235, "KWD", "1.24"},
		{"OKKWDRoundCarry", 9995, "KWD", "10.00"},
		{"OKLowerCase", 550, "eur", "5.50"},
		{"OKUnknownCurrencyTwoDecimals", 550, "ABC", "5.50"},
		{"OKNegative", -550, "EUR", "-5.50"},
		{"OKNegativeKWDRoundsAwayFromZero", -1235, "KWD", "-1.24"},
		{"OKNegativeRoundsToZero", -4, "KWD", "0.00"},
		{"OKMinInt64", math.MinInt64, "EUR", "-92233720368547758.08"},
		{"OKMaxInt64", math.MaxInt64, "JPY", "9223372036854775807"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Format(tt.minor, tt.currency); got != tt.want {
				t.Errorf("Format(%d, %q) = %q, want %q", tt.minor, tt.currency, got, tt.want)
			}
		})
	}
}

// TestFormatRoundTrip formats what Parse produced and parses it again.
func TestFormatRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, cur, out string }{
		{"10.5", "EUR", "10.50"}, {"7", "JPY", "7"}, {"1.2", "KWD", "1.20"}, {"0.01", "BHD", "0.01"},
	} {
		m, err := Parse(c.in, c.cur)
		if err != nil {
			t.Fatalf("Parse(%q, %q): %v", c.in, c.cur, err)
		}
		got := Format(m.Amount, m.Currency)
		if got != c.out {
			t.Errorf("Format(Parse(%q, %q)) = %q, want %q", c.in, c.cur, got, c.out)
		}
		if again, err := Parse(got, c.cur); err != nil || again != m {
			t.Errorf("Parse(%q, %q) = %+v, %v; want %+v", got, c.cur, again, err, m)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	Digits("EUR") // build the table outside the timing
	for _, c := range []struct{ name, currency string }{{"UpperCase", "EUR"}, {"LowerCaseCurrency", "eur"}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse("1234.56", c.currency); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkFormat(b *testing.B) {
	Digits("EUR")
	b.ReportAllocs()
	for b.Loop() {
		Format(123456, "EUR")
	}
}
