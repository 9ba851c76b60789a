// Package provider chooses the upstream providers of a payment: a routing
// table per mode that lists, for each currency, the providers to try in
// order.
//
// Table is the static configuration, built from the operator's file
// (Config, LoadConfig) or the built-in routes of the registered connectors
// (the sandboxes). The connectors themselves live in packages of their own
// and register with Register: this package knows none by name. Router is the
// availability layer over it that serve uses: circuit breakers that take a
// failing provider out of rotation and probe it back, operator drain and
// restore (kept in the database and applied by Watcher), and each charge's
// deadline. The table itself never changes after it is built, so it can be
// shared by every request without a lock.
package provider

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/connector"
	"github.com/paygate/paygate/internal/provider/score"
)

var _ paygate.Router = (*Table)(nil)

// Routes is the routing of one mode: for each currency, and by default,
// the providers to try in order.
type Routes = connector.Routes

// Table is a fixed routing table, one Routes per mode. It is safe for
// concurrent use.
type Table struct {
	modes map[paygate.Mode]*modeTable
}

type modeTable struct {
	currency map[string][]paygate.Provider
	fallback []paygate.Provider
	// scored holds the success_rate routes' settings, by currency or
	// defaultRouteKey (decisions §21).
	scored map[string]score.Settings
	byID   map[string]paygate.Provider
	all    []paygate.Provider // distinct, sorted by id
}

// NewTable builds a table from the routes of each mode; a mode left out has
// no providers. The routes are copied. It fails when a mode is not test or
// live, a currency is not three upper-case letters, a listed currency has
// no provider, a provider is nil or has an empty id, a route names one
// provider twice, or two different providers of one mode share an id (the
// id must find the provider that processed a payment).
func NewTable(routes map[paygate.Mode]Routes) (*Table, error) {
	t := &Table{modes: make(map[paygate.Mode]*modeTable, len(routes))}
	for mode, r := range routes {
		if !mode.Valid() {
			return nil, fmt.Errorf("provider: unknown mode %q", mode)
		}
		mt := &modeTable{
			currency: make(map[string][]paygate.Provider, len(r.Currency)),
			byID:     make(map[string]paygate.Provider),
		}
		add := func(where string, route []paygate.Provider) ([]paygate.Provider, error) {
			seen := make(map[string]bool, len(route))
			for _, p := range route {
				if p == nil || p.ID() == "" {
					return nil, fmt.Errorf("provider: %s mode, %s: nil provider or empty id", mode, where)
				}
				id := p.ID()
				if seen[id] {
					return nil, fmt.Errorf("provider: %s mode, %s: %s listed twice", mode, where, id)
				}
				seen[id] = true
				if prev, ok := mt.byID[id]; ok && !same(prev, p) {
					return nil, fmt.Errorf("provider: %s mode: two providers with id %s", mode, id)
				}
				if _, ok := mt.byID[id]; !ok {
					mt.byID[id] = p
					mt.all = append(mt.all, p)
				}
			}
			return slices.Clone(route), nil
		}
		for cur, route := range r.Currency {
			if !isCurrencyCode(cur) {
				return nil, fmt.Errorf("provider: %s mode: %q is not an upper-case ISO 4217 code", mode, cur)
			}
			if len(route) == 0 {
				return nil, fmt.Errorf("provider: %s mode: route for %s is empty (leave it out to use the default route)", mode, cur)
			}
			c, err := add("route "+cur, route)
			if err != nil {
				return nil, err
			}
			mt.currency[cur] = c
		}
		fb, err := add("default route", r.Default)
		if err != nil {
			return nil, err
		}
		if len(fb) > 0 {
			mt.fallback = fb
		}
		slices.SortFunc(mt.all, func(a, b paygate.Provider) int { return strings.Compare(a.ID(), b.ID()) })
		t.modes[mode] = mt
	}
	return t, nil
}

