package codec

import "testing"

func TestOptionalBoolReadsBothEngines(t *testing.T) {
	for _, c := range []struct {
		src  any
		want string
	}{{nil, "nil"}, {true, "true"}, {false, "false"}, {int64(1), "true"}, {int64(0), "false"}} {
		var b *bool
		if err := OptionalBool(&b).Scan(c.src); err != nil {
			t.Fatalf("%v: %v", c.src, err)
		}
		got := "nil"
		if b != nil {
			got = map[bool]string{true: "true", false: "false"}[*b]
		}
		if got != c.want {
			t.Errorf("%#v reads as %s, want %s", c.src, got, c.want)
		}
	}
	var b *bool
	if err := OptionalBool(&b).Scan(int64(2)); err == nil {
		t.Error("2 read as a boolean")
	}
}

func TestEncodeEndpointEvents(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{{nil, `[]`}, {[]string{}, `[]`}, {[]string{"payment.captured", "refund.failed"}, `["payment.captured","refund.failed"]`}} {
		got, err := EncodeEndpointEvents(c.in)
		if err != nil || got != c.want {
			t.Errorf("%q: %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}
