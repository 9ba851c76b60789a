package codec

import "unicode/utf8"

// PrefixEnd returns the smallest string greater, in code point (and so
// UTF-8 byte) order, than every string that starts with prefix: the strings
// with that prefix are exactly those s with prefix <= s < end. ok is false
// when there is no such bound (an empty prefix, one of only U+10FFFF, or
// invalid UTF-8, which no stored text holds), and then every s >= prefix
// starts with it. With a binary collation a prefix search is then an index
// range scan.
func PrefixEnd(prefix string) (end string, ok bool) {
	if !utf8.ValidString(prefix) {
		return "", false
	}
	runes := []rune(prefix)
	for i := len(runes) - 1; i >= 0; i-- {
		r := runes[i]
		if r >= utf8.MaxRune {
			continue
		}
		r++
		if r >= 0xD800 && r <= 0xDFFF { // surrogates are not characters
			r = 0xE000
		}
		runes[i] = r
		return string(runes[:i+1]), true
	}
	return "", false
}