// NewScoredTable is NewTable with success_rate routes (decisions §21):
// per mode, the settings of each route whose strategy is success_rate, by
// currency or "default". It fails when such a route is not in routes or
// its settings are out of range (minSamples above the window included: no
// provider could reach it).
func NewScoredTable(routes map[paygate.Mode]Routes, successRate map[paygate.Mode]map[string]score.Settings) (*Table, error) {
	t, err := NewTable(routes)
	if err != nil {
		return nil, err
	}
	for mode, scored := range successRate {
		mt := t.modes[mode]
		for key, set := range scored {
			switch {
			case mt == nil,
				key == defaultRouteKey && len(mt.fallback) == 0,
				key != defaultRouteKey && mt.currency[key] == nil:
				return nil, fmt.Errorf("provider: %s mode: success_rate settings for %s, which has no route", mode, key)
			case set.Window < 1 || set.Window > score.MaxWindow || set.Explore < 0 || set.Explore > 100 ||
				set.MinSamples < 0 || set.MinSamples > set.Window:
				return nil, fmt.Errorf("provider: %s mode: route %s: success_rate settings out of range: %+v", mode, key, set)
			}
			if mt.scored == nil {
				mt.scored = map[string]score.Settings{}
			}
			mt.scored[key] = set
		}
	}
	return t, nil
}

// SuccessRate returns the settings of the route of a currency ("default":
// the default route) when its strategy is success_rate; false when it
// routes by priority.
func (t *Table) SuccessRate(mode paygate.Mode, currency string) (score.Settings, bool) {
	mt := t.modes[mode]
	if mt == nil || mt.scored == nil {
		return score.Settings{}, false
	}
	key := strings.ToUpper(currency)
	if _, ok := mt.currency[key]; !ok {
		key = defaultRouteKey
	}
	set, ok := mt.scored[key]
	return set, ok
}

// Route returns the providers for a currency in the order to try them: the
// currency's own route, or else the default route. It is empty for a mode
// without routes or a currency no provider serves. The slice is the
// caller's to keep.
func (t *Table) Route(mode paygate.Mode, currency string) []paygate.Provider {
	mt := t.modes[mode]
	if mt == nil {
		return nil
	}
	if r, ok := mt.currency[strings.ToUpper(currency)]; ok {
		return slices.Clone(r)
	}
	return slices.Clone(mt.fallback)
}

// Provider returns the provider with the id in the mode, for operations on a
// payment it processed (capture, void, refund).
func (t *Table) Provider(mode paygate.Mode, id string) (paygate.Provider, bool) {
	mt := t.modes[mode]
	if mt == nil {
		return nil, false
	}
	p, ok := mt.byID[id]
	return p, ok
}

// Providers lists every provider of the mode once, sorted by id.
func (t *Table) Providers(mode paygate.Mode) []paygate.Provider {
	mt := t.modes[mode]
	if mt == nil {
		return nil
	}
	return slices.Clone(mt.all)
}

// same reports whether a and b are the same provider. Providers are nearly
// always pointers; a provider of a type that cannot be compared counts as
// different from any other, rather than panicking.
func same(a, b paygate.Provider) bool {
	if reflect.TypeOf(a) != reflect.TypeOf(b) || !reflect.TypeOf(a).Comparable() {
		return false
	}
	return a == b
}

func isCurrencyCode(c string) bool {
	if len(c) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if c[i] < 'A' || c[i] > 'Z' {
			return false
		}
	}
	return true
}

// Routes returns the ids of the mode's routes: each listed currency's, in
// order, and the default route's. The maps and slices are the caller's.
func (t *Table) Routes(mode paygate.Mode) (currency map[string][]string, fallback []string) {
	currency = map[string][]string{}
	mt := t.modes[mode]
	if mt == nil {
		return currency, []string{}
	}
	for cur, route := range mt.currency {
		currency[cur] = idsOf(route)
	}
	return currency, idsOf(mt.fallback)
}

func idsOf(ps []paygate.Provider) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.ID()
	}
	return out
}
