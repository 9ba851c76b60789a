package httpapi

import (
	"strconv"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
)

// TestRecentKeys checks the memory of idempotency keys: a key is seen the
// second time, per merchant and mode, and is remembered for at least one
// full generation after it was last added.
func TestRecentKeys(t *testing.T) {
	r := newRecentKeys()
	if r.seen("m1", paygate.ModeTest, "k") {
		t.Fatal("a new key was seen")
	}
	if !r.seen("m1", paygate.ModeTest, "k") {
		t.Fatal("a repeated key was not seen")
	}
	if r.seen("m2", paygate.ModeTest, "k") || r.seen("m1", paygate.ModeLive, "k") {
		t.Fatal("a key of another merchant or mode was seen")
	}
	for i := range recentGeneration {
		r.seen("m1", paygate.ModeTest, strconv.Itoa(i))
	}
	if !r.seen("m1", paygate.ModeTest, "k") {
		t.Error("a key was forgotten within a generation")
	}
	if n := len(r.cur) + len(r.prev); n > 2*recentGeneration {
		t.Errorf("%d keys held, bound %d", n, 2*recentGeneration)
	}
}
