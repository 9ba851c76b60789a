package sandbox

import (
	"bytes"
	"fmt"
	"net/http"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/connector"
	"github.com/paygate/paygate/internal/web"
)

// Kind is the kind of the sandboxes in the configuration file.
const Kind = "sandbox"

// MaxLatency bounds the simulated latency of the configuration file.
const MaxLatency = time.Minute

// Connector describes the sandboxes to the generic provider layer: kind
// sandbox, test mode only, any credentials (none is read), the settings
// below, the built-in test routes, and the challenge page.
var Connector = connector.Connector{
	Kind:     Kind,
	TestOnly: true,
	Settings: func() any { return new(Settings) },
	New:      build,
	Builtin: func(env connector.Env) connector.Routes {
		return Routes(ledgerOf(env)...)
	},
	Endpoints: func(s connector.Services) map[string]http.Handler {
		return map[string]http.Handler{ChallengePath: challengeHandler{s}}
	},
}

// Settings are a sandbox's own keys of its provider entry.
type Settings struct {
	Sandbox struct {
		// Latency, FailureRate and ApprovalRate: see WithLatency,
		// WithFailureRate and WithApprovalRate. ApprovalRate is nil when
		// not given: 1.
		Latency      Latency         `yaml:"latency"`
		FailureRate  connector.Rate  `yaml:"failureRate"`
		ApprovalRate *connector.Rate `yaml:"approvalRate"`
	} `yaml:"sandbox"`
}

// Latency is the simulated latency of the configuration file, from 0 to
// MaxLatency.
type Latency connector.Duration

// UnmarshalYAML reads a latency and checks its range.
func (l *Latency) UnmarshalYAML(n *yaml.Node) error {
	return (*connector.Duration)(l).Within(n, 0, MaxLatency, fmt.Sprintf("from 0 to %s", MaxLatency))
}

// ledgerOf is the option keeping the ledger in the gateway's store, if any:
// the store the payment service commits outcomes to, so the entries commit
// with them (WithOutcomeLedger).
func ledgerOf(env connector.Env) []Option {
	if env.Store == nil {
		return nil
	}
	return []Option{WithOutcomeLedger(env.Store)}
}

// build creates a configured sandbox. It learns which routes it heads with
// another provider behind it: card 4000000000000259 is unavailable there,
// so that it fails over once.
func build(e connector.Entry, env connector.Env) (paygate.Provider, error) {
	s := e.Settings.(*Settings).Sandbox
	opts := append(ledgerOf(env), WithLatency(time.Duration(s.Latency)), WithFailureRate(float64(s.FailureRate)))
	if s.ApprovalRate != nil {
		opts = append(opts, WithApprovalRate(float64(*s.ApprovalRate)))
	}
	rc := env.Routes[e.Mode]
	var heads []string
	for cur, ids := range rc.Currency {
		if len(ids) > 1 && ids[0] == e.ID {
			heads = append(heads, cur)
		}
	}
	if len(heads) > 0 {
		opts = append(opts, FirstOf(heads...))
	}
	if len(rc.Default) > 1 && rc.Default[0] == e.ID {
		opts = append(opts, headsDefault(rc, env.CurrenciesOf)...)
	}
	return New(e.ID, e.Currencies, opts...), nil
}

// headsDefault returns the option of the head of a default route with
// others behind it: card 4000000000000259 fails over for the currencies
// that the route serves (not listed with routes of their own) and that a
// later provider accepts.
func headsDefault(rc connector.RouteConfig, currenciesOf func(id string) []string) []Option {
	var behind []string
	for _, id := range rc.Default[1:] {
		cs := currenciesOf(id)
		if cs == nil {
			// Someone behind takes every currency.
			listed := make([]string, 0, len(rc.Currency))
			for cur := range rc.Currency {
				listed = append(listed, cur)
			}
			return []Option{FirstOfDefault(listed...)}
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
	return []Option{FirstOf(behind...)}
}

// The ids of the test-mode sandbox providers (decisions.md section 12).
const (
	EU     = "sandbox-eu"
	US     = "sandbox-us"
	APAC   = "sandbox-apac"
	Global = "sandbox-global"
)

// regions lists the regional sandboxes and their currencies. No currency
// appears twice.
var regions = []struct {
	id         string
	currencies []string
}{
	{EU, []string{"EUR", "GBP", "CHF", "SEK", "NOK", "DKK", "PLN", "CZK"}},
	{US, []string{"USD", "CAD", "MXN", "BRL"}},
	{APAC, []string{"JPY", "AUD", "NZD", "SGD", "HKD", "INR"}},
}

// Routes returns the built-in test-mode routes: each currency of a
// regional sandbox goes to that sandbox, then to sandbox-global; every
// other currency goes to sandbox-global alone. The options (such as
// WithLatency) apply to the four sandboxes.
//
// Each regional sandbox heads a route with sandbox-global behind it for
// every currency it serves, and is told so (FirstOf): card
// 4000000000000259 is unavailable there and captured by sandbox-global.
// sandbox-global heads only the routes where it is alone, so it captures
// that card everywhere: there is no next provider to fail over to.
func Routes(opts ...Option) connector.Routes {
	global := New(Global, nil, opts...)
	r := connector.Routes{
		Currency: make(map[string][]paygate.Provider),
		Default:  []paygate.Provider{global},
	}
	for _, reg := range regions {
		o := append(append([]Option(nil), opts...), FirstOf(reg.currencies...))
		p := New(reg.id, reg.currencies, o...)
		for _, c := range reg.currencies {
			r.Currency[c] = []paygate.Provider{p, global}
		}
	}
	return r
}

// challengeHandler serves the challenge page at ChallengePath: the merchant's
// page posts the threeDsData parameters (creq, threeDSSessionData, TermUrl)
// to it. TermUrl must be this service's callback of a challenge that can
// still be completed, for the payment the creq names; anything else is
// 404. Its headers are those of every browser page (package web); its
// forms may post to the callback and, through the callback's redirect, to
// the payment's returnUrl.
type challengeHandler struct{ s connector.Services }

func (h challengeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !web.ReadForm(w, r) {
		return
	}
	c, err := ParseChallenge(r.PostForm)
	if err != nil {
		web.WritePage(w, http.StatusBadRequest, web.PageBadRequest, nil)
		return
	}
	token, ok := h.s.Payments.TokenFromCallbackURL(c.TermURL)
	if !ok {
		web.WritePage(w, http.StatusBadRequest, web.PageBadRequest, nil)
		return
	}
	v, err := h.s.Payments.ThreeDSChallenge(r.Context(), token)
	if err == nil && v.Payment.ID != c.PaymentID {
		err = paygate.Errorf(paygate.CodeNotFound, "", "the challenge is not this payment's")
	}
	if err != nil {
		web.FailPage(w, r, h.s.Logger, r.URL.Path, err)
		return
	}
	p := v.Payment
	var frames []string
	formAction := []string{h.s.Payments.CallbackURL("")}
	if o := web.ReturnOrigin(p.ReturnURL); o != "" {
		formAction = append(formAction, o)
		frames = []string{o}
	}
	var b bytes.Buffer
	if err := RenderChallenge(&b, c, ChallengeDetails{
		MerchantName: v.MerchantName,
		Amount:       money.Format(p.Amount.Amount, p.Amount.Currency),
		Currency:     p.Amount.Currency,
	}); err != nil {
		web.FailPage(w, r, h.s.Logger, r.URL.Path, err)
		return
	}
	web.WriteHTML(w, http.StatusOK, b.Bytes(), ChallengeStyleSource(), formAction, frames)
}
