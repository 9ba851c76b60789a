package card

// groupings are the ways card numbers are printed in groups, as the
// lengths of their groups: 16 digits in fours (most brands), 19 digits in
// fours and a three, American Express 4-6-5, Diners Club 4-6-4, 15 and 13
// digits in fours and the rest.
var groupings = [...][]int{
	{4, 4, 4, 4},
	{4, 4, 4, 4, 3},
	{4, 6, 5},
	{4, 6, 4},
	{4, 4, 4, 3},
	{4, 4, 4, 1},
}

// maxGrouping is the most groups in a grouping: how many of a run's
// chunks ContainsNumber keeps.
const maxGrouping = 5

// ContainsNumber reports whether the text s holds what looks like a card
// number (decisions §15), for fields where none belongs.
//
// The text is split into runs of digits: a single space or a single dash
// between two digits continues a run ("4242 4242-4242 4242"); anything else
// ends it: two separators in a row, any other character, the start or the
// end of the text. So "4242  4242  4242  4242" (double spaces) is four
// runs and no card number, and neither is "2024-01-01 - 2024-02-28". The
// digit groups of a run, between its separators, are its chunks.
//
// The text holds a card number when, for some run, one of these
// candidates has 13 to 19 digits, starts with 2, 3, 4, 5 or 6 (the
// schemes' major industry identifiers) and passes the Luhn check:
//   - the whole run, its separators left out: the literal rule of §15;
//   - a single chunk: so a card number is found with a CVV or a house
//     number next to it ("4242424242424242 123", "12 4242424242424242",
//     "4242424242424242-1");
//   - consecutive chunks whose lengths are a card's printed grouping
//     (4-4-4-4, 4-4-4-4-3, 4-6-5, 4-6-4, 4-4-4-3, 4-4-4-1), so "Apt 5
//     4111 1111 1111 1111" is found.
//
// Nothing else is a candidate: dates, phone numbers and other runs of
// short chunks are text ("555-123-0004 555-987-6543" is one run of 20
// digits, none of them a candidate). A chunk of 20 digits or more (an
// order number, IBAN digits, a timestamp) is an identifier: it is no
// candidate, even though 16-digit windows of it may pass Luhn, and a run
// holding it has too many digits to be one.
//
// It takes a string or bytes and allocates nothing. It reads s once; at
// the end of each chunk and of each run it reads again the digits of the
// few candidates that end there (at most 19 digits each).
func ContainsNumber[T ~string | ~[]byte](s T) bool {
	// The run's last chunks, as [start, end) offsets in s: chunk k of the
	// run is chunks[k%maxGrouping]; n is the number of chunks so far.
	var chunks [maxGrouping][2]int
	n, runStart, runDigits := 0, 0, 0
	for i := 0; i < len(s); {
		if !isDigit(s[i]) {
			i++
			continue
		}
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if n == 0 {
			runStart, runDigits = start, 0
		}
		chunks[n%maxGrouping] = [2]int{start, i}
		n++
		runDigits += i - start
		if l := i - start; l >= 13 && l <= maxDigits && isCardNumber(s, start, i) {
			return true
		}
		if endsGrouping(s, &chunks, n) {
			return true
		}
		if i+1 < len(s) && (s[i] == ' ' || s[i] == '-') && isDigit(s[i+1]) {
			i++ // one separator between two digits: the run goes on
			continue
		}
		if n > 1 && runDigits >= 13 && runDigits <= maxDigits && isCardNumber(s, runStart, i) {
			return true
		}
		n = 0 // the run ended
	}
	return false
}

// maxDigits is the most digits a card number has.
const maxDigits = 19

// endsGrouping reports whether the run's latest chunks (the last of them
// is chunk n-1) have the lengths of a card grouping and are a card number.
func endsGrouping[T ~string | ~[]byte](s T, chunks *[maxGrouping][2]int, n int) bool {
	for _, g := range groupings {
		if len(g) > n {
			continue
		}
		first := n - len(g)
		match := true
		for j, want := range g {
			c := chunks[(first+j)%maxGrouping]
			if c[1]-c[0] != want {
				match = false
				break
			}
		}
		if match && isCardNumber(s, chunks[first%maxGrouping][0], chunks[(n-1)%maxGrouping][1]) {
			return true
		}
	}
	return false
}

// isCardNumber reports whether the digits of s[from:to] (separators are
// skipped) are 13 to 19 digits starting with 2 to 6 and pass Luhn.
func isCardNumber[T ~string | ~[]byte](s T, from, to int) bool {
	sum, digits := 0, 0
	double := false
	first := byte(0)
	for j := to - 1; j >= from; j-- {
		if !isDigit(s[j]) {
			continue
		}
		sum += luhnTerm(s[j], double)
		double = !double
		digits++
		first = s[j]
	}
	return digits >= 13 && digits <= maxDigits && first >= '2' && first <= '6' && sum%10 == 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
