package provider

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/paygate"
)

// Limits and defaults of the configuration file.
const (
	// DefaultTimeout is the deadline of one provider call when the file
	// gives none.
	DefaultTimeout = 10 * time.Second
	// MaxTimeout is the longest deadline a provider call may have: a charge
	// must be over well within the payment's lease (paygate.PaymentLease),
	// after which recovery may take the payment over.
	MaxTimeout = ChargeBudget
	// MaxLatency bounds the sandbox's simulated latency.
	MaxLatency = time.Minute
	// DefaultBreakerFailures is how many failures in a row open a breaker.
	DefaultBreakerFailures = 5
	// DefaultBreakerOpenFor is how long an open breaker keeps its provider
	// out of rotation before one probe may go through.
	DefaultBreakerOpenFor = 30 * time.Second
	// DefaultBreakerProbes is how many probes must succeed to close it.
	DefaultBreakerProbes = 1
)

// KindSandbox is the kind of the built-in test-mode providers.
const KindSandbox = "sandbox"

// The kinds of the live connectors (test mode may use them too, with the
// providers' test credentials).
const (
	KindStripe = "stripe" // internal/provider/stripe: credential secret_key; optional base_url
	KindAdyen  = "adyen"  // internal/provider/adyen: credentials api_key, hmac_key; merchant_account; optional base_url
)

// kindsKnown lists the kinds, for messages.
const kindsKnown = "sandbox, stripe, adyen"

// kindCredentials are the credentials each kind takes (all required).
var kindCredentials = map[string][]string{
	KindStripe: {"secret_key"},
	KindAdyen:  {"api_key", "hmac_key"},
}

// Config is the operator's configuration of providers and routes: the file
// given to serve with --config. The zero Config (no file) has no providers
// of its own: test mode uses the built-in sandboxes and live mode has none.
type Config struct {
	// Source names the file, for messages ("" without a file).
	Source    string
	Providers []ProviderConfig
	// Routes holds the modes the file routes. A mode the file does not
	// route gets the built-in routes: the four sandboxes in test mode,
	// nothing in live mode.
	Routes map[paygate.Mode]RouteConfig
}

// ProviderConfig is one provider of the file.
type ProviderConfig struct {
	ID   string
	Kind string
	Mode paygate.Mode
	// Currencies the provider accepts, upper case; nil accepts every one.
	Currencies []string
	// Timeout is the deadline of each call to the provider.
	Timeout time.Duration
	// Credentials maps each credential's name to its value, read from the
	// environment variable the file names. Values never print.
	Credentials map[string]Secret
	// BaseURL is a live connector's API address ("" is the provider's
	// own); MerchantAccount is Adyen's merchant account.
	BaseURL         string
	MerchantAccount string
	// Latency and FailureRate are the sandbox's realism knobs.
	Latency     time.Duration
	FailureRate float64
	Breaker     BreakerConfig
	// Line is where the provider is declared in the file.
	Line int
}

// BreakerConfig configures a provider's circuit breaker.
type BreakerConfig struct {
	// Failures in a row (errors and timeouts, never a test card's
	// simulated fate) that open the breaker.
	Failures uint32
	// OpenFor is how long the breaker stays open before probes go through.
	OpenFor time.Duration
	// Probes is how many probes must succeed, in a row, to close it.
	Probes uint32
}

// DefaultBreaker returns the breaker settings used when the file gives none.
func DefaultBreaker() BreakerConfig {
	return BreakerConfig{Failures: DefaultBreakerFailures, OpenFor: DefaultBreakerOpenFor, Probes: DefaultBreakerProbes}
}

// RouteConfig is the routing of one mode: provider ids in the order to try.
type RouteConfig struct {
	Currency map[string][]string
	Default  []string
}

// Secret is a credential's value. It prints as [redacted], in logs too.
type Secret string

// String masks the secret.
func (Secret) String() string { return "[redacted]" }

// LogValue masks the secret in log/slog.
func (Secret) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// Reveal returns the secret itself, for a connector's use only.
func (s Secret) Reveal() string { return string(s) }

// LoadConfig reads and checks the configuration file at path. An empty path
// is no file: the zero Config. lookupEnv reads the environment variables
// that credentials name (os.LookupEnv in production). Errors name the file
// and the line: "paygate.yaml:12: route EUR: unknown provider \"x\"".
func LoadConfig(path string, lookupEnv func(string) (string, bool)) (*Config, error) {
	if path == "" {
		return &Config{}, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read configuration: %w", err)
	}
	return ParseConfig(path, raw, lookupEnv)
}

