package dashboard

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/vault"
	"github.com/paygate/paygate/internal/webhook"
)

// siteVault seals and opens the webhook secrets of the dashboards under
// test.
var siteVault = func() *vault.Vault {
	k := make([]byte, vault.KeySize)
	if _, err := rand.Read(k); err != nil {
		panic(err)
	}
	v, err := vault.New(k)
	if err != nil {
		panic(err)
	}
	return v
}()

// sealedSecret seals a fresh signing secret for the endpoint of (merchant,
// mode) under siteVault.
func sealedSecret(t *testing.T, merchantID string, mode paygate.Mode) []byte {
	t.Helper()
	s, err := webhook.SealSecret(siteVault, merchantID, mode, webhook.NewSecret())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openedEndpoint reads the endpoint of (merchant, mode) with its secrets
// opened by siteVault.
func openedEndpoint(ctx context.Context, st paygate.Store, merchantID string, mode paygate.Mode) (paygate.WebhookEndpointState, error) {
	ep, err := st.WebhookEndpointState(ctx, merchantID, mode)
	if err != nil {
		return ep, err
	}
	return ep, webhook.OpenSecrets(siteVault, &ep)
}
