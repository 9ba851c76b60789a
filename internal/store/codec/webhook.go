package codec

import (
	"errors"

	"github.com/paygate/paygate/internal/paygate"
)

// CheckSealedSecret refuses to store an endpoint that carries its plain
// signing secret, or no sealed one: stores keep only the vault's seal
// (decisions.md section 15). It guards against a caller that forgot to seal.
func CheckSealedSecret(e paygate.WebhookEndpoint) error {
	if e.Secret != "" {
		return errors.New("store: refusing to store a plain webhook signing secret; seal it with the vault")
	}
	if len(e.SealedSecret) == 0 {
		return errors.New("store: a webhook endpoint needs its sealed signing secret")
	}
	return nil
}