// ParseConfig checks a configuration file's contents; source names it in
// errors.
func ParseConfig(source string, raw []byte, lookupEnv func(string) (string, bool)) (*Config, error) {
	if lookupEnv == nil {
		lookupEnv = func(string) (string, bool) { return "", false }
	}
	p := &parser{source: source, env: lookupEnv, cfg: &Config{Source: source}}
	if err := p.parse(raw); err != nil {
		return nil, err
	}
	return p.cfg, nil
}

// ConfigError is an error in the configuration file, at a line (0 when the
// file as a whole is at fault).
type ConfigError struct {
	Source string
	Line   int
	Msg    string
}

func (e *ConfigError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Source, e.Line, e.Msg)
	}
	return e.Source + ": " + e.Msg
}

// parser walks the YAML document node by node, so that every error, also
// the semantic ones, names its line.
type parser struct {
	source string
	env    func(string) (string, bool)
	cfg    *Config
}

func (p *parser) errAt(n *yaml.Node, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &ConfigError{Source: p.source, Line: line, Msg: fmt.Sprintf(format, args...)}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (p *parser) parse(raw []byte) error {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // an empty file: no providers, built-in routes
		}
		msg := err.Error()
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			return &ConfigError{Source: p.source, Line: line, Msg: m[2]}
		}
		return &ConfigError{Source: p.source, Msg: strings.TrimPrefix(msg, "yaml: ")}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return p.errAt(&extra, "only one YAML document is allowed")
	}
	root := resolve(&doc)
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil
		}
		root = resolve(root.Content[0])
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil
	}
	var providersNode, routesNode *yaml.Node
	err := p.mapping(root, "the configuration", map[string]func(k, v *yaml.Node) error{
		"providers": func(_, v *yaml.Node) error { providersNode = v; return nil },
		"routes":    func(_, v *yaml.Node) error { routesNode = v; return nil },
	})
	if err != nil {
		return err
	}
	if providersNode != nil {
		if err := p.providers(providersNode); err != nil {
			return err
		}
	}
	if routesNode != nil {
		if err := p.routes(routesNode); err != nil {
			return err
		}
	}
	// A mode with providers of its own must say how to route them.
	for _, pc := range p.cfg.Providers {
		if _, ok := p.cfg.Routes[pc.Mode]; !ok {
			return &ConfigError{Source: p.source, Line: pc.Line, Msg: fmt.Sprintf(
				"provider %q serves %s mode, but routes has no %s section", pc.ID, pc.Mode, pc.Mode)}
		}
	}
	return nil
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// mapping walks a mapping node, calling the handler of each key. Unknown
// and repeated keys are errors.
func (p *parser) mapping(n *yaml.Node, what string, fields map[string]func(k, v *yaml.Node) error) error {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return p.errAt(n, "%s must be a mapping (key: value lines)", what)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		f, ok := fields[k.Value]
		if !ok {
			known := make([]string, 0, len(fields))
			for name := range fields {
				known = append(known, name)
			}
			sort.Strings(known)
			return p.errAt(k, "unknown key %q in %s (known: %s)", k.Value, what, strings.Join(known, ", "))
		}
		if seen[k.Value] {
			return p.errAt(k, "%q is given twice in %s", k.Value, what)
		}
		seen[k.Value] = true
		if err := f(k, v); err != nil {
			return err
		}
	}
	return nil
}

// str reads a string scalar.
func (p *parser) str(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errAt(n, "%s must be a string", what)
	}
	return n.Value, nil
}

// duration reads a Go duration ("150ms", "10s").
func (p *parser) duration(n *yaml.Node, what string) (time.Duration, error) {
	s, err := p.str(n, what)
	if err != nil {
		return 0, err
	}
	d, perr := time.ParseDuration(s)
	if perr != nil {
		return 0, p.errAt(n, "%s %q is not a duration such as 500ms or 10s", what, s)
	}
	return d, nil
}

// count reads a positive whole number.
func (p *parser) count(n *yaml.Node, what string) (uint32, error) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		return 0, p.errAt(n, "%s must be a whole number", what)
	}
	v, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil || v < 1 || v > 1_000_000 {
		return 0, p.errAt(n, "%s must be from 1 to 1000000", what)
	}
	return uint32(v), nil
}

