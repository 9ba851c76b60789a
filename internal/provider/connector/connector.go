// Package connector is the contract between the generic provider layer
// (package provider: the configuration file, routes, circuit breakers) and
// the connector packages (sandbox, stripe, adyen). A connector describes
// itself with one Connector value, and cmd/paygate registers each with
// provider.Register: the generic layer knows a kind of provider only
// through it.
//
// The package imports nothing of ours but the domain, so that a connector
// depends on the contract and never on the generic layer (whose tests run
// the sandboxes).
package connector

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// Connector is one kind of provider: everything specific to it that the
// configuration file, the routing table and the HTTP server need.
type Connector struct {
	// Kind is the value of a provider's kind key in the configuration file.
	Kind string
	// TestOnly kinds serve test mode only: their entries may leave mode out,
	// and mode live is refused (the sandbox).
	TestOnly bool
	// Credentials names the credentials the kind takes, each required and
	// no other; nil takes any (a sandbox reads none of them).
	Credentials []string
	// Settings returns a pointer to a new zero value of the kind's own
	// settings: its keys of a provider entry beyond the common ones, given
	// by yaml tags (a nested struct is a nested mapping). The generic parser
	// decodes them key by key with every unknown key refused; a field is a
	// string, a list of strings, a pointer to either (nil: not given), or a
	// yaml.Unmarshaler that checks its value and range and words its own
	// errors ("must be ...", such as Duration and Rate), so that mistakes
	// are reported in the file's order. nil: the kind has none.
	Settings func() any
	// Check validates an entry beyond the types of its keys (a setting that
	// is required or must be an https URL). Its errors are *KeyError, so
	// that the message names the line of the key at fault. nil checks
	// nothing.
	Check func(e Entry) error
	// New builds the provider of an entry.
	New func(e Entry, env Env) (paygate.Provider, error)
	// Builtin, when not nil, returns the test-mode routes used when the
	// configuration routes no test mode: the built-in sandboxes.
	Builtin func(env Env) Routes
	// Endpoints, when not nil, returns the HTTP endpoints the connector
	// serves (a provider's notifications, a sandbox's pages), keyed by
	// http.ServeMux pattern ("POST /v1/providers/adyen/{provider}/notifications").
	// They are served without an API key: each authenticates what it
	// receives itself.
	Endpoints func(s Services) map[string]http.Handler
}

// Entry is one provider of the configuration file, checked by the generic
// parser.
type Entry struct {
	ID   string
	Kind string
	Mode paygate.Mode
	// Currencies the provider accepts, upper case; nil accepts every one.
	Currencies []string
	// Timeout is the deadline of each call to the provider.
	Timeout time.Duration
	// Credentials maps each credential's name to its value, read from the
	// environment variable the file names.
	Credentials map[string]Secret
	// Settings is what the Connector's Settings returned, decoded; nil for
	// a kind without settings.
	Settings any
}

// Env is what building providers may use.
type Env struct {
	// Store is the gateway's database, where a sandbox keeps its ledger;
	// nil keeps it in memory, which does not survive a restart.
	Store paygate.Store
	// Logger receives what a connector reports while it builds.
	Logger *slog.Logger
	// Routes is the configuration's routing of each mode it routes, and
	// CurrenciesOf returns the currencies of one of its providers (nil:
	// every one): a sandbox learns from them which routes it heads with
	// another provider behind it.
	Routes       map[paygate.Mode]RouteConfig
	CurrenciesOf func(id string) []string
}

// Services are what connectors' endpoints call.
type Services struct {
	Payments Payments
	// Logger receives the endpoints' log lines (with the request's id,
	// from package web).
	Logger *slog.Logger
}

// Payments is the part of the payment use cases (*payment.Service) that
// connectors' endpoints call.
type Payments interface {
	// ProviderByID returns the configured provider with the id, in either
	// mode: a notification names its provider by id.
	ProviderByID(id string) (paygate.Provider, bool)
	// SettleRefund finishes a pending refund with the outcome its provider
	// reported asynchronously. An error means the outcome could not be
	// recorded now; the provider should deliver it again.
	SettleRefund(ctx context.Context, providerID, refundID, paymentRef string, res paygate.RefundResult) error
	// TokenFromCallbackURL returns the token of a 3-D Secure callback URL
	// this service handed out; false for any other URL.
	TokenFromCallbackURL(u string) (string, bool)
	// CallbackURL is the 3-D Secure callback URL of a token ("" gives the
	// prefix every callback shares).
	CallbackURL(token string) string
	// ThreeDSChallenge returns the payment of a token whose challenge can
	// still be completed, and its merchant's name. Errors: NOT_FOUND for a
	// token that is unknown, used or expired.
	ThreeDSChallenge(ctx context.Context, token string) (paygate.ThreeDSView, error)
}

// RouteConfig is the routing of one mode in the configuration file:
// provider ids in the order to try.
type RouteConfig struct {
	Currency map[string][]string
	Default  []string
}

// Routes is the routing of one mode.
type Routes struct {
	// Currency maps an upper-case ISO 4217 code to the providers to try
	// for it, in order. A listed currency must have at least one provider.
	Currency map[string][]paygate.Provider
	// Default is tried, in order, for every currency Currency does not
	// list. Empty: such currencies have no provider.
	Default []paygate.Provider
}

// Secret is a credential's value. It prints as [redacted], in logs too.
type Secret string

// String masks the secret.
func (Secret) String() string { return "[redacted]" }

// LogValue masks the secret in log/slog.
func (Secret) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// Reveal returns the secret itself, for a connector's use only.
func (s Secret) Reveal() string { return string(s) }

// KeyError is a Check error: Key names the entry's key at fault (one of
// the entry's own, such as "base_url"), "" the entry as a whole; Msg is the
// whole message.
type KeyError struct {
	Key string
	Msg string
}

func (e *KeyError) Error() string { return e.Msg }
