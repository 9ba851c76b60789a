package paygate

import (
	"strings"
	"testing"
)

func TestNormalizeOrigin(t *testing.T) {
	t.Parallel()
	ok := []struct {
		mode     Mode
		in, want string
	}{
		{ModeLive, "https://shop.example", "https://shop.example"},
		{ModeLive, "  HTTPS://Shop.EXAMPLE/ ", "https://shop.example"},
		{ModeLive, "https://shop.example:443", "https://shop.example"},
		{ModeLive, "https://shop.example:8443", "https://shop.example:8443"},
		{ModeLive, "https://203.0.113.9", "https://203.0.113.9"},
		{ModeLive, "https://shop123.example", "https://shop123.example"},
		{ModeLive, "https://123.example", "https://123.example"},
		{ModeLive, "https://shop.0xyz", "https://shop.0xyz"},
		{ModeTest, "http://localhost:3000", "http://localhost:3000"},
		{ModeTest, "http://shop.test:80", "http://shop.test"},
		{ModeTest, "http://127.0.0.1:08080", "http://127.0.0.1:8080"},
	}
	for _, c := range ok {
		got, err := NormalizeOrigin(c.mode, c.in)
		if err != nil || got != c.want {
			t.Errorf("NormalizeOrigin(%s, %q) = %q, %v; want %q", c.mode, c.in, got, err, c.want)
		}
	}
	bad := []struct {
		mode Mode
		in   string
	}{
		{ModeLive, ""},
		{ModeLive, "http://shop.example"}, // live takes https only
		{ModeLive, "http://localhost:3000"},
		{ModeTest, "shop.example"},
		{ModeTest, "//shop.example"},
		{ModeTest, "ftp://shop.example"},
		{ModeTest, "javascript:alert(1)"},
		{ModeTest, "https://*.shop.example"},
		{ModeTest, "*"},
		{ModeTest, "https://shop.example/path"},
		{ModeTest, "https://shop.example?q=1"},
		{ModeTest, "https://shop.example?"},
		{ModeTest, "https://shop.example#x"},
		{ModeTest, "https://user:pw@shop.example"},
		{ModeTest, "https://shop.example:0"},
		{ModeTest, "https://shop.example:65536"},
		{ModeTest, "https://shop.example:"},
		{ModeTest, "https://[::1]:8080"},
		{ModeTest, "https://shop_example.com"},
		{ModeTest, "https://-shop.example"},
		{ModeTest, "https://shop..example"},
		{ModeTest, "https://a.example https://b.example"},
		{ModeTest, "https://a.example;script-src *"},
		{ModeTest, "https://a.example,https://b.example"},
		{ModeTest, "https://ex'ample.com"},
		{ModeTest, "https://" + strings.Repeat("a", 64) + ".example"},
		// A last label that is a number makes a browser read the host as
		// an IPv4 address in another spelling.
		{ModeTest, "https://1.2.3"},
		{ModeTest, "https://256.1.1.1"},
		{ModeTest, "https://shop.example.123"},
		{ModeTest, "https://127.1"},
		{ModeTest, "https://2130706433"},
		{ModeTest, "https://10.0x1"},
		{ModeTest, "https://shop.0x"},
	}
	for _, c := range bad {
		got, err := NormalizeOrigin(c.mode, c.in)
		if err == nil {
			t.Errorf("NormalizeOrigin(%s, %q) = %q, want an error", c.mode, c.in, got)
			continue
		}
		if e, isErr := err.(*Error); !isErr || e.Code != CodeInvalidRequest || e.Param != "origins" {
			t.Errorf("NormalizeOrigin(%s, %q): %#v, want INVALID_REQUEST param origins", c.mode, c.in, err)
		}
	}
}

func TestNormalizeOrigins(t *testing.T) {
	t.Parallel()
	got, err := NormalizeOrigins(ModeLive, []string{"https://b.example", "https://A.example", "https://b.example:443"})
	if err != nil || strings.Join(got, " ") != "https://b.example https://a.example" {
		t.Errorf("NormalizeOrigins = %q, %v; want b then a, once each", got, err)
	}
	if got, err := NormalizeOrigins(ModeLive, nil); err != nil || got == nil || len(got) != 0 {
		t.Errorf("NormalizeOrigins(nil) = %#v, %v; want an empty list", got, err)
	}
	var many []string
	for i := range MaxAllowedOrigins + 1 {
		many = append(many, "https://s"+strings.Repeat("x", i)+".example")
	}
	if _, err := NormalizeOrigins(ModeLive, many[:MaxAllowedOrigins]); err != nil {
		t.Errorf("%d origins refused: %v", MaxAllowedOrigins, err)
	}
	if _, err := NormalizeOrigins(ModeLive, many); err == nil {
		t.Errorf("%d origins accepted, want at most %d", len(many), MaxAllowedOrigins)
	}
}

func TestAllowsOrigin(t *testing.T) {
	t.Parallel()
	allowed := []string{"https://shop.example"}
	for _, c := range []struct {
		mode   Mode
		origin string
		want   bool
	}{
		{ModeLive, "https://shop.example", true},
		{ModeLive, "https://SHOP.example:443", true},
		{ModeLive, "https://evil.example", false},
		{ModeLive, "http://localhost:3000", false},
		{ModeLive, "http://127.0.0.1:3000", false},
		{ModeTest, "http://localhost:3000", true},
		{ModeTest, "http://127.0.0.1:45123", true},
		{ModeTest, "https://127.0.0.1:45123", false}, // §19 names http only
		{ModeTest, "http://127.0.0.2:45123", false},
		{ModeTest, "http://localhost.evil.example", false},
		{ModeTest, "null", false},
		{ModeTest, "", false},
	} {
		if got := AllowsOrigin(c.mode, allowed, c.origin); got != c.want {
			t.Errorf("AllowsOrigin(%s, %q) = %t, want %t", c.mode, c.origin, got, c.want)
		}
	}
}

func TestOriginsChangeValidate(t *testing.T) {
	t.Parallel()
	c := OriginsChange{Mode: ModeLive, Origins: []string{"https://a.example"}}
	if err := c.Validate(); err != nil {
		t.Errorf("valid change refused: %v", err)
	}
	c.Origins = []string{"https://A.example"}
	if err := c.Validate(); err == nil {
		t.Error("a change of an origin not normalized passed")
	}
	c.Origins = nil
	if err := c.Validate(); err != nil || c.Describe() != "none" {
		t.Errorf("clearing: %v, %q", err, c.Describe())
	}
}
