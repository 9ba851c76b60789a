// Package storetest is the one conformance suite every paygate.Store engine
// must pass. Each engine's tests call Exercise with a constructor that gives
// every case its own fresh, empty database:
//
//	func TestStore(t *testing.T) {
//		storetest.Exercise(t, func(t *testing.T) paygate.Store {
//			s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "db"))
//			...
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The suite asserts only what the doc comments of paygate.Store promise; it
// makes no assumption about the engine.
package storetest

import (
	"testing"

	"github.com/paygate/paygate/internal/paygate"
)

// testCase is one behaviour, run on its own fresh store.
type testCase struct {
	name string
	run  func(t *testing.T, s paygate.Store)
}

// Exercise runs the conformance suite. newStore must return a fresh, empty
// store for each call and release it when the test ends (t.Cleanup); cases
// run in parallel, each on its own store.
func Exercise(t *testing.T, newStore func(t *testing.T) paygate.Store) {
	groups := []struct {
		name  string
		cases []testCase
	}{
		{"Basics", basicCases()},
		{"Merchant", merchantCases()},
		{"APIKey", apiKeyCases()},
		{"Webhook", webhookCases()},
		{"WebhookSecret", webhookSecretCases()},
		{"Idempotency", idempotencyCases()},
		{"Customer", customerCases()},
		{"Payment", paymentCases()},
		{"Unit", unitCases()},
		{"ReservedCreate", reservedCreateCases()},
		{"NewPayment", newPaymentCases()},
		{"Refund", refundCases()},
		{"Event", eventCases()},
		{"Race", raceCases()},
		{"Delivery", deliveryCases()},
		{"WebhookUnit", webhookUnitCases()},
		{"ThreeDS", threeDSCases()},
		{"Routing", routingCases()},
		{"Vault", vaultCases()},
		{"Dashboard", dashboardCases()},
		{"Users", userCases()},
		{"Stats", statsCases()},
		{"DeliveryFilter", deliveryFilterCases()},
		{"PaymentSearch", paymentSearchCases()},
		{"Guard", guardCases()},
		{"Origins", originsCases()},
		{"Token", tokenCases()},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.run(t, newStore(t))
				})
			}
		})
	}
}
