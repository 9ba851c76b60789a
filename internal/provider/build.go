package provider

import (
	"fmt"
	"log/slog"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/sandbox"
	"github.com/paygate/paygate/internal/provider/stripe"
)

// BuildOptions are what building a configuration's providers needs.
type BuildOptions struct {
	// Ledger keeps the sandboxes' ledger (the gateway's store); nil keeps
	// it in memory, which does not survive a restart.
	Ledger sandbox.Ledger
	// Logger receives breaker and drain changes.
	Logger *slog.Logger
}

// Build creates the configured providers and returns the Router over them.
// A mode the configuration does not route gets the built-in routes: the
// sandboxes of SandboxRoutes in test mode (with the default timeout and
// breaker), nothing in live mode.
func (c *Config) Build(o BuildOptions) (*Router, error) {
	var common []sandbox.Option
	if o.Ledger != nil {
		common = append(common, sandbox.WithLedger(o.Ledger))
	}
	routes := map[paygate.Mode]Routes{}
	var members []Member

	byID := map[string]paygate.Provider{}
	for _, pc := range c.Providers {
		p, err := c.newProvider(pc, common)
		if err != nil {
			return nil, err
		}
		byID[pc.ID] = p
		members = append(members, Member{Mode: pc.Mode, Provider: p, Kind: pc.Kind, Timeout: pc.Timeout, Breaker: pc.Breaker})
	}
	for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
		rc, ok := c.Routes[mode]
		if !ok {
			if mode == paygate.ModeTest {
				routes[mode] = SandboxRoutes(common...)
				for _, p := range uniqueProviders(routes[mode]) {
					members = append(members, Member{Mode: mode, Provider: p, Kind: KindSandbox, Timeout: DefaultTimeout, Breaker: DefaultBreaker()})
				}
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
	t, err := NewTable(routes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.sourceName(), err)
	}
	return NewRouter(t, members, o.Logger)
}

func (c *Config) sourceName() string {
	if c.Source == "" {
		return "built-in configuration"
	}
	return c.Source
}

// newProvider creates one configured provider. A sandbox learns which
// routes it heads with another provider behind it (card 4000000000000259 is
// unavailable there, so that it fails over once).
func (c *Config) newProvider(pc ProviderConfig, common []sandbox.Option) (paygate.Provider, error) {
	switch pc.Kind {
	case KindSandbox:
		opts := append([]sandbox.Option(nil), common...)
		opts = append(opts, sandbox.WithLatency(pc.Latency), sandbox.WithFailureRate(pc.FailureRate))
		rc := c.Routes[pc.Mode]
		var heads []string
		for cur, ids := range rc.Currency {
			if len(ids) > 1 && ids[0] == pc.ID {
				heads = append(heads, cur)
			}
		}
		if len(heads) > 0 {
			opts = append(opts, sandbox.FirstOf(heads...))
		}
		if len(rc.Default) > 1 && rc.Default[0] == pc.ID {
			opts = append(opts, c.headsDefault(rc)...)
		}
		return sandbox.New(pc.ID, pc.Currencies, opts...), nil
	case KindStripe:
		p, err := stripe.New(stripe.Config{
			ID: pc.ID, SecretKey: pc.Credentials["secret_key"].Reveal(), BaseURL: pc.BaseURL,
			Currencies: pc.Currencies, Timeout: pc.Timeout,
		})
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", c.sourceName(), pc.Line, err)
		}
		return p, nil
	case KindAdyen:
		return c.newAdyen(pc) // build_adyen.go
	default:
		return nil, fmt.Errorf("%s:%d: provider %q: unknown kind %q", c.sourceName(), pc.Line, pc.ID, pc.Kind)
	}
}

// headsDefault returns the sandbox option of the head of a default route
// with others behind it: card 4000000000000259 fails over for the
// currencies that the route serves (not listed with routes of their own)
// and that a later provider accepts.
func (c *Config) headsDefault(rc RouteConfig) []sandbox.Option {
	byID := map[string]ProviderConfig{}
	for _, pc := range c.Providers {
		byID[pc.ID] = pc
	}
	var behind []string
	for _, id := range rc.Default[1:] {
		cs := byID[id].Currencies
		if cs == nil {
			// Someone behind takes every currency.
			listed := make([]string, 0, len(rc.Currency))
			for cur := range rc.Currency {
				listed = append(listed, cur)
			}
			return []sandbox.Option{sandbox.FirstOfDefault(listed...)}
		}
		for _, cur := range cs {
			if _, own := rc.Currency[cur]; !own {
				behind = append(behind, cur)
			}
		}
	}
	if len(behind) == 0 {
		return nil
	}
	return []sandbox.Option{sandbox.FirstOf(behind...)}
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
