package payment

import (
	"testing"

	"github.com/paygate/paygate/internal/paygate"
)

// The guard counts an attempt by the shopper's address when the merchant's
// backend sends it (billing.ipAddress), and by the request's client
// address otherwise: every payment of a shop comes from its backend, and
// counted by that address ip_cards would block the whole shop.
func TestGuardAddr(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   CreateInput
		want string
	}{
		{"no billing", CreateInput{ClientAddr: "192.0.2.1"}, "192.0.2.1"},
		{"billing without an address", CreateInput{ClientAddr: "192.0.2.1", Billing: &paygate.Billing{}}, "192.0.2.1"},
		{"the shopper's address", CreateInput{ClientAddr: "192.0.2.1", Billing: &paygate.Billing{IPAddress: "198.51.100.7"}}, "198.51.100.7"},
	}
	for _, c := range cases {
		if got := guardAddr(c.in); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
