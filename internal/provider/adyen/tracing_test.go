package adyen

import (
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/providertest"
)

// TestTraceparent: the connector's own client sends each call under a
// client span of its own, with paygate.provider, and tells Adyen its
// traceparent.
func TestTraceparent(t *testing.T) {
	providertest.CheckTraceparent(t, func(baseURL string) (paygate.Provider, error) {
		return New(Config{ID: "adyen-eu", APIKey: "AQE_test_key", MerchantAccount: "TestMerchant", BaseURL: baseURL, Timeout: time.Second})
	}, "ref_1")
}
