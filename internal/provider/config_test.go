package provider

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/adyen"
	"github.com/paygate/paygate/internal/provider/connector"
	"github.com/paygate/paygate/internal/provider/sandbox"
	"github.com/paygate/paygate/internal/provider/score"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

// TestExampleConfig: the commented example of the repository is valid and
// builds exactly the built-in test routes.
func TestExampleConfig(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig(filepath.Join("..", "..", "docs", "paygate.example.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Providers) != 4 {
		t.Fatalf("%d providers", len(cfg.Providers))
	}
	eu := cfg.Providers[0]
	if eu.ID != SandboxEU || eu.Mode != paygate.ModeTest || eu.Timeout != 10*time.Second || eu.Breaker != DefaultBreaker() || len(eu.Currencies) != 8 {
		t.Fatalf("sandbox-eu: %+v", eu)
	}
	r, err := cfg.Build(BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := (&Config{}).Build(BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
		gotCur, gotDef := r.Table().Routes(mode)
		wantCur, wantDef := builtin.Table().Routes(mode)
		if fmt.Sprint(gotCur) != fmt.Sprint(wantCur) || !slices.Equal(gotDef, wantDef) {
			t.Errorf("%s routes of the example differ from the built-in ones:\n%v %v\n%v %v", mode, gotCur, gotDef, wantCur, wantDef)
		}
	}
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	t.Run("OKEmpty", func(t *testing.T) {
		t.Parallel()
		for _, raw := range []string{"", "# nothing\n", "---\n", "providers:\n"} {
			cfg, err := ParseConfig("x.yaml", []byte(raw), nil)
			if err != nil || len(cfg.Providers) != 0 || cfg.Routes != nil {
				t.Fatalf("%q: %+v, %v", raw, cfg, err)
			}
		}
	})
	t.Run("OKFull", func(t *testing.T) {
		t.Parallel()
		raw := `
providers:
  - id: eu
    kind: sandbox
    currencies: [eur, GBP]
    timeout: 3s
    credentials:
      apiKey: EU_KEY
    sandbox: {latency: 150ms, failureRate: 0.25, approvalRate: 0.8}
    breaker: {failures: 3, openFor: 2s, probes: 2}
  - id: world
    kind: sandbox
routes:
  test:
    eur: [eu, world]
    default: [world, eu]
  live:
`
		cfg, err := ParseConfig("x.yaml", []byte(raw), env(map[string]string{"EU_KEY": "s3cret"}))
		if err != nil {
			t.Fatal(err)
		}
		eu := cfg.Providers[0]
		knobs := &sandbox.Settings{}
		knobs.Sandbox.Latency, knobs.Sandbox.FailureRate = sandbox.Latency(150*time.Millisecond), 0.25
		approval := connector.Rate(0.8)
		knobs.Sandbox.ApprovalRate = &approval
		want := ProviderConfig{
			Entry: connector.Entry{ID: "eu", Kind: KindSandbox, Mode: paygate.ModeTest, Currencies: []string{"EUR", "GBP"}, Timeout: 3 * time.Second,
				Credentials: map[string]Secret{"apiKey": "s3cret"}, Settings: knobs},
			Breaker: BreakerConfig{Failures: 3, OpenFor: 2 * time.Second, Probes: 2}, Line: 3,
		}
		if !reflect.DeepEqual(eu, want) || eu.Credentials["apiKey"].Reveal() != "s3cret" {
			t.Fatalf("provider\n got %#v %#v\nwant %#v %#v", eu, eu.Settings, want, want.Settings)
		}
		if s := fmt.Sprint(eu.Credentials); strings.Contains(s, "s3cret") {
			t.Fatalf("a credential prints: %s", s)
		}
		world := cfg.Providers[1]
		if world.Currencies != nil || world.Timeout != DefaultTimeout || world.Breaker != DefaultBreaker() {
			t.Fatalf("defaults: %+v", world)
		}
		test := cfg.Routes[paygate.ModeTest]
		if !slices.Equal(test.Currency["EUR"], []string{"eu", "world"}) || !slices.Equal(test.Default, []string{"world", "eu"}) {
			t.Fatalf("test routes: %+v", test)
		}
		if live, ok := cfg.Routes[paygate.ModeLive]; !ok || len(live.Currency) != 0 || len(live.Default) != 0 {
			t.Fatalf("live routes: %+v, %v", live, ok)
		}
	})

	// Every error names the file and the line to look at.
	const head = "providers:\n  - id: eu\n    kind: sandbox\n    currencies: [EUR]\n" // lines 1-4
	errCases := []struct {
		name string
		raw  string
		line int
		msg  string
	}{
		// The YAML library names the line where the broken block starts.
		{"ErrSyntax", "providers:\n  - id: eu\n   kind: [\n", 1, "did not find expected"},
		{"ErrSyntaxFlow", "providers:\n  - id: eu\n    kind: [a\n  - id: x\n", 2, "did not find expected ',' or ']'"},
		{"ErrTabs", "providers:\n\t- id: eu\n", 2, ""},
		{"ErrTopLevelList", "- a\n- b\n", 1, "must be a mapping"},
		{"ErrUnknownTopKey", "provider:\n  - id: eu\n", 1, `unknown key "provider"`},
		{"ErrUnknownProviderKey", head + "    latency: 1s\n", 5, `unknown key "latency" in a provider`},
		{"ErrProvidersNotAList", "providers:\n  id: eu\n", 2, "must be a list"},
		{"ErrMissingID", "providers:\n  - kind: sandbox\n", 2, "needs an id"},
		{"ErrBadID", "providers:\n  - id: EU Main\n    kind: sandbox\n", 2, "lower-case"},
		{"ErrDuplicateID", head + "  - id: eu\n    kind: sandbox\n", 5, "declared twice (first at line 2)"},
		{"ErrMissingKind", "providers:\n  - id: eu\n", 2, "needs a kind"},
		{"ErrUnknownKind", "providers:\n  - id: eu\n    kind: braintree\n", 3, `unknown kind "braintree" (known: sandbox, stripe, adyen)`},
		{"ErrStripeNoMode", "providers:\n  - id: st\n    kind: stripe\n    credentials:\n      secret_key: STRIPE_KEY\n", 2, "needs a mode"},
		{"ErrStripeNoKey", "LIVE", 2, "needs credential secret_key"},
		{"ErrStripeOtherCredential", "LIVE    credentials:\n      secret_key: STRIPE_KEY\n      api_key: STRIPE_KEY\n", 6, `unknown credential "api_key" for kind stripe`},
		{"ErrStripeBaseURL", "LIVE    base_url: ftp://x\n    credentials:\n      secret_key: STRIPE_KEY\n", 5, "must be an https URL"},
		{"ErrStripeBaseURLHTTP", "LIVE    base_url: http://stripe.example\n    credentials:\n      secret_key: STRIPE_KEY\n", 5, "http only on loopback"},
		{"ErrStripeMerchant", "LIVE    merchant_account: X\n    credentials:\n      secret_key: STRIPE_KEY\n", 5, "applies to kind adyen only"},
		{"ErrAdyenLiveNoBaseURL", "ADY    merchant_account: M\n    credentials:\n      api_key: ADYEN_KEY\n      hmac_key: ADYEN_HMAC\n", 2, "a live adyen provider needs base_url"},
		{"ErrAdyenNoMerchant", "ADY    credentials:\n      api_key: ADYEN_KEY\n      hmac_key: ADYEN_HMAC\n", 2, "needs merchant_account"},
		{"ErrAdyenNoHMAC", "ADY    merchant_account: M\n    credentials:\n      api_key: ADYEN_KEY\n", 7, "needs credential hmac_key"},
		{"ErrAdyenUnknownKey", "ADY    merchant_acount: M\n", 5, `unknown key "merchant_acount" in a provider (known: base_url, breaker, credentials`},
		{"ErrSandboxMerchant", head + "    merchant_account: M\n", 5, `provider "eu": merchant_account applies to kind adyen only`},
		{"ErrStripeSandboxKnobs", "LIVE    sandbox: {latency: 1s}\n    credentials:\n      secret_key: STRIPE_KEY\n", 5, `provider "st": sandbox settings apply to kind sandbox only`},
		{"ErrSandboxBaseURL", "providers:\n  - id: eu\n    kind: sandbox\n    base_url: https://x.example\n", 4, "base_url applies to kinds stripe and adyen only"},
		{"ErrSandboxLive", "providers:\n  - id: eu\n    kind: sandbox\n    mode: live\n", 4, "test mode only"},
		{"ErrBadMode", "providers:\n  - id: eu\n    kind: sandbox\n    mode: prod\n", 4, "test or live"},
		{"ErrBadCurrency", "providers:\n  - id: eu\n    kind: sandbox\n    currencies: [EUR, XXX]\n", 4, `"XXX" is not a current ISO 4217`},
		{"ErrCurrencyTwice", "providers:\n  - id: eu\n    kind: sandbox\n    currencies:\n      - EUR\n      - eur\n", 6, "lists EUR twice"},
		{"ErrTimeoutSyntax", head + "    timeout: 10\n", 5, "not a duration"},
		{"ErrTimeoutTooLong", head + "    timeout: 16s\n", 5, "at most 15s"},
		{"ErrCredentialUnset", head + "    credentials:\n      apiKey: NOT_SET\n", 6, "environment variable NOT_SET is not set"},
		{"ErrCredentialInline", head + "    credentials:\n      apiKey: sk-live-123/abc\n", 6, "not an environment variable name"},
		{"ErrLatency", head + "    sandbox:\n      latency: -1s\n", 6, "latency must be"},
		{"ErrFailureRate", head + "    sandbox:\n      failureRate: 1.5\n", 6, "failureRate must be"},
		{"ErrFailureRateText", head + "    sandbox:\n      failureRate: often\n", 6, "failureRate must be"},
		{"ErrApprovalRate", head + "    sandbox:\n      approvalRate: -0.1\n", 6, "approvalRate must be"},
		{"ErrSandboxKey", head + "    sandbox:\n      jitter: 1s\n", 6, `unknown key "jitter"`},
		{"ErrBreakerFailures", head + "    breaker:\n      failures: 0\n", 6, "failures must be from 1"},
		{"ErrBreakerOpenFor", head + "    breaker:\n      openFor: 0s\n", 6, "openFor must be more than 0"},
		{"ErrNoTestRoutes", head, 2, "routes has no test section"},
		{"ErrRoutesMode", head + "routes:\n  staging:\n    default: [eu]\n", 6, `unknown key "staging" in routes`},
		{"ErrRouteUnknownProvider", head + "routes:\n  test:\n    EUR: [eu, sandbox-xx]\n", 7, `routes.test.EUR: unknown provider "sandbox-xx"`},
		{"ErrRouteUnknownProviderDefault", head + "routes:\n  test:\n    default:\n      - eu\n      - nope\n", 9, `unknown provider "nope"`},
		{"ErrRouteCurrency", head + "routes:\n  test:\n    EURO: [eu]\n", 7, `"EURO" is neither`},
		{"ErrRouteEmpty", head + "routes:\n  test:\n    EUR: []\n", 7, "is empty"},
		{"ErrRouteTwice", head + "routes:\n  test:\n    EUR: [eu]\n    eur: [eu]\n", 8, "EUR is routed twice"},
		{"ErrRouteProviderTwice", head + "routes:\n  test:\n    EUR: [eu, eu]\n", 7, `"eu" is listed twice`},
		{"ErrRouteCurrencyNotServed", head + "routes:\n  test:\n    USD: [eu]\n", 7, `provider "eu" does not serve USD`},
		{"ErrRouteOtherMode", head + "routes:\n  test:\n    default: [eu]\n  live:\n    default: [eu]\n", 9, `provider "eu" serves test mode`},
		{"ErrRouteNotAList", head + "routes:\n  test:\n    EUR: eu\n", 7, "must be a list"},
		{"ErrStrategyUnknownKey", head + "routes:\n  test:\n    EUR:\n      providers: [eu]\n      strategy: success_rate\n      windw: 10\n", 10, `unknown key "windw" in routes.test.EUR (known: explore, minSamples, min_samples, providers, strategy, window)`},
		{"ErrStrategyName", head + "routes:\n  test:\n    EUR: {providers: [eu], strategy: fastest}\n", 7, "strategy must be priority or success_rate"},
		{"ErrStrategyNoProviders", head + "routes:\n  test:\n    EUR:\n      strategy: success_rate\n", 8, "routes.test.EUR needs providers"},
		{"ErrStrategyWindowZero", head + "routes:\n  test:\n    EUR: {providers: [eu], strategy: success_rate, window: 0}\n", 7, "window must be from 1 to 10000"},
		{"ErrStrategyWindowHuge", head + "routes:\n  test:\n    EUR:\n      providers: [eu]\n      strategy: success_rate\n      window: 10001\n", 10, "window must be from 1 to 10000"},
		{"ErrStrategyExplore", head + "routes:\n  test:\n    default: {providers: [eu], strategy: success_rate, explore: 101}\n", 7, "explore must be from 0 to 100"},
		{"ErrStrategyExploreText", head + "routes:\n  test:\n    default: {providers: [eu], strategy: success_rate, explore: 5%}\n", 7, "explore must be a whole number"},
		{"ErrStrategyMinSamples", head + "routes:\n  test:\n    EUR: {providers: [eu], strategy: success_rate, minSamples: -1}\n", 7, "minSamples must be from 0"},
		{"ErrStrategyMinSamplesOverWindow", head + "routes:\n  test:\n    EUR:\n      providers: [eu]\n      strategy: success_rate\n      minSamples: 60\n      window: 50\n", 10, "minSamples 60 exceeds window 50"},
		{"ErrStrategyAliasOverWindow", head + "routes:\n  test:\n    EUR:\n      providers: [eu]\n      strategy: success_rate\n      window: 50\n      min_samples: 51\n", 11, "minSamples 51 exceeds window 50"},
		{"ErrStrategyBothSpellings", head + "routes:\n  test:\n    EUR:\n      providers: [eu]\n      strategy: success_rate\n      minSamples: 5\n      min_samples: 5\n", 11, "give minSamples or min_samples"},
		{"ErrStrategyPriorityWindow", head + "routes:\n  test:\n    EUR:\n      providers: [eu]\n      window: 50\n", 9, "window applies to strategy success_rate only"},
		{"ErrStrategyUnknownProvider", head + "routes:\n  test:\n    EUR:\n      providers:\n        - eu\n        - nope\n      strategy: success_rate\n", 10, `routes.test.EUR: unknown provider "nope"`},
		{"ErrTwoDocuments", head + "routes:\n  test: {}\n---\nx: 1\n", 7, "only one YAML document"},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			raw := strings.Replace(strings.Replace(c.raw, "LIVE", "providers:\n  - id: st\n    kind: stripe\n    mode: live\n", 1), "ADY", "providers:\n  - id: ad\n    kind: adyen\n    mode: live\n", 1)
			_, err := ParseConfig("paygate.yaml", []byte(raw), env(map[string]string{"STRIPE_KEY": "sk_test_x", "ADYEN_KEY": "k", "ADYEN_HMAC": "00"}))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want a *ConfigError", err, err)
			}
			if ce.Line != c.line || !strings.Contains(ce.Msg, c.msg) {
				t.Fatalf("err = %q (line %d), want line %d with %q", err, ce.Line, c.line, c.msg)
			}
			if want := fmt.Sprintf("paygate.yaml:%d: ", c.line); !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("err = %q, want it to start with %q", err, want)
			}
		})
	}
}

