package postgres

import (
	"testing"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/storetest"
	"github.com/paygate/paygate/internal/testenv"
)

// TestStore runs the conformance suite, each case on a fresh schema.
func TestStore(t *testing.T) {
	storetest.Exercise(t, func(t *testing.T) paygate.Store {
		s, err := Open(t.Context(), testenv.PostgresSchema(t))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestOnEvents(t *testing.T) {
	storetest.CheckOnEvents(t, func(t *testing.T, onEvents func()) paygate.Store {
		s, err := OpenWith(t.Context(), testenv.PostgresSchema(t), Options{OnEvents: onEvents})
		if err != nil {
			t.Fatalf("OpenWith: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
