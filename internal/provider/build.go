package provider

import (
	"fmt"
	"log/slog"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/connector"
)

// BuildOptions are what building a configuration's providers needs.
type BuildOptions struct {
	// Store is the gateway's database, where the sandboxes keep their
	// ledger; nil keeps it in memory, which does not survive a restart.
	Store paygate.Store
	// Logger receives breaker and drain changes.
	Logger *slog.Logger
}

// Build creates the configured providers, each by its registered
// connector, and returns the Router over them. A mode the configuration
// does not route gets the built-in routes: those of the connector that has
// some (the sandboxes) in test mode, with the default timeout and breaker;
// nothing in live mode.
func (c *Config) Build(o BuildOptions) (*Router, error) {
	env := connector.Env{Store: o.Store, Logger: o.Logger, Routes: c.Routes, CurrenciesOf: c.currenciesOf}
	routes := map[paygate.Mode]Routes{}
	var members []Member

	byID := map[string]paygate.Provider{}
	for _, pc := range c.Providers {
		conn, ok := connectorOf(pc.Kind)
		if !ok {
			return nil, fmt.Errorf("%s:%d: provider %q: unknown kind %q", c.sourceName(), pc.Line, pc.ID, pc.Kind)
		}
		p, err := conn.New(pc.Entry, env)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", c.sourceName(), pc.Line, err)
		}
		byID[pc.ID] = p
		members = append(members, Member{Mode: pc.Mode, Provider: p, Kind: pc.Kind, Timeout: pc.Timeout, Breaker: pc.Breaker})
	}
	for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
		rc, ok := c.Routes[mode]
		if !ok {
			if mode == paygate.ModeTest {
				routes[mode], members = builtin(env, members)
			}
			continue
		}
		r := Routes{Currency: map[string][]paygate.Provider{}}
		for cur, ids := range rc.Currency {
			for _, id := range ids {
				r.Currency[cur] = append(r.Currency[cur], byID[id])
			}
		}
		for _, id := range rc.Default {
			r.Default = append(r.Default, byID[id])
		}
		routes[mode] = r
	}
	t, err := NewScoredTable(routes, c.SuccessRate)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.sourceName(), err)
	}
	return NewRouter(t, members, o.Logger)
}

// builtin returns the built-in test routes of the first registered
// connector that has some, and adds their providers to members.
func builtin(env connector.Env, members []Member) (Routes, []Member) {
	for _, conn := range Connectors() {
		if conn.Builtin == nil {
			continue
		}
		r := conn.Builtin(env)
		for _, p := range uniqueProviders(r) {
			members = append(members, Member{Mode: paygate.ModeTest, Provider: p, Kind: conn.Kind, Timeout: DefaultTimeout, Breaker: DefaultBreaker()})
		}
		return r, members
	}
	return Routes{}, members
}

func (c *Config) sourceName() string {
	if c.Source == "" {
		return "built-in configuration"
	}
	return c.Source
}

// currenciesOf returns the currencies of a provider of the file.
func (c *Config) currenciesOf(id string) []string {
	for _, pc := range c.Providers {
		if pc.ID == id {
			return pc.Currencies
		}
	}
	return nil
}

// uniqueProviders lists the providers of routes once each.
func uniqueProviders(r Routes) []paygate.Provider {
	seen := map[string]bool{}
	var out []paygate.Provider
	add := func(ps []paygate.Provider) {
		for _, p := range ps {
			if !seen[p.ID()] {
				seen[p.ID()] = true
				out = append(out, p)
			}
		}
	}
	for _, ps := range r.Currency {
		add(ps)
	}
	add(r.Default)
	return out
}