// strings reads a sequence of strings.
func (p *parser) strList(n *yaml.Node, what string) ([]string, []*yaml.Node, error) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		return nil, nil, p.errAt(n, "%s must be a list such as [a, b]", what)
	}
	out := make([]string, 0, len(n.Content))
	nodes := make([]*yaml.Node, 0, len(n.Content))
	for _, item := range n.Content {
		item = resolve(item)
		s, err := p.str(item, what+" entries")
		if err != nil {
			return nil, nil, err
		}
		out = append(out, s)
		nodes = append(nodes, item)
	}
	return out, nodes, nil
}

var (
	providerIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	envNamePattern    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// currencyCode checks an ISO 4217 code one can pay with and returns it in
// upper case.
func (p *parser) currencyCode(n *yaml.Node, s string) (string, error) {
	if _, ok := money.Digits(s); !ok {
		return "", p.errAt(n, "%q is not a current ISO 4217 currency code", s)
	}
	return strings.ToUpper(s), nil
}

func (p *parser) providers(n *yaml.Node) error {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return p.errAt(n, "providers must be a list of providers (lines starting with -)")
	}
	seen := map[string]int{}
	for _, item := range n.Content {
		item = resolve(item)
		pc := ProviderConfig{Line: item.Line, Timeout: DefaultTimeout, Breaker: DefaultBreaker()}
		var idNode, kindNode, modeNode, sandboxNode, baseURLNode, merchantNode, credNode *yaml.Node
		var curNodes []*yaml.Node
		err := p.mapping(item, "a provider", map[string]func(k, v *yaml.Node) error{
			"id": func(_, v *yaml.Node) (err error) {
				idNode = v
				pc.ID, err = p.str(v, "id")
				return err
			},
			"kind": func(_, v *yaml.Node) (err error) {
				kindNode = v
				pc.Kind, err = p.str(v, "kind")
				return err
			},
			"mode": func(_, v *yaml.Node) error {
				modeNode = v
				s, err := p.str(v, "mode")
				pc.Mode = paygate.Mode(s)
				return err
			},
			"currencies": func(_, v *yaml.Node) (err error) {
				pc.Currencies, curNodes, err = p.strList(v, "currencies")
				return err
			},
			"timeout": func(_, v *yaml.Node) (err error) {
				if pc.Timeout, err = p.duration(v, "timeout"); err != nil {
					return err
				}
				if pc.Timeout <= 0 || pc.Timeout > MaxTimeout {
					return p.errAt(v, "timeout must be more than 0 and at most %s (a payment's provider calls must end within its lease)", MaxTimeout)
				}
				return nil
			},
			"credentials": func(_, v *yaml.Node) error { credNode = v; return p.credentials(v, &pc) },
			"base_url": func(_, v *yaml.Node) (err error) {
				baseURLNode = v
				pc.BaseURL, err = p.str(v, "base_url")
				return err
			},
			"merchant_account": func(_, v *yaml.Node) (err error) {
				merchantNode = v
				pc.MerchantAccount, err = p.str(v, "merchant_account")
				return err
			},
			"sandbox": func(_, v *yaml.Node) error {
				sandboxNode = v
				return p.sandboxKnobs(v, &pc)
			},
			"breaker": func(_, v *yaml.Node) error { return p.breaker(v, &pc.Breaker) },
		})
		if err != nil {
			return err
		}
		switch {
		case idNode == nil:
			return p.errAt(item, "a provider needs an id")
		case !providerIDPattern.MatchString(pc.ID):
			return p.errAt(idNode, "id %q must be 1 to 63 lower-case letters, digits, '.', '_' or '-'", pc.ID)
		}
		if line, ok := seen[pc.ID]; ok {
			return p.errAt(idNode, "provider %q is declared twice (first at line %d)", pc.ID, line)
		}
		seen[pc.ID] = item.Line
		if kindNode == nil {
			return p.errAt(item, "provider %q needs a kind (known: %s)", pc.ID, kindsKnown)
		}
		if pc.Kind != KindSandbox && pc.Kind != KindStripe && pc.Kind != KindAdyen {
			return p.errAt(kindNode, "provider %q: unknown kind %q (known: %s)", pc.ID, pc.Kind, kindsKnown)
		}
		if modeNode == nil {
			if pc.Kind != KindSandbox {
				return p.errAt(item, "provider %q: a %s provider needs a mode (live, or test with the provider's test credentials)", pc.ID, pc.Kind)
			}
			pc.Mode = paygate.ModeTest // a sandbox serves test mode only
		}
		if err := p.liveSettings(&pc, item, baseURLNode, merchantNode, credNode); err != nil {
			return err
		}
		if !pc.Mode.Valid() {
			return p.errAt(modeNode, "provider %q: mode must be test or live", pc.ID)
		}
		if pc.Kind == KindSandbox && pc.Mode != paygate.ModeTest {
			return p.errAt(modeNode, "provider %q: a sandbox serves test mode only", pc.ID)
		}
		if sandboxNode != nil && pc.Kind != KindSandbox {
			return p.errAt(sandboxNode, "provider %q: sandbox settings apply to kind sandbox only", pc.ID)
		}
		for i, c := range pc.Currencies {
			code, err := p.currencyCode(curNodes[i], c)
			if err != nil {
				return err
			}
			if slices.Contains(pc.Currencies[:i], code) {
				return p.errAt(curNodes[i], "provider %q lists %s twice", pc.ID, code)
			}
			pc.Currencies[i] = code
		}
		p.cfg.Providers = append(p.cfg.Providers, pc)
	}
	return nil
}

