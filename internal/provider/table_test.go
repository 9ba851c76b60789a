package provider

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/score"
)

func ids(ps []paygate.Provider) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.ID()
	}
	return out
}

func TestDefaultRoutes(t *testing.T) {
	t.Parallel()
	tab := Default()
	cases := []struct {
		mode     paygate.Mode
		currency string
		want     []string
	}{
		{paygate.ModeTest, "EUR", []string{SandboxEU, SandboxGlobal}},
		{paygate.ModeTest, "CHF", []string{SandboxEU, SandboxGlobal}},
		{paygate.ModeTest, "CZK", []string{SandboxEU, SandboxGlobal}},
		{paygate.ModeTest, "USD", []string{SandboxUS, SandboxGlobal}},
		{paygate.ModeTest, "BRL", []string{SandboxUS, SandboxGlobal}},
		{paygate.ModeTest, "JPY", []string{SandboxAPAC, SandboxGlobal}},
		{paygate.ModeTest, "INR", []string{SandboxAPAC, SandboxGlobal}},
		{paygate.ModeTest, "KWD", []string{SandboxGlobal}},
		{paygate.ModeTest, "ZAR", []string{SandboxGlobal}},
		{paygate.ModeTest, "eur", []string{SandboxEU, SandboxGlobal}},
		{paygate.ModeLive, "EUR", []string{}},
		{paygate.ModeLive, "KWD", []string{}},
		{"staging", "EUR", []string{}},
		{"", "EUR", []string{}},
	}
	for _, c := range cases {
		t.Run(string(c.mode)+"/"+c.currency, func(t *testing.T) {
			t.Parallel()
			if got := ids(tab.Route(c.mode, c.currency)); !slices.Equal(got, c.want) {
				t.Fatalf("Route(%q, %q) = %v, want %v", c.mode, c.currency, got, c.want)
			}
		})
	}
}

func TestDefaultProvider(t *testing.T) {
	t.Parallel()
	tab := Default()
	for _, id := range []string{SandboxEU, SandboxUS, SandboxAPAC, SandboxGlobal} {
		p, ok := tab.Provider(paygate.ModeTest, id)
		if !ok || p.ID() != id {
			t.Fatalf("Provider(test, %s) = %v, %v", id, p, ok)
		}
		if _, ok := tab.Provider(paygate.ModeLive, id); ok {
			t.Fatalf("live mode has %s", id)
		}
	}
	if _, ok := tab.Provider(paygate.ModeTest, "stripe"); ok {
		t.Fatal("unknown provider found")
	}
	if _, ok := tab.Provider("staging", SandboxEU); ok {
		t.Fatal("unknown mode has providers")
	}
	// The global sandbox is one instance wherever it appears.
	g, _ := tab.Provider(paygate.ModeTest, SandboxGlobal)
	if r := tab.Route(paygate.ModeTest, "EUR"); r[1] != g {
		t.Fatal("the EUR route's sandbox-global is another instance")
	}
	if got := ids(tab.Providers(paygate.ModeTest)); !slices.Equal(got, []string{SandboxAPAC, SandboxEU, SandboxGlobal, SandboxUS}) {
		t.Fatalf("Providers(test) = %v", got)
	}
	if got := tab.Providers(paygate.ModeLive); len(got) != 0 {
		t.Fatalf("Providers(live) = %v", ids(got))
	}
}

func TestRouteIsACopy(t *testing.T) {
	t.Parallel()
	tab := Default()
	r := tab.Route(paygate.ModeTest, "EUR")
	r[0], r[1] = r[1], r[0]
	_ = append(r[:1], nil)
	if got := ids(tab.Route(paygate.ModeTest, "EUR")); !slices.Equal(got, []string{SandboxEU, SandboxGlobal}) {
		t.Fatalf("caller changed the table: %v", got)
	}
}

// stub is a provider that does nothing, for table construction tests.
type stub struct {
	paygate.Provider
	id string
}

func (s *stub) ID() string { return s.id }

