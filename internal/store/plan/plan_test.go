package plan_test

import (
	"context"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/sandbox"
	"github.com/paygate/paygate/internal/store/plan"
)

// remote is a provider that keeps its records outside the gateway.
type remote struct{}

func (remote) ID() string { return "remote" }
func (remote) Charge(context.Context, paygate.ChargeRequest) (paygate.ChargeResult, error) {
	return paygate.ChargeResult{}, &paygate.ProviderError{Kind: paygate.ProviderUnavailable, Provider: "remote", Message: "not in this test"}
}
func (remote) Capture(context.Context, paygate.PaymentOp) error { return nil }
func (remote) Void(context.Context, paygate.PaymentOp) error    { return nil }
func (remote) Refund(context.Context, paygate.RefundRequest) (paygate.RefundResult, error) {
	return paygate.RefundResult{}, nil
}

// undeclared is a gateway-ledger provider that says its ledger is not here
// (a sandbox whose ledger is elsewhere would).
type undeclared struct{ remote }

func (undeclared) LedgerInGateway() bool { return false }

// A payment's insert is lazy only when every provider it may be sent to
// records the charge in the gateway's database after it (decisions §22: a
// live provider's created row is durable before the call).
func TestLazyCreate(t *testing.T) {
	t.Parallel()
	eu, global := sandbox.New("sandbox-eu", nil), sandbox.New("sandbox-global", nil)
	for _, tc := range []struct {
		name  string
		route []paygate.Provider
		want  bool
	}{
		{"OK_Sandboxes", []paygate.Provider{eu, global}, true},
		{"OK_OneSandbox", []paygate.Provider{global}, true},
		{"Durable_EmptyRoute", nil, false},
		{"Durable_Remote", []paygate.Provider{remote{}}, false},
		{"Durable_RemoteAfterSandbox", []paygate.Provider{eu, remote{}}, false},
		{"Durable_LedgerElsewhere", []paygate.Provider{eu, undeclared{}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := plan.LazyCreate(paygate.NewPayment{Route: tc.route}); got != tc.want {
				t.Fatalf("LazyCreate: got %v, want %v", got, tc.want)
			}
		})
	}
}

// The list reads the index of the most selective filter it has.
func TestPaymentList(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		q    paygate.PaymentQuery
		want plan.ListKey
	}{
		{"All", paygate.PaymentQuery{}, plan.ListAll},
		{"Status", paygate.PaymentQuery{Statuses: []paygate.PaymentStatus{paygate.PaymentCaptured}}, plan.ListByStatus},
		{"CurrencyBeforeStatus", paygate.PaymentQuery{Currency: "EUR", Statuses: []paygate.PaymentStatus{paygate.PaymentCaptured}}, plan.ListByCurrency},
		{"CustomerBeforeCurrency", paygate.PaymentQuery{CustomerExternalID: "c", Currency: "EUR"}, plan.ListByCustomer},
		{"CustomerID", paygate.PaymentQuery{CustomerID: "c"}, plan.ListByCustomer},
		{"ReferenceFirst", paygate.PaymentQuery{MerchantRef: "r", CustomerID: "c", Currency: "EUR"}, plan.ListByReference},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := plan.PaymentList(tc.q); got != tc.want {
				t.Fatalf("PaymentList: got %d, want %d", got, tc.want)
			}
		})
	}
}
