package main

import (
	"context"
	"fmt"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
)

// adminTimeout bounds one operator command, so that an unreachable database
// fails the command instead of hanging it.
const adminTimeout = 60 * time.Second

// withStore opens the database (migrating it), runs f, and closes it.
func withStore(ctx context.Context, databaseURL string, f func(ctx context.Context, st paygate.Store) error) (err error) {
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	st, err := store.Open(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("open database %s: %w", redactURL(databaseURL), err)
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close database: %w", cerr)
		}
	}()
	return f(ctx, st)
}

// now is the time every command stamps its changes with.
func now() time.Time { return paygate.SystemClock{}.Now() }

// merchantByID loads a merchant, answering "merchant not found" for an id
// that does not exist (or cannot, not being a UUID).
func merchantByID(ctx context.Context, st paygate.Store, merchantID string) (paygate.Merchant, error) {
	if !id.Valid(merchantID) {
		return paygate.Merchant{}, fmt.Errorf("merchant not found: %q is not a merchant id", merchantID)
	}
	m, err := paygate.OneMerchant(st.Merchants(ctx, paygate.MerchantQuery{ID: merchantID}))
	if paygate.IsNotFound(err) {
		return m, fmt.Errorf("merchant not found: %s", merchantID)
	}
	return m, err
}
