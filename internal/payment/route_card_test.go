package payment_test

import (
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
)

// brandRouter is a payment.CardRouter that notes what it was asked.
type brandRouter struct {
	paygate.Router
	mu    sync.Mutex
	asked []string // currency/brand of each RouteCard
	plain int      // calls of Route
}

func (b *brandRouter) RouteCard(mode paygate.Mode, currency, brand string) []paygate.Provider {
	b.mu.Lock()
	b.asked = append(b.asked, currency+"/"+brand)
	b.mu.Unlock()
	return b.Router.Route(mode, currency)
}

func (b *brandRouter) Route(mode paygate.Mode, currency string) []paygate.Provider {
	b.mu.Lock()
	b.plain++
	b.mu.Unlock()
	return b.Router.Route(mode, currency)
}

// TestCreateRoutesByCardBrand: a router that routes by brand as well
// (success-rate routes, decisions §21) is asked with the card's brand.
func TestCreateRoutesByCardBrand(t *testing.T) {
	t.Parallel()
	f := newFixture(t, time.Second, &fakeProvider{id: "a", res: captured})
	r := &brandRouter{Router: f.router}
	f.svc = payment.New(payment.Config{Store: f.st, Router: r, Encoder: httpapi.Encoder{}, Vault: testVault(t), ProviderTimeout: time.Second})
	ans, p := f.create(t)
	if ans.Status != 201 || p.ProviderID != "a" {
		t.Fatalf("answer %d, payment %+v", ans.Status, p)
	}
	if len(r.asked) != 1 || r.asked[0] != "EUR/visa" || r.plain != 0 {
		t.Fatalf("RouteCard asked %v, Route %d times; want one RouteCard with EUR/visa", r.asked, r.plain)
	}
}
