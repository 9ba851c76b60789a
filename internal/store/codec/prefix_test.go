package codec

import (
	"strings"
	"testing"
)

func TestPrefixEnd(t *testing.T) {
	t.Parallel()
	cases := []struct {
		prefix, end string
		ok          bool
	}{
		{"cus_1", "cus_2", true},
		{"ab\u00ff", "ab\u0100", true},
		{"a\ud7ff", "a\ue000", true},
		{"a\U0010ffff", "b", true},
		{"\U0010ffff\U0010ffff", "", false},
		{"", "", false},
		{"bad\xff", "", false},
	}
	for _, c := range cases {
		end, ok := PrefixEnd(c.prefix)
		if end != c.end || ok != c.ok {
			t.Errorf("PrefixEnd(%q) = %q, %v; want %q, %v", c.prefix, end, ok, c.end, c.ok)
		}
	}
	// Every string with the prefix sorts before the end, and the end does
	// not have the prefix.
	for _, s := range []string{"cus_1", "cus_1\U0010ffff", "cus_1zzzz", "cus_1\u00e9"} {
		end, _ := PrefixEnd("cus_1")
		if !(s < end) || !strings.HasPrefix(s, "cus_1") || strings.HasPrefix(end, "cus_1") {
			t.Errorf("%q is not in [cus_1, %q)", s, end)
		}
	}
}
