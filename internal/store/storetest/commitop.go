package storetest

import (
	"context"

	"github.com/paygate/paygate/internal/paygate"
)

// commitOp commits a unit of the operations.
func commitOp(c context.Context, s paygate.Store, ops ...paygate.Op) error {
	return s.Commit(c, paygate.Unit{Ops: ops})
}
