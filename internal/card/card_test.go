package card

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

func TestLuhn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		digits string
		want   bool
	}{
		{"OK", "4242424242424242", true},
		{"OKMastercard", "5555555555554444", true},
		{"OKAmex15Digits", "378282246310005", true},
		{"OK13Digits", "4222222222222", true},
		{"OK19Digits", withCheckDigit("601100099013942400"), true},
		{"OKSingleZero", "0", true},
		{"ErrLuhn", "4242424242424241", false},
		{"ErrLuhnTransposed", "2442424242424242", false},
		{"ErrEmpty", "", false},
		{"ErrSpace", "4242 4242 4242 4242", false},
		{"ErrLetter", "424242424242424a", false},
		{"ErrSign", "-4242424242424242", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Luhn(tt.digits); got != tt.want {
				t.Errorf("Luhn(len %d) = %v, want %v", len(tt.digits), got, tt.want)
			}
		})
	}
}

// TestLuhnTestCards checks every number of the sandbox test-card table.
func TestLuhnTestCards(t *testing.T) {
	t.Parallel()
	for _, n := range []string{
		"4242424242424242", "5555555555554444", "378282246310005",
		"4000000000000077", "4000000000003220", "4000008400001629",
		"4000000000000002", "4000000000009995", "4000000000000069",
		"4000000000000127", "4000000000000119", "4000000000000259",
		"4000000000000705", "4000000000005126",
	} {
		if !Luhn(n) {
			t.Errorf("test card ending %s fails Luhn", n[len(n)-4:])
		}
	}
}

// TestLuhnSingleDigitErrors checks that changing any one digit of a valid
// number breaks the check, which is what Luhn guarantees.
func TestLuhnSingleDigitErrors(t *testing.T) {
	t.Parallel()
	valid := []byte("4242424242424242")
	for i := range valid {
		for d := byte('0'); d <= '9'; d++ {
			if d == valid[i] {
				continue
			}
			n := bytes.Clone(valid)
			n[i] = d
			if Luhn(string(n)) {
				t.Errorf("digit %d changed to %c still passes", i, d)
			}
		}
	}
}

// luhnReference is an independent, obviously-correct Luhn computation.
func luhnReference(s string) bool {
	total := 0
	for i := range len(s) {
		d := int(s[len(s)-1-i] - '0')
		if i%2 == 1 {
			d = d * 2
			d = d/10 + d%10
		}
		total += d
	}
	return total%10 == 0
}

// withCheckDigit appends the Luhn check digit to body.
func withCheckDigit(body string) string {
	for d := '0'; d <= '9'; d++ {
		if s := body + string(d); luhnReference(s) {
			return s
		}
	}
	panic("unreachable")
}

func TestBrand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, number, want string
	}{
		{"OKVisa", "4242424242424242", BrandVisa},
		{"OKMastercard51", "5105105105105100", BrandMastercard},
		{"OKMastercard55", "5555555555554444", BrandMastercard},
		{"OKMastercard2221", "2221000000000009", BrandMastercard},
		{"OKMastercard2720", "2720990000000000", BrandMastercard},
		{"OKAmex34", "340000000000009", BrandAmex},
		{"OKAmex37", "378282246310005", BrandAmex},
		{"OKDiscover6011", "6011111111111117", BrandDiscover},
		{"OKDiscover644", "6445644564456445", BrandDiscover},
		{"OKDiscover649", "6490000000000000", BrandDiscover},
		{"OKDiscover65", "6500000000000002", BrandDiscover},
		{"OKJCB3528", "3528000000000000", BrandJCB},
		{"OKJCB3589", "3589000000000000", BrandJCB},
		{"OKDiners300", "30000000000004", BrandDiners},
		{"OKDiners305", "30569309025904", BrandDiners},
		{"OKDiners36", "36227206271667", BrandDiners},
		{"OKDiners38", "38520000023237", BrandDiners},
		{"OKDiners39", "39000000000000", BrandDiners},
		{"OKUnionPay", "6200000000000005", BrandUnionPay},
		{"ErrMastercard50", "5000000000000000", BrandUnknown},
		{"ErrMastercard56", "5600000000000000", BrandUnknown},
		{"ErrMastercard2220", "2220990000000000", BrandUnknown},
		{"ErrMastercard2721", "2721000000000000", BrandUnknown},
		{"ErrDiscover6010", "6010000000000000", BrandUnknown},
		{"ErrDiscover643", "6430000000000000", BrandUnknown},
		{"ErrJCB3527", "3527000000000000", BrandUnknown},
		{"ErrJCB3590", "3590000000000000", BrandUnknown},
		{"ErrDiners306", "30600000000000", BrandUnknown},
		{"ErrDiners35Short", "35", BrandUnknown},
		{"ErrEmpty", "", BrandUnknown},
		{"ErrNotDigits", "5a00000000000000", BrandUnknown},
		{"ErrOther", "1000000000000000", BrandUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Brand(tt.number); got != tt.want {
				t.Errorf("Brand(prefix %.4s) = %q, want %q", tt.number, got, tt.want)
			}
		})
	}
}

