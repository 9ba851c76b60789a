package card

// ContainsNumber reports whether the text s holds what looks like a card
// number (decisions §15), for fields where none belongs: a run of 13 to 19
// ASCII digits that passes the Luhn check and starts with 2, 3, 4, 5 or 6
// (the schemes' major industry identifiers). A single space or dash
// between two digits continues the run, so "4242 4242 4242 4242" and
// "4242-4242-4242-4242" are one run of 16 digits, found anywhere in the
// text ("pay 4242 4242 4242 4242 now").
//
// A run is maximal: digits (and separators between digits) on both sides
// belong to it. A run of 20 digits or more is not a card number, even
// though it contains 16-digit windows that pass Luhn: the rule is about a
// run of 13–19 digits, and long numeric identifiers (order numbers, IBAN
// digits, timestamps) are common in free text. Twelve digits or fewer are
// too short for any card.
//
// It takes a string or bytes, allocates nothing and reads s once for the
// runs plus once more for each run of card length.
func ContainsNumber[T ~string | ~[]byte](s T) bool {
	for i := 0; i < len(s); {
		if !isDigit(s[i]) {
			i++
			continue
		}
		start, digits := i, 0
		end := i
		for i < len(s) {
			if isDigit(s[i]) {
				digits++
				i++
				end = i
				continue
			}
			if (s[i] == ' ' || s[i] == '-') && i+1 < len(s) && isDigit(s[i+1]) {
				i++
				continue
			}
			break
		}
		if digits >= 13 && digits <= 19 && s[start] >= '2' && s[start] <= '6' && luhnRun(s[start:end]) {
			return true
		}
	}
	return false
}

// luhnRun is Luhn over the digits of run, skipping its separators.
func luhnRun[T ~string | ~[]byte](run T) bool {
	sum := 0
	double := false
	for j := len(run) - 1; j >= 0; j-- {
		c := run[j]
		if !isDigit(c) {
			continue
		}
		d := int(c - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
