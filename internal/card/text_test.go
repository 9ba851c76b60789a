package card

import (
	"math/rand/v2"
	"regexp"
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
		{"CardThenCVV", "4242424242424242 123", true},
		{"AmexThenCVV", "378282246310005 1234", true},
		{"GroupedCardThenCVV", "4242 4242 4242 4242 123", true},
		{"AfterHouseNumber", "Apt 5 4111 1111 1111 1111", true},
		{"AfterShortNumber", "12 4242424242424242", true},
		{"BetweenShortNumbers", "1 2 4242424242424242 3 4", true},
		{"DashSuffix", "4242424242424242-1", true},
		{"DoubleSpaces", "4242  4242  4242  4242", true},
		{"ManySeparators", "4242 -- 4242  -  4242---4242", true},
		{"LongGroupedRunStartsWithCard", "4242 4242 4242 4242 4242", true},
		{"AfterLongChunk", "12345678901234567890 4242424242424242", true},
		{"BeforeLongChunk", "4242424242424242 12345678901234567890", true},
		{"NineteenInChunks", "1 6011 0000 0000 0000 001 9", true},
		{"ThirteenInChunks", "9 4 2 2 2 2 2 2 2 2 2 2 2 2 9", true},
		{"OKDotsSplit", "4242.4242.4242.4242", false},
		{"OKTwentyDigitsAlone", "12345678901234567890", false},
		{"OKLongChunkThenShort", "42424242424242421234 5", false},
		{"OKDate", "2023-11-25", false},
		{"OKDates", "2023-11-25 until 2024-01-01", false},
		{"OKNotLuhnThenCVV", "4242424242424241 124", false},
		{"OKNotLuhnAfterHouseNumber", "Apt 5 4111 1111 1111 1112", false},
		{"OKCardSplitByComma", "4242 4242, 4242 4242", false},
		{"OKTwentyOneDigitChunks", "5-4-3-6-2-4-5-2-4-3-5-3-2-6-4-6-6-2-6-5", false},
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
			if got := referenceContainsNumber(tt.text); got != tt.want {
				t.Errorf("the reference says %v for %q, want %v", got, tt.text, tt.want)
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

// runPattern and chunkPattern spell out the rule of ContainsNumber plainly:
// a run is digit groups (chunks) joined by one or more spaces or dashes.
var (
	runPattern   = regexp.MustCompile(`[0-9]+(?:[ -]+[0-9]+)*`)
	chunkPattern = regexp.MustCompile(`[0-9]+`)
)

// referenceContainsNumber is the rule of ContainsNumber written the slow,
// obvious way: every contiguous sequence of whole chunks of every run.
func referenceContainsNumber(s string) bool {
	for _, run := range runPattern.FindAllString(s, -1) {
		chunks := chunkPattern.FindAllString(run, -1)
		for i := range chunks {
			for j := i; j < len(chunks); j++ {
				n := strings.Join(chunks[i:j+1], "")
				if len(n) >= 13 && len(n) <= 19 && n[0] >= '2' && n[0] <= '6' && Luhn(n) {
					return true
				}
			}
		}
	}
	return false
}

// TestContainsNumberMatchesReference compares ContainsNumber with the
// reference on the table's texts and on random texts built from digits,
// separators and other characters, with card numbers mixed in.
func TestContainsNumberMatchesReference(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(17, 15))
	cards := []string{"4242424242424242", "378282246310005", "6011000000000000001", "4222222222222", "4242 4242 4242 4242"}
	alphabet := "0123456789012345678942424242  --  .,a\n"
	found := 0
	for range 20000 {
		var b strings.Builder
		for range r.IntN(40) {
			if r.IntN(30) == 0 {
				b.WriteString(cards[r.IntN(len(cards))])
				continue
			}
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		text := b.String()
		want := referenceContainsNumber(text)
		if want {
			found++
		}
		if got := ContainsNumber(text); got != want {
			t.Fatalf("ContainsNumber(%q) = %v, the reference says %v", text, got, want)
		}
	}
	if found < 1000 || found > 19000 {
		t.Fatalf("%d of 20000 random texts hold a number: the test does not test both ways", found)
	}
}
