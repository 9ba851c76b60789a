package bench

import (
	"testing"

	"github.com/paygate/paygate/internal/card"
)

// TestRefNeverACardNumber: the payments' references go into metadata, where
// the gateway refuses text that looks like a card number (decisions §15).
// Run ids whose hex ends in digits, with every client and many sequence
// numbers, must never make one (the old "-<client>-<seq>" form did, for
// about one run in ten).
func TestRefNeverACardNumber(t *testing.T) {
	t.Parallel()
	var ref []byte
	for _, runID := range []string{"a1b2c3d4e5f60718", "abcdef4242424242", "deadbeef31415926", "c0ffee5566778899"} {
		for client := range 64 {
			for seq := int64(1); seq <= 3000; seq++ {
				ref = appendRef(ref[:0], runID, client, seq)
				if card.ContainsNumber(ref) {
					t.Fatalf("reference %q reads as a card number", ref)
				}
			}
		}
	}
}
