package idempotency

import (
	"strings"
	"testing"
)

func TestValidKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		key  string
		ok   bool
	}{
		{"OKOneChar", "a", true},
		{"OKUUID", "0b9f3c1e-7d2a-4c4e-9a51-1f2e3d4c5b6a", true},
		{"OKMaxASCII", strings.Repeat("k", 255), true},
		{"OKMaxMultibyte", strings.Repeat("é", 255), true}, // 510 bytes, 255 characters
		{"OKInnerSpace", "order 42", true},
		{"ErrEmpty", "", false},
		{"ErrTooLongASCII", strings.Repeat("k", 256), false},
		{"ErrTooLongMultibyte", strings.Repeat("é", 256), false},
		{"ErrInvalidUTF8", "key\xff", false},
		{"ErrNUL", "key\x00", false},
		{"ErrControl", "key\n", false},
		{"ErrDEL", "key\x7f", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := ValidKey(c.key); got != c.ok {
				t.Fatalf("ValidKey(%q) = %v, want %v", c.key, got, c.ok)
			}
		})
	}
}
