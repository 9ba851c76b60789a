package card

import (
	"strings"
	"testing"
)

func TestContainsNumber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want bool
	}{
		{"Visa", "4242424242424242", true},
		{"Mastercard2Series", "2223003122003222", true},
		{"Amex15", "378282246310005", true},
		{"Discover", "6011111111111117", true},
		{"Diners14", "30569309025904", true},
		{"Thirteen", "4222222222222", true},
		{"Nineteen", "6011000000000000001", true},
		{"Embedded", "pay 4242 4242 4242 4242 now", true},
		{"EmbeddedInWord", "card:4242424242424242!", true},
		{"Dashes", "4242-4242-4242-4242", true},
		{"Spaces", "4242 4242 4242 4242", true},
		{"Mixed", "4242 4242-4242 4242", true},
		{"AmexGrouped", "3782 822463 10005", true},
		{"AfterOtherNumbers", "order 12 of 3, card 5555555555554444", true},
		{"Bytes", "x 5555 5555 5555 4444", true},
		{"OKNotLuhn", "4242424242424241", false},
		{"OKNotLuhnGrouped", "4242 4242 4242 4241", false},
		{"OKStartsWith1", "1234567812345670", false},
		{"OKStartsWith7", "7992739871300008", false},
		{"OKStartsWith8", "8000000000000003", false},
		{"OKStartsWith9", "9000000000000001", false},
		{"OKStartsWith0", "0000000000000018", false},
		{"OKTwelveDigits", "424242424242", false},
		{"OKTwelveLuhnDigits", "400000000002", false},
		{"OKTwentyDigits", "42424242424242424242", false},
		{"OKTwentyDigitsWithLuhnWindow", "4242424242424242" + "1234", false},
		{"OKLongRunGrouped", "4242 4242 4242 4242 4242", false},
		{"OKDoubleSpaceSplits", "4242  4242  4242  4242", false},
		{"OKDotsSplit", "4242.4242.4242.4242", false},
		{"OKTrailingSeparator", "42424242- 42424242", false},
		{"OKText", "Flat 4, 221B Baker Street", false},
		{"OKEmpty", "", false},
		{"OKPhone", "+44 20 7946 0000", false},
		{"OKShortRunsAround", "12-34 4242424242424241 56", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ContainsNumber(tt.text); got != tt.want {
				t.Errorf("ContainsNumber(%q) = %v, want %v", tt.text, got, tt.want)
			}
			if got := ContainsNumber([]byte(tt.text)); got != tt.want {
				t.Errorf("ContainsNumber([]byte(%q)) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

// TestContainsNumberAgreesWithLuhn checks every test card of the package's
// Luhn tests: a valid number is found alone and grouped by fours.
func TestContainsNumberAgreesWithLuhn(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"4242424242424242", "4000056655665556", "5555555555554444", "2223003122003222",
		"5200828282828210", "378282246310005", "371449635398431", "6011111111111117", "3056930009020004", "3566002020360505", "6200000000000005"} {
		if !Luhn(n) {
			t.Fatalf("%s is not a Luhn number", n)
		}
		var grouped strings.Builder
		for i := 0; i < len(n); i += 4 {
			if i > 0 {
				grouped.WriteByte(' ')
			}
			grouped.WriteString(n[i:min(i+4, len(n))])
		}
		if !ContainsNumber(n) || !ContainsNumber(grouped.String()) {
			t.Errorf("%s (%s) not found", n, grouped.String())
		}
	}
}

func TestContainsNumberAllocates(t *testing.T) {
	text := "Flat 4, 221B Baker Street, pay 4242 4242 4242 4241 and order 1234567890123456789012"
	if n := testing.AllocsPerRun(100, func() { ContainsNumber(text) }); n != 0 {
		t.Errorf("ContainsNumber allocates %v times", n)
	}
}

func BenchmarkContainsNumber(b *testing.B) {
	text := strings.Repeat("12 Analytical Row, London N1 9GU ", 8)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		ContainsNumber(text)
	}
}

// TestContainsNumberPrefixCasesPassLuhn keeps the prefix cases above
// honest: they are refused for their first digit, not their check digit.
func TestContainsNumberPrefixCasesPassLuhn(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"1234567812345670", "7992739871300008", "8000000000000003", "9000000000000001", "0000000000000018", "400000000002"} {
		if !Luhn(n) {
			t.Errorf("%s does not pass Luhn", n)
		}
	}
}