// TestBrandMastercardRange walks the whole 2-series range boundary by
// boundary.
func TestBrandMastercardRange(t *testing.T) {
	t.Parallel()
	for p := 2200; p <= 2799; p++ {
		want := BrandUnknown
		if p >= 2221 && p <= 2720 {
			want = BrandMastercard
		}
		if got := Brand(fmt.Sprintf("%d000000000000", p)); got != want {
			t.Errorf("Brand(%d...) = %q, want %q", p, got, want)
		}
	}
}

func TestExpired(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		month, year int
		now         time.Time
		want        bool
	}{
		{"OKLastInstantOfMonth", 3, 2027, time.Date(2027, 3, 31, 23, 59, 59, 999999999, time.UTC), false},
		{"OKFuture", 12, 2030, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{"OKDecemberRollsYear", 12, 2027, time.Date(2027, 12, 31, 12, 0, 0, 0, time.UTC), false},
		{"OKOtherZoneStillInMonthUTC", 3, 2027, time.Date(2027, 4, 1, 0, 30, 0, 0, time.FixedZone("CET", 3600)), false},
		{"ErrExpiredFirstInstantNextMonth", 3, 2027, time.Date(2027, 4, 1, 0, 0, 0, 0, time.UTC), true},
		{"ErrExpiredDecember", 12, 2027, time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{"ErrExpiredLastYear", 6, 2026, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{"ErrExpiredOtherZonePastMonthUTC", 3, 2027, time.Date(2027, 3, 31, 20, 0, 0, 0, time.FixedZone("PDT", -7*3600)), true},
		{"ErrMonthZero", 0, 2030, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{"ErrMonth13", 13, 2030, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Expired(tt.month, tt.year, tt.now); got != tt.want {
				t.Errorf("Expired(%d, %d, %v) = %v, want %v", tt.month, tt.year, tt.now, got, tt.want)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	t.Parallel()
	c := paygate.Card{
		Number:     "378282246310005",
		ExpMonth:   4,
		ExpYear:    2031,
		CVV:        "1234",
		HolderName: "Ada Lovelace",
	}
	got := Summary(c, "fp-of-the-vault")
	want := paygate.CardSummary{
		Brand:       BrandAmex,
		Last4:       "0005",
		ExpMonth:    4,
		ExpYear:     2031,
		HolderName:  "Ada Lovelace",
		Fingerprint: "fp-of-the-vault",
	}
	if got != want {
		t.Errorf("Summary = %+v, want %+v", got, want)
	}
	if s := fmt.Sprintf("%+v", got); bytes.Contains([]byte(s), []byte("378282246310005")) {
		t.Error("summary contains the full number")
	}
}

func BenchmarkLuhn(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Luhn("4242424242424242")
	}
}

func BenchmarkBrand(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Brand("6011111111111117")
	}
}
