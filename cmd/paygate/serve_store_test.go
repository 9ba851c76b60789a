package main

import (
	"testing"

	"github.com/paygate/paygate/internal/store/baseline"
)

// The store serve hands to the use cases is the engine itself: an optional
// capability of the engine survives the wiring. (A decorator embedding
// paygate.Store, as waking the dispatcher once was, hides every one of them
// from a type assertion.)
func TestServeStoreKeepsCapabilities(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, db string) {
		st, waker, err := openStore(t.Context(), db)
		if err != nil {
			t.Fatalf("openStore: %v", err)
		}
		t.Cleanup(func() { _ = st.Close() })
		if waker == nil {
			t.Fatal("openStore returned no waker")
		}
		if _, ok := st.(baseline.Store); !ok {
			t.Fatalf("serve's store %T lost the engine's baseline.Store", st)
		}
	})
}