func TestNewTable(t *testing.T) {
	t.Parallel()
	a, b, a2 := &stub{id: "a"}, &stub{id: "b"}, &stub{id: "a"}
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		tab, err := NewTable(map[paygate.Mode]Routes{
			paygate.ModeLive: {
				Currency: map[string][]paygate.Provider{"EUR": {a, b}, "USD": {b}},
				Default:  []paygate.Provider{a},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		for cur, want := range map[string][]string{"EUR": {"a", "b"}, "USD": {"b"}, "JPY": {"a"}} {
			if got := ids(tab.Route(paygate.ModeLive, cur)); !slices.Equal(got, want) {
				t.Errorf("Route(live, %s) = %v, want %v", cur, got, want)
			}
		}
		if got := tab.Route(paygate.ModeTest, "EUR"); len(got) != 0 {
			t.Errorf("mode left out has a route: %v", ids(got))
		}
	})
	t.Run("OKNoDefault", func(t *testing.T) {
		t.Parallel()
		tab, err := NewTable(map[paygate.Mode]Routes{paygate.ModeLive: {Currency: map[string][]paygate.Provider{"EUR": {a}}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := tab.Route(paygate.ModeLive, "USD"); len(got) != 0 {
			t.Errorf("USD routed to %v", ids(got))
		}
	})
	t.Run("OKCopiesInput", func(t *testing.T) {
		t.Parallel()
		route := []paygate.Provider{a, b}
		routes := map[paygate.Mode]Routes{paygate.ModeLive: {Currency: map[string][]paygate.Provider{"EUR": route}}}
		tab, err := NewTable(routes)
		if err != nil {
			t.Fatal(err)
		}
		route[0] = b
		routes[paygate.ModeLive].Currency["USD"] = []paygate.Provider{a}
		if got := ids(tab.Route(paygate.ModeLive, "EUR")); !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("EUR = %v after the input changed", got)
		}
		if got := tab.Route(paygate.ModeLive, "USD"); len(got) != 0 {
			t.Errorf("USD = %v after the input changed", ids(got))
		}
	})
	errCases := []struct {
		name   string
		routes map[paygate.Mode]Routes
		want   string
	}{
		{"ErrMode", map[paygate.Mode]Routes{"prod": {Default: []paygate.Provider{a}}}, "unknown mode"},
		{"ErrCurrencyLower", map[paygate.Mode]Routes{paygate.ModeTest: {Currency: map[string][]paygate.Provider{"eur": {a}}}}, "ISO 4217"},
		{"ErrCurrencyLength", map[paygate.Mode]Routes{paygate.ModeTest: {Currency: map[string][]paygate.Provider{"EURO": {a}}}}, "ISO 4217"},
		{"ErrEmptyRoute", map[paygate.Mode]Routes{paygate.ModeTest: {Currency: map[string][]paygate.Provider{"EUR": {}}}}, "empty"},
		{"ErrNilProvider", map[paygate.Mode]Routes{paygate.ModeTest: {Default: []paygate.Provider{nil}}}, "nil provider"},
		{"ErrEmptyID", map[paygate.Mode]Routes{paygate.ModeTest: {Default: []paygate.Provider{&stub{}}}}, "empty id"},
		{"ErrTwiceInRoute", map[paygate.Mode]Routes{paygate.ModeTest: {Default: []paygate.Provider{a, a}}}, "listed twice"},
		{"ErrSameIDOtherProvider", map[paygate.Mode]Routes{paygate.ModeTest: {
			Currency: map[string][]paygate.Provider{"EUR": {a}}, Default: []paygate.Provider{a2}}}, "two providers"},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewTable(c.routes)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

// TestSameIDAcrossModes: test and live are separate namespaces.
func TestSameIDAcrossModes(t *testing.T) {
	t.Parallel()
	_, err := NewTable(map[paygate.Mode]Routes{
		paygate.ModeTest: {Default: []paygate.Provider{&stub{id: "x"}}},
		paygate.ModeLive: {Default: []paygate.Provider{&stub{id: "x"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDefaultSandboxesCharge(t *testing.T) {
	t.Parallel()
	tab := Default()
	for _, cur := range []string{"EUR", "USD", "JPY", "KWD"} {
		p := tab.Route(paygate.ModeTest, cur)[0]
		res, err := p.Charge(context.Background(), paygate.ChargeRequest{
			PaymentID: "pay_1", Mode: paygate.ModeTest,
			Amount: paygate.Money{Amount: 100, Currency: cur},
			Card:   paygate.Card{Number: "4242424242424242", ExpMonth: 12, ExpYear: 2030, CVV: "123"},
		})
		if err != nil || res.Status != paygate.PaymentCaptured {
			t.Fatalf("%s via %s: %+v, %v", cur, p.ID(), res, err)
		}
	}
}

func BenchmarkRoute(b *testing.B) {
	tab := Default()
	b.ReportAllocs()
	for b.Loop() {
		if len(tab.Route(paygate.ModeTest, "EUR")) != 2 {
			b.Fatal("bad route")
		}
	}
}

// A minSamples above the window could never be reached: refused.
func TestNewScoredTableRefusesMinSamplesOverWindow(t *testing.T) {
	p := newRated("a", 100, 1)
	routes := map[paygate.Mode]Routes{paygate.ModeTest: {Default: []paygate.Provider{p}}}
	bad := map[paygate.Mode]map[string]score.Settings{paygate.ModeTest: {defaultRouteKey: {Window: 10, Explore: 5, MinSamples: 11}}}
	if _, err := NewScoredTable(routes, bad); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("minSamples 11 over window 10: %v", err)
	}
	ok := map[paygate.Mode]map[string]score.Settings{paygate.ModeTest: {defaultRouteKey: {Window: 10, Explore: 5, MinSamples: 10}}}
	if _, err := NewScoredTable(routes, ok); err != nil {
		t.Fatalf("minSamples equal to the window: %v", err)
	}
}
