package stripe

import (
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/connector"
)

// Connector describes Stripe to the generic provider layer: kind stripe,
// credential secret_key, an optional base_url.
var Connector = connector.Connector{
	Kind:        "stripe",
	Credentials: []string{"secret_key"},
	Settings:    func() any { return new(Settings) },
	Check: func(e connector.Entry) error {
		return connector.CheckBaseURL(e.ID, e.Settings.(*Settings).BaseURL)
	},
	New: func(e connector.Entry, _ connector.Env) (paygate.Provider, error) {
		var baseURL string
		if s := e.Settings.(*Settings); s.BaseURL != nil {
			baseURL = *s.BaseURL
		}
		return New(Config{
			ID: e.ID, SecretKey: e.Credentials["secret_key"].Reveal(), BaseURL: baseURL,
			Currencies: e.Currencies, Timeout: e.Timeout,
		})
	},
}

// Settings are a Stripe provider's own keys of its entry.
type Settings struct {
	// BaseURL is the API's address; nil (not given) is Stripe's own.
	BaseURL *string `yaml:"base_url"`
}
