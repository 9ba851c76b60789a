package testenv

import (
	"context"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// ConfigureEndpoint commits a WebhookEndpointConfig and reads the endpoint
// back, for tests.
func ConfigureEndpoint(ctx context.Context, st paygate.Store, e paygate.WebhookEndpoint, rotate bool, previousUntil time.Time) (paygate.WebhookEndpointState, error) {
	err := st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.WebhookEndpointConfig{Endpoint: e, RotateSecret: rotate, PreviousUntil: previousUntil}}})
	if err != nil {
		return paygate.WebhookEndpointState{}, err
	}
	return st.WebhookEndpointState(ctx, e.MerchantID, e.Mode)
}

// CreatePing commits a WebhookPing and reads its delivery back, for tests.
func CreatePing(ctx context.Context, st paygate.Store, ev paygate.Event, deliveryID string) (paygate.Delivery, error) {
	if err := st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.WebhookPing{Event: ev, DeliveryID: deliveryID}}}); err != nil {
		return paygate.Delivery{}, err
	}
	return paygate.DeliveryByID(ctx, st, ev.MerchantID, ev.Mode, deliveryID)
}