// liveSettings checks what a live connector needs: its credentials (each
// one it takes, no other), its merchant account (Adyen) and an http(s) base
// URL; a sandbox takes none of these settings.
func (p *parser) liveSettings(pc *ProviderConfig, item, baseURLNode, merchantNode, credNode *yaml.Node) error {
	if pc.Kind == KindSandbox {
		if baseURLNode != nil {
			return p.errAt(baseURLNode, "provider %q: base_url applies to kinds stripe and adyen only", pc.ID)
		}
		if merchantNode != nil {
			return p.errAt(merchantNode, "provider %q: merchant_account applies to kind adyen only", pc.ID)
		}
		return nil
	}
	want := kindCredentials[pc.Kind]
	for name := range pc.Credentials {
		if !slices.Contains(want, name) {
			return p.errAt(credNode, "provider %q: unknown credential %q for kind %s (it takes %s)", pc.ID, name, pc.Kind, strings.Join(want, ", "))
		}
	}
	for _, name := range want {
		if _, ok := pc.Credentials[name]; !ok {
			at := credNode
			if at == nil {
				at = item
			}
			return p.errAt(at, "provider %q: kind %s needs credential %s (the name of the environment variable that holds it)", pc.ID, pc.Kind, name)
		}
	}
	switch {
	case pc.Kind == KindAdyen && merchantNode == nil:
		return p.errAt(item, "provider %q: kind adyen needs merchant_account", pc.ID)
	case pc.Kind == KindAdyen && strings.TrimSpace(pc.MerchantAccount) == "":
		return p.errAt(merchantNode, "provider %q: merchant_account is empty", pc.ID)
	case pc.Kind != KindAdyen && merchantNode != nil:
		return p.errAt(merchantNode, "provider %q: merchant_account applies to kind adyen only", pc.ID)
	case pc.Kind == KindAdyen && pc.Mode == paygate.ModeLive && baseURLNode == nil:
		// Adyen's live endpoints are account-specific; the default is its test endpoint.
		return p.errAt(item, "provider %q: a live adyen provider needs base_url (https://<prefix>-checkout-live.adyenpayments.com/checkout/v71)", pc.ID)
	}
	if baseURLNode != nil {
		u, err := url.Parse(pc.BaseURL)
		if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname()))) {
			return p.errAt(baseURLNode, "provider %q: base_url %q must be an https URL (http only on loopback, for mocks)", pc.ID, pc.BaseURL)
		}
	}
	return nil
}

// loopbackHost reports whether a host is the local machine.
func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func (p *parser) credentials(n *yaml.Node, pc *ProviderConfig) error {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return p.errAt(n, "credentials must map each credential's name to the environment variable that holds it")
	}
	pc.Credentials = map[string]Secret{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if _, dup := pc.Credentials[k.Value]; dup {
			return p.errAt(k, "credential %q is given twice", k.Value)
		}
		name, err := p.str(v, "credential "+k.Value)
		if err != nil {
			return err
		}
		if !envNamePattern.MatchString(name) {
			return p.errAt(v, "credential %q: %q is not an environment variable name (the file names the variable, never the secret)", k.Value, name)
		}
		val, ok := p.env(name)
		if !ok || val == "" {
			return p.errAt(v, "credential %q: environment variable %s is not set", k.Value, name)
		}
		pc.Credentials[k.Value] = Secret(val)
	}
	return nil
}

