package card

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
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
		{"LongGroupedRunStartsWithCard", "4242 4242 4242 4242 4242", true},
		{"LongGroupedRunEndsWithCard", "4242 4242 4242 4242 4242 4242", true},
		{"AfterLongChunk", "12345678901234567890 4242424242424242", true},
		{"BeforeLongChunk", "4242424242424242 12345678901234567890", true},
		{"Grouped19InRun", "1 6011 0000 0000 0000 001 9", true},
		{"GroupedAmexInRun", "1 3782 822463 10005 9", true},
		{"GroupedDinersInRun", "7 3056 930902 5904", true},
		{"Grouped15InFoursInRun", "1 3782 8224 6310 005", true},
		{"Grouped13InFoursInRun", "9 4222 2222 2222 2 9", true},
		{"WholeRunOddGroups", "424 242 424 242 4242", true},
		{"WholeRunSingleDigits", "4 2 2 2 2 2 2 2 2 2 2 2 2", true},
		{"WholeRunTenSix", "4242424242-424242", true},
		// The literal rule of §15: two dates joined by one space are one
		// run of 16 digits, and this pair passes Luhn (about one pair in
		// ten does). Joined by " - " or with a third date, they are not.
		{"TwoDatesOneSpaceLuhn", "2024-01-01 2024-02-28", true},
		{"OKTwoDatesOneSpaceNotLuhn", "2024-01-01 2024-03-31", false},
		{"OKDoubleSpaces", "4242  4242  4242  4242", false},
		{"OKManySeparators", "4242 -- 4242  -  4242---4242", false},
		{"OKSpaceDash", "4242 -4242- 4242 - 4242", false},
		{"OKArbitraryStretch", "9 42 4242 4242 4242 42 9", false},
		{"OKNotAGroupingInRun", "1 4242424242 424242", false},
		{"OKSingleDigitsInLongerRun", "9 4 2 2 2 2 2 2 2 2 2 2 2 2 9", false},
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

// TestContainsNumberAcceptsOrdinaryText checks text that a review found
// refused by an earlier rule (dates, phone numbers, identifiers next to
// each other): none of it is a card number.
func TestContainsNumberAcceptsOrdinaryText(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"2024-01-01 - 2024-02-28",
		"2024-01-01 2024-02-28 2024-03-31",
		"from 2023-11-25 - 2024-01-01 - 2024-06-30",
		"555-123-0004 555-987-6543",
		"call 555-123-0004 or 555-987-6543",
		"+1 555 123 0004",
		"+1 555 123 0004 +1 555 987 6543",
		"1 2 3 4 5 6 7 8",
		"Order 12345678901234567890",
		"Flat 12, 34 Long Road",
		"90210-1234", "10115 Berlin", "75008", "SW1A 1AA", "EC1A 1BB", "1012 AB Amsterdam", "H3Z 2Y7", "2000 Sydney", "560 001", "01310-200",
	} {
		if ContainsNumber(text) || ContainsNumber([]byte(text)) || referenceContainsNumber(text) {
			t.Errorf("%q is refused as a card number", text)
		}
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
// a run is digit groups (chunks) joined by a single space or dash.
var (
	runPattern   = regexp.MustCompile(`[0-9]+(?:[ -][0-9]+)*`)
	chunkPattern = regexp.MustCompile(`[0-9]+`)
)

// referenceGroupings are the card groupings of ContainsNumber, as chunk
// lengths.
var referenceGroupings = []string{"4 4 4 4", "4 4 4 4 3", "4 6 5", "4 6 4", "4 4 4 3", "4 4 4 1"}

// referenceContainsNumber is the rule of ContainsNumber written the slow,
// obvious way: for every run, the whole run, every chunk, and every
// stretch of chunks whose lengths are a card grouping.
func referenceContainsNumber(s string) bool {
	isCard := func(n string) bool {
		return len(n) >= 13 && len(n) <= 19 && n[0] >= '2' && n[0] <= '6' && Luhn(n)
	}
	for _, run := range runPattern.FindAllString(s, -1) {
		chunks := chunkPattern.FindAllString(run, -1)
		if isCard(strings.Join(chunks, "")) {
			return true
		}
		for i := range chunks {
			if isCard(chunks[i]) {
				return true
			}
			for j := i; j < len(chunks); j++ {
				lengths := make([]string, 0, j+1-i)
				for _, c := range chunks[i : j+1] {
					lengths = append(lengths, strconv.Itoa(len(c)))
				}
				if slices.Contains(referenceGroupings, strings.Join(lengths, " ")) && isCard(strings.Join(chunks[i:j+1], "")) {
					return true
				}
			}
		}
	}
	return false
}

// TestContainsNumberMatchesReference compares ContainsNumber with the
// reference on random texts of two kinds: digits, separators and other
// characters with card numbers mixed in; and runs of random chunks of the
// lengths that matter (groupings, whole runs, long chunks), mostly joined
// by single separators.
func TestContainsNumberMatchesReference(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(17, 15))
	cards := []string{"4242424242424242", "378282246310005", "6011000000000000001", "4222222222222", "4242 4242 4242 4242",
		"3782 822463 10005", "3056 930902 5904", "6011-0000-0000-0000-001", "4222 2222 2222 2", "3782 8224 6310 005", "4 2 2 2 2 2 2 2 2 2 2 2 2"}
	alphabet := "0123456789012345678942424242  --  .,a\n"
	chunkLengths := []int{1, 1, 2, 3, 4, 4, 4, 4, 5, 6, 6, 13, 15, 16, 19, 20}
	joins := []string{" ", " ", " ", "-", "-", "  ", " -", ",", "x"}
	compare := func(kind string, texts func() string) {
		found := 0
		for range 20000 {
			text := texts()
			want := referenceContainsNumber(text)
			if want {
				found++
			}
			if got := ContainsNumber(text); got != want {
				t.Fatalf("ContainsNumber(%q) = %v, the reference says %v", text, got, want)
			}
		}
		if found < 1000 || found > 19000 {
			t.Fatalf("%d of 20000 random %s hold a number: the test does not test both ways", found, kind)
		}
	}
	compare("texts", func() string {
		var b strings.Builder
		for range r.IntN(40) {
			if r.IntN(30) == 0 {
				b.WriteString(cards[r.IntN(len(cards))])
				continue
			}
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	})
	compare("runs", func() string {
		var b strings.Builder
		for k := range 1 + r.IntN(8) {
			if k > 0 {
				b.WriteString(joins[r.IntN(len(joins))])
			}
			for range chunkLengths[r.IntN(len(chunkLengths))] {
				b.WriteByte(byte('0' + r.IntN(10)))
			}
		}
		return b.String()
	})
}

// FuzzContainsNumber compares ContainsNumber with the reference, and the
// string form with the bytes form, on arbitrary text.
func FuzzContainsNumber(f *testing.F) {
	for _, s := range []string{"4242 4242 4242 4242", "Apt 5 4111 1111 1111 1111", "2024-01-01 - 2024-02-28",
		"555-123-0004 555-987-6543", "1 3782 822463 10005 9", "4242  4242  4242  4242", "42424242424242421234 5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := ContainsNumber(s)
		if want := referenceContainsNumber(s); got != want {
			t.Fatalf("ContainsNumber(%q) = %v, the reference says %v", s, got, want)
		}
		if ContainsNumber([]byte(s)) != got {
			t.Fatalf("ContainsNumber disagrees with itself on the bytes of %q", s)
		}
	})
}