func TestParseStrategies(t *testing.T) {
	t.Parallel()
	raw := `
providers:
  - id: a
    kind: sandbox
  - id: b
    kind: sandbox
  - id: c
    kind: sandbox
routes:
  test:
    EUR: {providers: [a, b], strategy: success_rate}
    USD:
      providers: [b, a, c]
      strategy: success_rate
      window: 50
      explore: 0
      minSamples: 0
    GBP: {providers: [c, a], strategy: priority}
    SEK: {providers: [a, b], strategy: success_rate, window: 30, min_samples: 7}
    JPY: [a]
    PLN: {providers: [a, b], strategy: success_rate, window: 10}
    default: {providers: [c, b], strategy: success_rate, explore: 10}
`
	cfg, err := ParseConfig("x.yaml", []byte(raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	test := cfg.Routes[paygate.ModeTest]
	if !slices.Equal(test.Currency["EUR"], []string{"a", "b"}) || !slices.Equal(test.Currency["USD"], []string{"b", "a", "c"}) ||
		!slices.Equal(test.Currency["GBP"], []string{"c", "a"}) || !slices.Equal(test.Default, []string{"c", "b"}) {
		t.Fatalf("routes: %+v", test)
	}
	want := map[paygate.Mode]map[string]score.Settings{paygate.ModeTest: {
		"EUR":     {Window: 200, Explore: 5, MinSamples: 20},
		"USD":     {Window: 50, Explore: 0, MinSamples: 0},
		"SEK":     {Window: 30, Explore: 5, MinSamples: 7},
		"PLN":     {Window: 10, Explore: 5, MinSamples: 10}, // the default minSamples, lowered to the window
		"default": {Window: 200, Explore: 10, MinSamples: 20},
	}}
	if !reflect.DeepEqual(cfg.SuccessRate, want) {
		t.Fatalf("success_rate routes: %+v, want %+v", cfg.SuccessRate, want)
	}
	r, err := cfg.Build(BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for cur, scored := range map[string]bool{"EUR": true, "USD": true, "GBP": false, "JPY": false, "CHF": true} {
		set, ok := r.Table().SuccessRate(paygate.ModeTest, cur)
		if ok != scored {
			t.Errorf("%s: success_rate %v, want %v", cur, ok, scored)
		}
		if cur == "CHF" && set.Explore != 10 {
			t.Errorf("CHF (the default route): %+v", set)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig("", nil)
	if err != nil || len(cfg.Providers) != 0 || cfg.Source != "" {
		t.Fatalf("no file: %+v, %v", cfg, err)
	}
	if _, err := LoadConfig(filepath.Join(t.TempDir(), "missing.yaml"), nil); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// liveConfig is the live example of the README and docs/paygate.example.yaml.
const liveConfig = `providers:
  - id: stripe-eu
    kind: stripe
    mode: live
    currencies: [EUR, GBP]
    timeout: 8s
    credentials:
      secret_key: PAYGATE_STRIPE_SECRET_KEY
  - id: adyen-eu
    kind: adyen
    mode: live
    merchant_account: PaygateECOM
    base_url: https://YOUR-PREFIX-checkout-live.adyenpayments.com/checkout/v71
    credentials:
      api_key: PAYGATE_ADYEN_API_KEY
      hmac_key: PAYGATE_ADYEN_HMAC_KEY
routes:
  live:
    EUR: [stripe-eu, adyen-eu]
    GBP: [stripe-eu]
    default: [adyen-eu]
`

func TestLiveKinds(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig("live.yaml", []byte(liveConfig), env(map[string]string{
		"PAYGATE_STRIPE_SECRET_KEY": "sk_live_secret", "PAYGATE_ADYEN_API_KEY": "AQE_secret", "PAYGATE_ADYEN_HMAC_KEY": "0011aabb",
	}))
	if err != nil {
		t.Fatal(err)
	}
	st, ad := cfg.Providers[0], cfg.Providers[1]
	if st.Kind != "stripe" || st.Mode != paygate.ModeLive || st.Credentials["secret_key"].Reveal() != "sk_live_secret" || st.Timeout != 8*time.Second {
		t.Fatalf("stripe: %+v", st)
	}
	as := ad.Settings.(*adyen.Settings)
	if ad.Kind != "adyen" || *as.MerchantAccount != "PaygateECOM" || *as.BaseURL != "https://YOUR-PREFIX-checkout-live.adyenpayments.com/checkout/v71" ||
		ad.Credentials["api_key"].Reveal() != "AQE_secret" || ad.Credentials["hmac_key"].Reveal() != "0011aabb" {
		t.Fatalf("adyen: %+v", ad)
	}
	if printed := fmt.Sprintf("%v %+v", st, ad); strings.Contains(printed, "sk_live_secret") || strings.Contains(printed, "AQE_secret") || strings.Contains(printed, "0011aabb") {
		t.Fatal("a credential prints")
	}
	r, err := cfg.Build(BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ps := r.Route(paygate.ModeLive, "EUR")
	if len(ps) != 2 || ps[0].ID() != "stripe-eu" || ps[1].ID() != "adyen-eu" {
		t.Fatalf("live EUR route: %v", ps)
	}
	for _, id := range []string{"stripe-eu", "adyen-eu"} {
		p, ok := r.Provider(paygate.ModeLive, id)
		if !ok {
			t.Fatalf("no provider %s", id)
		}
		if _, ok := p.(paygate.Inquirer); !ok {
			t.Errorf("%s is no Inquirer: recovery cannot ask it", id)
		}
		if _, ok := p.(paygate.ThreeDSProvider); !ok {
			t.Errorf("%s is no ThreeDSProvider", id)
		}
	}
	if ps := r.Route(paygate.ModeTest, "EUR"); len(ps) == 0 || !strings.HasPrefix(ps[0].ID(), "sandbox") {
		t.Fatalf("test mode keeps the built-in sandboxes: %v", ps)
	}
}

// TestExampleConfigLive: the live examples commented out in
// docs/paygate.example.yaml are valid once uncommented.
func TestExampleConfigLive(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "paygate.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	block := false
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "  # - id: stripe-eu") || strings.HasPrefix(line, "  # live:") {
			block = true
		}
		if block && strings.HasPrefix(line, "  #") {
			rest := strings.TrimPrefix(line, "  #")
			rest = strings.TrimPrefix(rest, " ")
			out = append(out, "  "+rest)
			continue
		}
		block = false
		out = append(out, line)
	}
	cfg, err := ParseConfig("example-live.yaml", []byte(strings.Join(out, "\n")), env(map[string]string{
		"PAYGATE_STRIPE_SECRET_KEY": "sk_test_x", "PAYGATE_ADYEN_API_KEY": "k", "PAYGATE_ADYEN_HMAC_KEY": "00ff",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Providers) != 6 {
		t.Fatalf("%d providers, want the four sandboxes and two live ones", len(cfg.Providers))
	}
	if _, err := cfg.Build(BuildOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestConfigEmptyValue checks that a key written without a value is refused
// at its line, not read as the key's default.
func TestConfigEmptyValue(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"providers:\n  - id: sb\n    kind: sandbox\n    timeout:\n", "paygate.yaml:4: timeout must be a string"},
		{"providers:\n  - id: sb\n    kind: sandbox\n    currencies:\n", "paygate.yaml:4: currencies must be a list such as [a, b]"},
	} {
		_, err := ParseConfig("paygate.yaml", []byte(c.yaml), func(string) (string, bool) { return "", false })
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: got %v, want %s", c.yaml, err, c.want)
		}
	}
}

// TestConfigMessages pins whole messages, word for word, as scripts and
// operators know them: the wording of each value's mistake, and which of
// several mistakes is reported (the first value in the file that is wrong
// in itself, then the entry's id, kind, mode and credentials, the settings
// of other kinds, the mode's value, currencies). An empty value is a
// mistake of its key's type, never the default.
func TestConfigMessages(t *testing.T) {
	t.Parallel()
	const (
		sb  = "providers:\n  - id: eu\n    kind: sandbox\n"                                                                           // lines 1-3
		st  = "providers:\n  - id: st\n    kind: stripe\n    mode: live\n    credentials: {secret_key: STRIPE_KEY}\n"                 // lines 1-5
		ady = "providers:\n  - id: ad\n    kind: adyen\n    mode: live\n    merchant_account: M\n    base_url: https://a.example\n" + // lines 1-6
			"    credentials: {api_key: ADYEN_KEY, hmac_key: ADYEN_HMAC}\n" // line 7
	)
	for _, c := range []struct{ name, yaml, want string }{
		{"TimeoutEmpty", sb + "    timeout:\n", "4: timeout must be a string"},
		{"TimeoutNull", sb + "    timeout: ~\n", "4: timeout must be a string"},
		{"TimeoutList", sb + "    timeout: [1s]\n", "4: timeout must be a string"},
		{"TimeoutNumber", sb + "    timeout: 10\n", `4: timeout "10" is not a duration such as 500ms or 10s`},
		{"TimeoutZero", sb + "    timeout: 0s\n", "4: timeout must be more than 0 and at most 15s (a payment's provider calls must end within its lease)"},
		{"OpenForEmpty", sb + "    breaker: {openFor: }\n", "4: openFor must be a string"},
		{"OpenForNegative", sb + "    breaker:\n      openFor: -1s\n", "5: openFor must be more than 0"},
		{"FailuresEmpty", sb + "    breaker: {failures: }\n", "4: failures must be a whole number"},
		{"FailuresText", sb + "    breaker: {failures: \"3\"}\n", "4: failures must be a whole number"},
		{"ProbesEmpty", sb + "    breaker:\n      probes:\n", "5: probes must be a whole number"},
		{"ProbesTooMany", sb + "    breaker: {probes: 1000001}\n", "4: probes must be from 1 to 1000000"},
		{"BreakerEmpty", sb + "    breaker:\n", "4: breaker settings must be a mapping (key: value lines)"},
		{"BreakerList", sb + "    breaker: [a]\n", "4: breaker settings must be a mapping (key: value lines)"},
		{"BreakerUnknown", sb + "    breaker: {failure: 1}\n", `4: unknown key "failure" in breaker settings (known: failures, openFor, probes)`},
		{"SandboxEmpty", sb + "    sandbox:\n", "4: sandbox settings must be a mapping (key: value lines)"},
		{"SandboxTwice", sb + "    sandbox:\n      latency: 1s\n      latency: 2s\n", `6: "latency" is given twice in sandbox settings`},
		{"FailureRateEmpty", sb + "    sandbox: {failureRate: }\n", "4: failureRate must be a number from 0 to 1"},
		{"FailureRateNaN", sb + "    sandbox: {failureRate: .nan}\n", "4: failureRate must be a number from 0 to 1"},
		{"LatencyEmpty", sb + "    sandbox: {latency: }\n", "4: latency must be a string"},
		{"LatencyTooLong", sb + "    sandbox: {latency: 61s}\n", "4: latency must be from 0 to 1m0s"},
		{"CurrenciesListOfLists", sb + "    currencies: [[EUR]]\n", "4: currencies entries must be a string"},
		{"CurrenciesNullEntry", sb + "    currencies:\n      - EUR\n      - ~\n", "6: currencies entries must be a string"},
		{"CurrenciesMapping", sb + "    currencies: {EUR: 1}\n", "4: currencies must be a list such as [a, b]"},
		{"IDList", "providers:\n  - id: [eu]\n    kind: sandbox\n", "2: id must be a string"},
		{"KindEmpty", "providers:\n  - id: eu\n    kind:\n", "3: kind must be a string"},
		{"KindAsWritten", "providers:\n  - id: eu\n    kind: !!binary aGVsbG8=\n", `3: provider "eu": unknown kind "aGVsbG8=" (known: sandbox, stripe, adyen)`},
		{"ModeEmpty", sb + "    mode:\n", "4: mode must be a string"},
		{"CredentialEmpty", sb + "    credentials:\n      apiKey:\n", "5: credential apiKey must be a string"},
		{"SandboxMerchantEmpty", sb + "    merchant_account:\n", "4: merchant_account must be a string"},
		{"SandboxMerchantNull", sb + "    merchant_account: ~\n", "4: merchant_account must be a string"},
		{"SandboxBaseURLEmpty", sb + "    base_url:\n", "4: base_url must be a string"},
		{"StripeMerchantNull", st + "    merchant_account: ~\n", "6: merchant_account must be a string"},
		{"StripeBaseURLEmptyString", st + "    base_url: \"\"\n", `6: provider "st": base_url "" must be an https URL (http only on loopback, for mocks)`},
		{"StripeSandbox", st + "    sandbox: {latency: 1s}\n", `6: provider "st": sandbox settings apply to kind sandbox only`},
		{"AdyenSandbox", ady + "    sandbox: {latency: 1s}\n", `8: provider "ad": sandbox settings apply to kind sandbox only`},
		{"AdyenSandboxEmpty", ady + "    sandbox:\n", "8: sandbox settings must be a mapping (key: value lines)"},
		{"RouteListOfLists", sb + "routes:\n  test:\n    default: [[eu]]\n", "6: routes.test.default entries must be a string"},
		{"RouteNotAList", sb + "routes:\n  test:\n    default: eu\n", "6: routes.test.default must be a list such as [a, b]"},
		// Which mistake of several is reported.
		{"FirstValueBeforeID", "providers:\n  - kind: sandbox\n    timeout: 99s\n", "3: timeout must be more than 0 and at most 15s (a payment's provider calls must end within its lease)"},
		{"CredentialsBeforeID", "providers:\n  - kind: sandbox\n    credentials: {apiKey: NOT_SET}\n", "3: credential \"apiKey\": environment variable NOT_SET is not set"},
		{"ValueBeforeUnknownKind", "providers:\n  - id: eu\n    kind: braintree\n    sandbox: {latency: 2m}\n", "4: latency must be from 0 to 1m0s"},
		{"OtherKindsValueFirst", st + "    sandbox: {latency: 2m}\n", "6: latency must be from 0 to 1m0s"},
		{"OtherKindsKeyFirst", st + "    sandbox: {jitter: 1s}\n", `6: unknown key "jitter" in sandbox settings (known: approvalRate, failureRate, latency)`},
		{"SettingBeforeMode", "providers:\n  - id: eu\n    kind: sandbox\n    mode: prod\n    merchant_account: M\n    base_url: https://x.example\n",
			`6: provider "eu": base_url applies to kinds stripe and adyen only`},
		{"ModeBeforeSettingsBlock", "providers:\n  - id: st\n    kind: stripe\n    mode: prod\n    credentials: {secret_key: STRIPE_KEY}\n    sandbox: {}\n",
			`4: provider "st": mode must be test or live`},
		{"SettingsBlockBeforeCurrencies", st + "    currencies: [XXX]\n    sandbox: {}\n", `7: provider "st": sandbox settings apply to kind sandbox only`},
		{"BaseURLBeforeMode", "providers:\n  - id: st\n    kind: stripe\n    mode: prod\n    base_url: ftp://x\n    credentials: {secret_key: STRIPE_KEY}\n",
			`5: provider "st": base_url "ftp://x" must be an https URL (http only on loopback, for mocks)`},
		{"CredentialsBeforeMerchant", "providers:\n  - id: st\n    kind: stripe\n    mode: live\n    merchant_account: M\n",
			`2: provider "st": kind stripe needs credential secret_key (the name of the environment variable that holds it)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig("paygate.yaml", []byte(c.yaml), env(map[string]string{"STRIPE_KEY": "sk_test_x", "ADYEN_KEY": "k", "ADYEN_HMAC": "00"}))
			if want := "paygate.yaml:" + c.want; err == nil || err.Error() != want {
				t.Fatalf("err = %v\nwant  %s", err, want)
			}
		})
	}
}
