package stripe

import (
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/providertest"
)

// TestTraceparent: the connector's own client sends each call under a
// client span of its own, with paygate.provider, and tells Stripe its
// traceparent.
func TestTraceparent(t *testing.T) {
	providertest.CheckTraceparent(t, func(baseURL string) (paygate.Provider, error) {
		return New(Config{ID: "stripe-eu", SecretKey: "sk_test_fake", BaseURL: baseURL, Timeout: time.Second})
	}, "pi_1")
}
