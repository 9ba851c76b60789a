package provider

import (
	"fmt"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/adyen"
)

// newAdyen creates a configured Adyen connector.
func (c *Config) newAdyen(pc ProviderConfig) (paygate.Provider, error) {
	p, err := adyen.New(adyen.Config{
		ID: pc.ID, APIKey: pc.Credentials["api_key"].Reveal(), MerchantAccount: pc.MerchantAccount,
		BaseURL: pc.BaseURL, HMACKey: pc.Credentials["hmac_key"].Reveal(),
		Currencies: pc.Currencies, Timeout: pc.Timeout,
	})
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", c.sourceName(), pc.Line, err)
	}
	return p, nil
}
