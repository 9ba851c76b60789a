package provider

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/connector"
	"github.com/paygate/paygate/internal/provider/score"
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
	// DefaultBreakerFailures is how many failures in a row open a breaker.
	DefaultBreakerFailures = 5
	// DefaultBreakerOpenFor is how long an open breaker keeps its provider
	// out of rotation before one probe may go through.
	DefaultBreakerOpenFor = 30 * time.Second
	// DefaultBreakerProbes is how many probes must succeed to close it.
	DefaultBreakerProbes = 1
)

// Config is the operator's configuration of providers and routes: the file
// given to serve with --config. The zero Config (no file) has no providers
// of its own: test mode uses the built-in routes of the registered
// connectors (the sandboxes) and live mode has none.
type Config struct {
	// Source names the file, for messages ("" without a file).
	Source    string
	Providers []ProviderConfig
	// Routes holds the modes the file routes. A mode the file does not
	// route gets the built-in routes: the sandboxes in test mode, nothing
	// in live mode.
	Routes map[paygate.Mode]RouteConfig
	// SuccessRate holds, per mode, the routes whose strategy is
	// success_rate (decisions §21), by currency or "default", with their
	// settings; the others route by priority (the listed order).
	SuccessRate map[paygate.Mode]map[string]score.Settings
}

// ProviderConfig is one provider of the file: what its connector sees
// (the id, kind, mode, currencies, timeout, credentials and the kind's own
// settings), its breaker, and its line.
type ProviderConfig struct {
	connector.Entry
	Breaker BreakerConfig
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
type RouteConfig = connector.RouteConfig

// Secret is a credential's value. It prints as [redacted], in logs too.
type Secret = connector.Secret

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
// errors. Provider kinds are those registered (Register).
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

// The file's shape. Each mapping decodes into a struct, key by key, with
// unknown and repeated keys refused (parser.mapping); what cannot be a
// struct (routes map currencies, credentials map names) is kept as a node.
type (
	fileYAML struct {
		Providers yaml.Node `yaml:"providers"`
		Routes    yaml.Node `yaml:"routes"`
	}
	providerYAML struct {
		ID          string      `yaml:"id"`
		Kind        string      `yaml:"kind"`
		Mode        string      `yaml:"mode"`
		Currencies  []string    `yaml:"currencies"`
		Timeout     timeout     `yaml:"timeout"`
		Credentials yaml.Node   `yaml:"credentials"`
		Breaker     breakerYAML `yaml:"breaker"`
	}
	breakerYAML struct {
		Failures count   `yaml:"failures"`
		OpenFor  openFor `yaml:"openFor"`
		Probes   count   `yaml:"probes"`
	}
	routesYAML struct {
		Test yaml.Node `yaml:"test"`
		Live yaml.Node `yaml:"live"`
	}
	// routeYAML is a route given as a mapping (decisions §21).
	routeYAML struct {
		Providers  yaml.Node   `yaml:"providers"`
		Strategy   string      `yaml:"strategy"`
		Window     *windowSize `yaml:"window"`
		Explore    *percent    `yaml:"explore"`
		MinSamples *samples    `yaml:"minSamples"`
		// MinSamplesAlias is min_samples, the spelling of
		// minSamples (decisions §21 spells minSamples); one of the two.
		MinSamplesAlias *samples `yaml:"min_samples"`
	}
)

// Strategies of a route.
const (
	StrategyPriority    = "priority"
	StrategySuccessRate = "success_rate"
)

// The settings of a success_rate route.
type (
	// windowSize is how many attempts a score is measured over.
	windowSize int
	// percent is a whole percentage, 0 to 100.
	percent int
	// samples is a number of attempts, 0 or more.
	samples int
)

// wholeNumber reads n as a whole number from lo to hi.
func wholeNumber(n *yaml.Node, lo, hi int64) (int64, error) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		return 0, errors.New("must be a whole number")
	}
	v, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("must be from %d to %d", lo, hi)
	}
	return v, nil
}

func (w *windowSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := wholeNumber(n, 1, score.MaxWindow)
	*w = windowSize(v)
	return err
}

func (p *percent) UnmarshalYAML(n *yaml.Node) error {
	v, err := wholeNumber(n, 0, 100)
	*p = percent(v)
	return err
}

