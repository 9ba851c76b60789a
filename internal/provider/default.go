package provider

import (
	"fmt"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/sandbox"
)

// The ids of the test-mode sandbox providers (decisions.md section 12).
const (
	SandboxEU     = "sandbox-eu"
	SandboxUS     = "sandbox-us"
	SandboxAPAC   = "sandbox-apac"
	SandboxGlobal = "sandbox-global"
)

// sandboxRegions lists the regional sandboxes and their currencies. No
// currency appears twice.
var sandboxRegions = []struct {
	id         string
	currencies []string
}{
	{SandboxEU, []string{"EUR", "GBP", "CHF", "SEK", "NOK", "DKK", "PLN", "CZK"}},
	{SandboxUS, []string{"USD", "CAD", "MXN", "BRL"}},
	{SandboxAPAC, []string{"JPY", "AUD", "NZD", "SGD", "HKD", "INR"}},
}

// SandboxRoutes returns the test-mode routes: each currency of a regional
// sandbox goes to that sandbox, then to sandbox-global; every other currency
// goes to sandbox-global alone. The options (such as sandbox.WithLatency)
// apply to the four sandboxes.
//
// Each regional sandbox heads a route with sandbox-global behind it for
// every currency it serves, and is told so (sandbox.FirstOf): card
// 4000000000000259 is unavailable there and captured by sandbox-global.
// sandbox-global heads only the routes where it is alone, so it captures
// that card everywhere: there is no next provider to fail over to.
func SandboxRoutes(opts ...sandbox.Option) Routes {
	global := sandbox.New(SandboxGlobal, nil, opts...)
	r := Routes{
		Currency: make(map[string][]paygate.Provider),
		Default:  []paygate.Provider{global},
	}
	for _, reg := range sandboxRegions {
		o := append(append([]sandbox.Option(nil), opts...), sandbox.FirstOf(reg.currencies...))
		p := sandbox.New(reg.id, reg.currencies, o...)
		for _, c := range reg.currencies {
			r.Currency[c] = []paygate.Provider{p, global}
		}
	}
	return r
}

// Default returns the built-in table: the sandboxes of SandboxRoutes in
// test mode, with the options; no provider in live mode until an operator
// configures one.
func Default(opts ...sandbox.Option) *Table {
	t, err := NewTable(map[paygate.Mode]Routes{
		paygate.ModeTest: SandboxRoutes(opts...),
		paygate.ModeLive: {},
	})
	if err != nil {
		// The built-in routes are fixed; an error is a bug in this file.
		panic(fmt.Sprintf("provider: built-in routes are invalid: %v", err))
	}
	return t
}
