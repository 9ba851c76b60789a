package card

// maxDigits is the most digits a card number has; with at least one digit
// in each chunk, it is also the most chunks a candidate can span.
const maxDigits = 19

// ContainsNumber reports whether the text s holds what looks like a card
// number (decisions §15), for fields where none belongs.
//
// The text is split into runs of digits: one or more spaces or dashes
// between two digits continue a run ("4242 4242-4242  4242"), anything
// else (other characters, a separator not followed by a digit, the end of
// the text) ends it. The digit groups of a run, between its separators,
// are its chunks. The text holds a card number when some contiguous
// sequence of whole chunks of one run has 13 to 19 digits in all, starts
// with 2, 3, 4, 5 or 6 (the schemes' major industry identifiers) and
// passes the Luhn check. So a card number is found whatever stands next to
// it in the run: "4242424242424242 123" (a CVV after it), "Apt 5 4111 1111
// 1111 1111", "12 4242424242424242", "4242424242424242-1".
//
// A chunk is never split: a single chunk of 20 digits or more (an order
// number, IBAN digits, a timestamp) is not a card number even though
// 16-digit windows of it may pass Luhn, and no sequence holding it is
// either. Twelve digits or fewer are too short for any card.
//
// It takes a string or bytes and allocates nothing. It reads s once, and
// at the end of each chunk re-reads the digits of the few chunks before it
// (at most 19 digits) to test the sequences that end there.
func ContainsNumber[T ~string | ~[]byte](s T) bool {
	// The run's last chunks, as [start, end) offsets in s: chunk k of the
	// run is chunks[k%maxDigits]; n is the number of chunks so far.
	var chunks [maxDigits][2]int
	n := 0
	for i := 0; i < len(s); {
		if !isDigit(s[i]) {
			i++
			continue
		}
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i-start > maxDigits {
			n = 0 // no sequence can hold this chunk: start again after it
		} else {
			chunks[n%maxDigits] = [2]int{start, i}
			n++
			if endsCardNumber(s, &chunks, n) {
				return true
			}
		}
		sep := i
		for i < len(s) && (s[i] == ' ' || s[i] == '-') {
			i++
		}
		if i == sep || i == len(s) || !isDigit(s[i]) {
			n = 0 // the run ended
		}
	}
	return false
}

// endsCardNumber reports whether a sequence of whole chunks ending with the
// run's latest chunk (chunk n-1) is a card number. It computes Luhn from
// the right, extending the sequence one chunk to the left at a time.
func endsCardNumber[T ~string | ~[]byte](s T, chunks *[maxDigits][2]int, n int) bool {
	sum, digits := 0, 0
	double := false
	for k := n - 1; k >= 0 && k >= n-maxDigits; k-- {
		c := chunks[k%maxDigits]
		if digits+c[1]-c[0] > maxDigits {
			return false
		}
		for j := c[1] - 1; j >= c[0]; j-- {
			d := int(s[j] - '0')
			if double {
				d *= 2
				if d > 9 {
					d -= 9
				}
			}
			sum += d
			double = !double
		}
		digits += c[1] - c[0]
		if digits >= 13 && s[c[0]] >= '2' && s[c[0]] <= '6' && sum%10 == 0 {
			return true
		}
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
