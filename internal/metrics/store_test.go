package metrics

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/paygate/paygate/internal/store"
	"github.com/paygate/paygate/internal/testenv"
)

// TestWatchStore reads the pools and the outbox of both engines at a
// scrape. (The count itself is checked by the store conformance suite,
// storetest's Stats cases.)
func TestWatchStore(t *testing.T) {
	for _, c := range []struct {
		name  string
		url   func(t *testing.T) string
		pools []string
	}{
		{"SQLite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "m.db") }, []string{"read", "write"}},
		{"PostgreSQL", func(t *testing.T) string { return testenv.PostgresSchema(t) }, []string{"main"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st, err := store.Open(t.Context(), c.url(t))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			m := New(nil)
			if pools, pending := m.WatchStore(st); !pools || !pending {
				t.Fatalf("WatchStore(%T) found pools %v, outbox %v; want both", st, pools, pending)
			}
			got := gather(t, m)
			want(t, got, "paygate_webhook_outbox_pending", 0)
			for _, p := range c.pools {
				for _, name := range []string{"paygate_db_connections_in_use", "paygate_db_connections_idle", "paygate_db_wait_total", "paygate_db_wait_seconds_total"} {
					if _, ok := got[name+`{pool="`+p+`"}`]; !ok {
						t.Errorf("no %s of pool %s", name, p)
					}
				}
				if s := got[`paygate_db_connections_max{pool="`+p+`"}`]; s.value < 1 {
					t.Errorf("pool %s: max connections %v", p, s.value)
				}
			}
		})
	}
}

// failingOutbox is a store whose count fails, as a database that is down.
type failingOutbox struct{}

func (failingOutbox) PendingDeliveries(context.Context) (int64, error) {
	return 0, errors.New("connection refused")
}

// TestWatchStoreFailure: a count that fails is the scrape's error, and
// the other series are still served.
func TestWatchStoreFailure(t *testing.T) {
	m := New(nil)
	if pools, pending := m.WatchStore(failingOutbox{}); pools || !pending {
		t.Fatalf("WatchStore found pools %v, outbox %v", pools, pending)
	}
	mfs, err := m.Registry().Gather()
	if err == nil {
		t.Fatal("Gather succeeded with a failing count")
	}
	found := false
	for _, mf := range mfs {
		found = found || mf.GetName() == "paygate_idempotent_replays_total"
		if mf.GetName() == "paygate_webhook_outbox_pending" {
			t.Error("an outbox figure was served although the count failed")
		}
	}
	if !found {
		t.Error("the other series were not served")
	}
	if pools, pending := New(nil).WatchStore(struct{}{}); pools || pending {
		t.Error("WatchStore found figures in a store that has none")
	}
}
