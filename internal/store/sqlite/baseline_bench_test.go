package sqlite_test

import (
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/sqlite"
)

// BenchmarkBaselinePayment measures the database-only writes of a payment
// (BaselinePayment) on one SQLite file, from one client and from 32.
func BenchmarkBaselinePayment(b *testing.B) {
	for _, clients := range []int{1, 32} {
		b.Run(map[int]string{1: "clients=1", 32: "clients=32"}[clients], func(b *testing.B) {
			s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "paygate.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			m := paygate.Merchant{ID: "8f0c5b1e-3a4d-4e6f-9a7b-0c1d2e3f4a5b", Name: "Bench", CreatedAt: paygate.Normalize(time.Now())}
			if err := s.Commit(b.Context(), paygate.Unit{Ops: []paygate.Op{m}}); err != nil {
				b.Fatal(err)
			}
			var n atomic.Int64
			b.SetParallelism(max(1, clients/2))
			if clients == 1 {
				b.SetParallelism(1)
			}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := s.BaselinePayment(b.Context(), m.ID, paygate.ModeTest, n.Add(1)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