func (s *samples) UnmarshalYAML(n *yaml.Node) error {
	v, err := wholeNumber(n, 0, score.MaxWindow)
	*s = samples(v)
	return err
}

// The value types check their range where they are read, so that the
// file's first mistake is the one reported; their zero is "not given".
type (
	// count is a positive whole number.
	count uint32
	// timeout is a provider call's deadline, at most MaxTimeout.
	timeout connector.Duration
	// openFor is how long a breaker stays open.
	openFor connector.Duration
)

func (c *count) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		return errors.New("must be a whole number")
	}
	v, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil || v < 1 || v > 1_000_000 {
		return errors.New("must be from 1 to 1000000")
	}
	*c = count(v)
	return nil
}

func (t *timeout) UnmarshalYAML(n *yaml.Node) error {
	return (*connector.Duration)(t).Within(n, 1, MaxTimeout,
		fmt.Sprintf("more than 0 and at most %s (a payment's provider calls must end within its lease)", MaxTimeout))
}

func (o *openFor) UnmarshalYAML(n *yaml.Node) error {
	return (*connector.Duration)(o).Within(n, 1, math.MaxInt64, "more than 0")
}

// parser decodes the document, so that every error, also the semantic
// ones, names its line.
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
	if isNull(root) {
		return nil
	}
	var f fileYAML
	if _, err := p.decode(root, "the configuration", &f); err != nil {
		return err
	}
	if err := p.providers(&f.Providers); err != nil {
		return err
	}
	if f.Routes.Kind != 0 {
		if err := p.routes(&f.Routes); err != nil {
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

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// fields maps the yaml tags of the struct dst points to onto its fields.
func fields(dst any, into map[string]reflect.Value) map[string]reflect.Value {
	v := reflect.ValueOf(dst).Elem()
	for i := 0; i < v.NumField(); i++ {
		if tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ","); tag != "" {
			into[tag] = v.Field(i)
		}
	}
	return into
}

// decode decodes the mapping n into the struct dst points to (see mapping)
// and returns the value node of every key given.
func (p *parser) decode(n *yaml.Node, what string, dst any) (map[string]*yaml.Node, error) {
	nodes := map[string]*yaml.Node{}
	return nodes, p.mapping(n, what, fields(dst, map[string]reflect.Value{}), nodes, nil)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var (
	nodeType        = reflect.TypeFor[yaml.Node]()
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
)

// mapping decodes the mapping n key by key, in the file's order, into the
// fields of that name (f), checking each value as it is read (value), so
// that the file's first mistake is the one reported. A key that names no
// field is an error naming the known ones; a key given twice is an error;
// a struct field is a nested mapping ("breaker settings"); a yaml.Node
// field keeps the node. nodes receives each key's value node; then, when
// not nil, runs after each key is read.
func (p *parser) mapping(n *yaml.Node, what string, f map[string]reflect.Value,
	nodes map[string]*yaml.Node, then func(key string, v *yaml.Node) error) error {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return p.errAt(n, "%s must be a mapping (key: value lines)", what)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		field, ok := f[k.Value]
		if !ok {
			return p.errAt(k, "unknown key %q in %s (known: %s)", k.Value, what, strings.Join(sortedKeys(f), ", "))
		}
		if nodes[k.Value] != nil {
			return p.errAt(k, "%q is given twice in %s", k.Value, what)
		}
		nodes[k.Value] = v
		var err error
		switch {
		case field.Type() == nodeType:
			field.Set(reflect.ValueOf(*v))
		case isSettings(field.Type()):
			err = p.mapping(v, k.Value+" settings", fields(field.Addr().Interface(), map[string]reflect.Value{}), map[string]*yaml.Node{}, nil)
		default:
			err = p.value(v, k.Value, field)
		}
		if err == nil && then != nil {
			err = then(k.Value, v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// isSettings reports whether a field of type t is a nested mapping.
func isSettings(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(unmarshalerType)
}

// value reads v into field; key names it in messages. A field is a string
// (any scalar, as written), a list of strings, a pointer to either (set
// when the key is given), or a yaml.Unmarshaler, which writes its own
// messages and is called for a null too: "timeout:" with nothing after it
// is a mistake, never the default.
func (p *parser) value(v *yaml.Node, key string, field reflect.Value) error {
	if field.Kind() == reflect.Pointer {
		field.Set(reflect.New(field.Type().Elem()))
		field = field.Elem()
	}
	if u, ok := field.Addr().Interface().(yaml.Unmarshaler); ok {
		if err := u.UnmarshalYAML(v); err != nil {
			return p.errAt(v, "%s %v", key, err)
		}
		return nil
	}
	switch {
	case field.Kind() == reflect.String:
		s, err := p.str(v, key)
		field.SetString(s)
		return err
	case field.Type() == reflect.TypeFor[[]string]():
		list, err := p.strList(v, key)
		field.Set(reflect.ValueOf(list))
		return err
	}
	return p.errAt(v, "%s cannot be read: its setting has type %s", key, field.Type())
}

// str reads a scalar as written.
func (p *parser) str(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		return "", p.errAt(n, "%s must be a string", what)
	}
	return n.Value, nil
}

// strList reads a list of scalars.
func (p *parser) strList(n *yaml.Node, what string) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errAt(n, "%s must be a list such as [a, b]", what)
	}
	out := make([]string, len(n.Content))
	for i, item := range n.Content {
		s, err := p.str(resolve(item), what+" entries")
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
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
	if n.Kind == 0 || isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return p.errAt(n, "providers must be a list of providers (lines starting with -)")
	}
	seen := map[string]int{}
	for _, item := range n.Content {
		pc, err := p.provider(resolve(item), seen)
		if err != nil {
			return err
		}
		p.cfg.Providers = append(p.cfg.Providers, pc)
	}
	return nil
}

// provider decodes one entry: the keys every kind has into providerYAML,
// the kind's own into its connector's settings. The keys of other kinds
// are read too (into values thrown away), so that their mistakes come in
// the file's order, and then refused.
func (p *parser) provider(item *yaml.Node, seen map[string]int) (ProviderConfig, error) {
	pc := ProviderConfig{Entry: connector.Entry{Timeout: DefaultTimeout}, Line: item.Line, Breaker: DefaultBreaker()}
	c, known := connectorOf(kindOf(item))
	var e providerYAML
	own := fields(&e, map[string]reflect.Value{})
	if known && c.Settings != nil {
		pc.Settings = c.Settings()
		fields(pc.Settings, own)
	}
	f := map[string]reflect.Value{}
	for _, other := range Connectors() {
		if other.Settings != nil && other.Kind != c.Kind {
			fields(other.Settings(), f)
		}
	}
	maps.Copy(f, own)
	nodes := map[string]*yaml.Node{}
	err := p.mapping(item, "a provider", f, nodes, func(key string, v *yaml.Node) error {
		if key == "credentials" {
			return p.credentials(v, &pc)
		}
		return nil
	})
	if err != nil {
		return pc, err
	}
	pc.ID, pc.Kind, pc.Mode, pc.Currencies = e.ID, e.Kind, paygate.Mode(e.Mode), e.Currencies
	idNode := nodes["id"]
	switch {
	case idNode == nil:
		return pc, p.errAt(item, "a provider needs an id")
	case !providerIDPattern.MatchString(pc.ID):
		return pc, p.errAt(idNode, "id %q must be 1 to 63 lower-case letters, digits, '.', '_' or '-'", pc.ID)
	}
	if line, ok := seen[pc.ID]; ok {
		return pc, p.errAt(idNode, "provider %q is declared twice (first at line %d)", pc.ID, line)
	}
	seen[pc.ID] = item.Line
	if nodes["kind"] == nil {
		return pc, p.errAt(item, "provider %q needs a kind (known: %s)", pc.ID, kindsKnown())
	}
	if !known {
		return pc, p.errAt(nodes["kind"], "provider %q: unknown kind %q (known: %s)", pc.ID, pc.Kind, kindsKnown())
	}
	modeNode := nodes["mode"]
	if modeNode == nil {
		if !c.TestOnly {
			return pc, p.errAt(item, "provider %q: a %s provider needs a mode (live, or test with the provider's test credentials)", pc.ID, pc.Kind)
		}
		pc.Mode = paygate.ModeTest
	}
	if err := p.wantCredentials(nodes["credentials"], item, &pc, c.Credentials); err != nil {
		return pc, err
	}
	// A key of other kinds only is refused, a single setting (base_url) with
	// the credentials, a block of settings (sandbox:) once the mode is
	// checked.
	foreign := func(block bool) error {
		for _, key := range sortedKeys(nodes) {
			if _, ok := own[key]; !ok && isSettings(f[key].Type()) == block {
				if block {
					return p.errAt(nodes[key], "provider %q: %s settings apply to %s only", pc.ID, key, kindList(kindsTaking(key)))
				}
				return p.errAt(nodes[key], "provider %q: %s applies to %s only", pc.ID, key, kindList(kindsTaking(key)))
			}
		}
		return nil
	}
	if err := foreign(false); err != nil {
		return pc, err
	}
	if c.Check != nil {
		if err := c.Check(pc.Entry); err != nil {
			var ke *connector.KeyError
			if !errors.As(err, &ke) {
				return pc, p.errAt(item, "provider %q: %v", pc.ID, err)
			}
			at := nodes[ke.Key]
			if at == nil {
				at = item
			}
			return pc, p.errAt(at, "%s", ke.Msg)
		}
	}
	if !pc.Mode.Valid() {
		return pc, p.errAt(modeNode, "provider %q: mode must be test or live", pc.ID)
	}
	if c.TestOnly && pc.Mode != paygate.ModeTest {
		return pc, p.errAt(modeNode, "provider %q: a %s serves test mode only", pc.ID, pc.Kind)
	}
	if err := foreign(true); err != nil {
		return pc, err
	}
	if e.Timeout != 0 {
		pc.Timeout = time.Duration(e.Timeout)
	}
	b := e.Breaker
	if b.Failures != 0 {
		pc.Breaker.Failures = uint32(b.Failures)
	}
	if b.OpenFor != 0 {
		pc.Breaker.OpenFor = time.Duration(b.OpenFor)
	}
	if b.Probes != 0 {
		pc.Breaker.Probes = uint32(b.Probes)
	}
	for i, cur := range pc.Currencies {
		at := resolve(nodes["currencies"].Content[i])
		code, err := p.currencyCode(at, cur)
		if err != nil {
			return pc, err
		}
		if slices.Contains(pc.Currencies[:i], code) {
			return pc, p.errAt(at, "provider %q lists %s twice", pc.ID, code)
		}
		pc.Currencies[i] = code
	}
	return pc, nil
}

// kindOf is the kind an entry names, "" when it names none.
func kindOf(item *yaml.Node) string {
	if item.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(item.Content); i += 2 {
		if resolve(item.Content[i]).Value == "kind" {
			return resolve(item.Content[i+1]).Value
		}
	}
	return ""
}

// kindList writes kinds for a message: "kind adyen", "kinds stripe and adyen".
func kindList(kinds []string) string {
	if len(kinds) == 1 {
		return "kind " + kinds[0]
	}
	return "kinds " + strings.Join(kinds[:len(kinds)-1], ", ") + " and " + kinds[len(kinds)-1]
}

// credentials reads the credentials mapping: each name to the environment
// variable that holds it.
func (p *parser) credentials(n *yaml.Node, pc *ProviderConfig) error {
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

// wantCredentials checks the credentials read (at n) against those the
// kind takes (want; nil takes any).
func (p *parser) wantCredentials(n, item *yaml.Node, pc *ProviderConfig, want []string) error {
	if want == nil {
		return nil
	}
	for _, name := range sortedKeys(pc.Credentials) {
		if !slices.Contains(want, name) {
			return p.errAt(n, "provider %q: unknown credential %q for kind %s (it takes %s)", pc.ID, name, pc.Kind, strings.Join(want, ", "))
		}
	}
	for _, name := range want {
		if _, ok := pc.Credentials[name]; !ok {
			at := n
			if at == nil {
				at = item
			}
			return p.errAt(at, "provider %q: kind %s needs credential %s (the name of the environment variable that holds it)", pc.ID, pc.Kind, name)
		}
	}
	return nil
}

// defaultRouteKey names the default route in the file.
const defaultRouteKey = "default"

func (p *parser) routes(n *yaml.Node) error {
	var r routesYAML
	nodes, err := p.decode(n, "routes", &r)
	if err != nil {
		return err
	}
	byID := map[string]ProviderConfig{}
	for _, pc := range p.cfg.Providers {
		byID[pc.ID] = pc
	}
	p.cfg.Routes = map[paygate.Mode]RouteConfig{}
	for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
		if v := nodes[string(mode)]; v != nil {
			if err := p.route(mode, v, byID); err != nil {
				return err
			}
		}
	}
	return nil
}

// route reads the routing of one mode: currencies (and default) to lists
// of provider ids.
func (p *parser) route(mode paygate.Mode, v *yaml.Node, byID map[string]ProviderConfig) error {
	rc := RouteConfig{Currency: map[string][]string{}}
	if isNull(v) {
		p.cfg.Routes[mode] = rc // "live:" alone: no providers
		return nil
	}
	if v.Kind != yaml.MappingNode {
		return p.errAt(v, "routes.%s must map currencies (and default) to lists of provider ids (or to routes such as {providers: [a, b], strategy: success_rate})", mode)
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
		where := fmt.Sprintf("routes.%s.%s", mode, key)
		if list.Kind == yaml.MappingNode {
			var err error
			if list, err = p.strategy(mode, key, where, list); err != nil {
				return err
			}
		}
		ids, err := p.strList(list, where)
		if err != nil {
			return err
		}
		if len(ids) == 0 && key != defaultRouteKey {
			return p.errAt(list, "%s is empty (leave it out to use the default route)", where)
		}
		for j, id := range ids {
			at := resolve(list.Content[j])
			pc, ok := byID[id]
			switch {
			case !ok:
				return p.errAt(at, "%s: unknown provider %q", where, id)
			case pc.Mode != mode:
				return p.errAt(at, "%s: provider %q serves %s mode", where, id, pc.Mode)
			case key != defaultRouteKey && pc.Currencies != nil && !slices.Contains(pc.Currencies, key):
				return p.errAt(at, "%s: provider %q does not serve %s (its currencies are %s)", where, id, key, strings.Join(pc.Currencies, ", "))
			case slices.Contains(ids[:j], id):
				return p.errAt(at, "%s: provider %q is listed twice", where, id)
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

// strategy reads a route given as a mapping, {providers: [...], strategy:
// success_rate, window: 200, explore: 5, minSamples: 20} (decisions §21),
// keeps a success_rate route's settings, and returns its providers' node.
func (p *parser) strategy(mode paygate.Mode, key, where string, n *yaml.Node) (*yaml.Node, error) {
	var r routeYAML
	nodes, err := p.decode(n, where, &r)
	if err != nil {
		return nil, err
	}
	if nodes["providers"] == nil {
		return nil, p.errAt(n, "%s needs providers, the list of provider ids", where)
	}
	switch r.Strategy {
	case "", StrategyPriority:
		for _, k := range []string{"window", "explore", "minSamples", "min_samples"} {
			if at := nodes[k]; at != nil {
				return nil, p.errAt(at, "%s: %s applies to strategy %s only", where, k, StrategySuccessRate)
			}
		}
	case StrategySuccessRate:
		s := score.Defaults()
		if r.Window != nil {
			s.Window = int(*r.Window)
		}
		if r.Explore != nil {
			s.Explore = int(*r.Explore)
		}
		if r.MinSamples != nil && r.MinSamplesAlias != nil {
			return nil, p.errAt(nodes["min_samples"], "%s: give minSamples or min_samples (the same setting), not both", where)
		}
		samplesAt := nodes["minSamples"]
		if r.MinSamples != nil {
			s.MinSamples = int(*r.MinSamples)
		}
		if r.MinSamplesAlias != nil {
			s.MinSamples, samplesAt = int(*r.MinSamplesAlias), nodes["min_samples"]
		}
		if s.MinSamples > s.Window {
			// No provider could ever reach minSamples in its window: every
			// payment would explore. A window below the default minSamples
			// lowers the default to the window; a minSamples given above
			// the window is refused.
			if samplesAt == nil {
				s.MinSamples = s.Window
			} else {
				return nil, p.errAt(samplesAt, "%s: minSamples %d exceeds window %d: a provider could never reach it",
					where, s.MinSamples, s.Window)
			}
		}
		if p.cfg.SuccessRate == nil {
			p.cfg.SuccessRate = map[paygate.Mode]map[string]score.Settings{}
		}
		if p.cfg.SuccessRate[mode] == nil {
			p.cfg.SuccessRate[mode] = map[string]score.Settings{}
		}
		p.cfg.SuccessRate[mode][key] = s
	default:
		return nil, p.errAt(nodes["strategy"], "%s: strategy must be %s or %s", where, StrategyPriority, StrategySuccessRate)
	}
	return resolve(nodes["providers"]), nil
}
