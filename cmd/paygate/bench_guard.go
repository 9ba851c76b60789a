package main

import (
	"context"
	"fmt"

	"github.com/paygate/paygate/internal/bench"
	"github.com/paygate/paygate/internal/paygate"
)

// benchMode is the mode bench's payments are made in: live through
// stripe-mock, test on the sandboxes.
func benchMode(f benchFlags) paygate.Mode {
	if f.provider == benchProviderStripeMock {
		return paygate.ModeLive
	}
	return paygate.ModeTest
}

// enableBenchGuard switches every rule of the card-testing guard on for
// the merchant in mode, with the live mode's defaults (decisions §20).
func enableBenchGuard(ctx context.Context, st paygate.Store, merchantID string, mode paygate.Mode) error {
	var u paygate.Unit
	for _, r := range paygate.DefaultGuardSettings(merchantID, paygate.ModeLive).Rules {
		u.Add(paygate.GuardChange{MerchantID: merchantID, Mode: mode, Settings: r, At: now()})
	}
	if err := st.Commit(ctx, u); err != nil {
		return fmt.Errorf("switch the card-testing guard on: %w", err)
	}
	return nil
}

// guardServeArgs are the child server's flags for a cardtest mix: bench,
// on loopback, is a trusted proxy, so that the X-Forwarded-For it sends
// names each payment's client address.
func guardServeArgs(f benchFlags) []string {
	if f.mix[bench.OpCardTest] == 0 {
		return nil
	}
	return []string{"--trusted-proxies", "127.0.0.1/32,::1/128"}
}
