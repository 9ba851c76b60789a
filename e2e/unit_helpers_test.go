package e2e

import (
	"context"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// configureEndpoint commits a WebhookEndpointConfig and reads the endpoint
// back.
func configureEndpoint(ctx context.Context, st paygate.Store, e paygate.WebhookEndpoint, rotate bool, previousUntil time.Time) (paygate.WebhookEndpointState, error) {
	err := st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.WebhookEndpointConfig{Endpoint: e, RotateSecret: rotate, PreviousUntil: previousUntil}}})
	if err != nil {
		return paygate.WebhookEndpointState{}, err
	}
	return st.WebhookEndpointState(ctx, e.MerchantID, e.Mode)
}
