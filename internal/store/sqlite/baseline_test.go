package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/paygate/paygate/internal/store/storetest"
)

// TestBaselinePayment checks that the baseline writes what a successful
// payment writes: a captured payment with its customer, its event and a
// completed idempotency record, under concurrency and with payments that
// share a customer.
func TestBaselinePayment(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "paygate.db"))
	storetest.CheckBaseline(t, s, s)
}
