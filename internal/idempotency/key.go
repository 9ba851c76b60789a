package idempotency

import "unicode/utf8"

// HeaderName is the request header that carries the idempotency key.
const HeaderName = "Idempotency-Key"

// MaxKeyLength is the longest acceptable key, in characters.
const MaxKeyLength = 255

// ValidKey reports whether k is an acceptable Idempotency-Key: 1 to 255
// characters (decisions.md section 5). Characters are Unicode code points,
// as the specification counts characters, not bytes; so a key is at most
// 1,020 bytes. The key must also be valid UTF-8 without control characters
// (U+0000–U+001F, U+007F): such keys cannot be stored faithfully (PostgreSQL
// text refuses NUL and invalid UTF-8) and no sane client sends them.
// Surrounding whitespace is part of the key; net/http already trims it from
// header values.
func ValidKey(k string) bool {
	if k == "" || len(k) > MaxKeyLength*utf8.UTFMax || !utf8.ValidString(k) {
		return false
	}
	n := 0
	for _, r := range k {
		if r < 0x20 || r == 0x7f {
			return false
		}
		n++
	}
	return n <= MaxKeyLength
}