func (p *parser) sandboxKnobs(n *yaml.Node, pc *ProviderConfig) error {
	return p.mapping(n, "sandbox settings", map[string]func(k, v *yaml.Node) error{
		"latency": func(_, v *yaml.Node) (err error) {
			if pc.Latency, err = p.duration(v, "latency"); err != nil {
				return err
			}
			if pc.Latency < 0 || pc.Latency > MaxLatency {
				return p.errAt(v, "latency must be from 0 to %s", MaxLatency)
			}
			return nil
		},
		"failureRate": func(_, v *yaml.Node) error {
			if v.Kind != yaml.ScalarNode || (v.Tag != "!!float" && v.Tag != "!!int") {
				return p.errAt(v, "failureRate must be a number from 0 to 1")
			}
			f, err := strconv.ParseFloat(v.Value, 64)
			if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
				return p.errAt(v, "failureRate must be a number from 0 to 1")
			}
			pc.FailureRate = f
			return nil
		},
	})
}

func (p *parser) breaker(n *yaml.Node, b *BreakerConfig) error {
	return p.mapping(n, "breaker settings", map[string]func(k, v *yaml.Node) error{
		"failures": func(_, v *yaml.Node) (err error) {
			b.Failures, err = p.count(v, "failures")
			return err
		},
		"openFor": func(_, v *yaml.Node) (err error) {
			if b.OpenFor, err = p.duration(v, "openFor"); err != nil {
				return err
			}
			if b.OpenFor <= 0 {
				return p.errAt(v, "openFor must be more than 0")
			}
			return nil
		},
		"probes": func(_, v *yaml.Node) (err error) {
			b.Probes, err = p.count(v, "probes")
			return err
		},
	})
}

// defaultRouteKey names the default route in the file.
const defaultRouteKey = "default"

func (p *parser) routes(n *yaml.Node) error {
	byID := map[string]ProviderConfig{}
	for _, pc := range p.cfg.Providers {
		byID[pc.ID] = pc
	}
	p.cfg.Routes = map[paygate.Mode]RouteConfig{}
	route := func(mode paygate.Mode) func(k, v *yaml.Node) error {
		return func(_, v *yaml.Node) error {
			rc := RouteConfig{Currency: map[string][]string{}}
			v = resolve(v)
			if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
				p.cfg.Routes[mode] = rc // "live:" alone: no providers
				return nil
			}
			if v.Kind != yaml.MappingNode {
				return p.errAt(v, "routes.%s must map currencies (and default) to lists of provider ids", mode)
			}
			for i := 0; i+1 < len(v.Content); i += 2 {
				k, list := resolve(v.Content[i]), resolve(v.Content[i+1])
				key := k.Value
				if key != defaultRouteKey {
					code, err := p.currencyCode(k, key)
					if err != nil {
						return p.errAt(k, "routes.%s: %q is neither a current ISO 4217 currency code nor %q", mode, key, defaultRouteKey)
					}
					key = code
				}
				_, dupCurrency := rc.Currency[key]
				if dupCurrency || (key == defaultRouteKey && rc.Default != nil) {
					return p.errAt(k, "routes.%s: %s is routed twice", mode, key)
				}
				ids, nodes, err := p.strList(list, fmt.Sprintf("routes.%s.%s", mode, key))
				if err != nil {
					return err
				}
				if len(ids) == 0 && key != defaultRouteKey {
					return p.errAt(list, "routes.%s.%s is empty (leave it out to use the default route)", mode, key)
				}
				for j, id := range ids {
					pc, ok := byID[id]
					if !ok {
						return p.errAt(nodes[j], "routes.%s.%s: unknown provider %q", mode, key, id)
					}
					if pc.Mode != mode {
						return p.errAt(nodes[j], "routes.%s.%s: provider %q serves %s mode", mode, key, id, pc.Mode)
					}
					if key != defaultRouteKey && pc.Currencies != nil && !slices.Contains(pc.Currencies, key) {
						return p.errAt(nodes[j], "routes.%s.%s: provider %q does not serve %s (its currencies are %s)",
							mode, key, id, key, strings.Join(pc.Currencies, ", "))
					}
					if slices.Contains(ids[:j], id) {
						return p.errAt(nodes[j], "routes.%s.%s: provider %q is listed twice", mode, key, id)
					}
				}
				if key == defaultRouteKey {
					rc.Default = append([]string{}, ids...)
				} else {
					rc.Currency[key] = ids
				}
			}
			p.cfg.Routes[mode] = rc
			return nil
		}
	}
	return p.mapping(n, "routes", map[string]func(k, v *yaml.Node) error{
		string(paygate.ModeTest): route(paygate.ModeTest),
		string(paygate.ModeLive): route(paygate.ModeLive),
	})
}
