package auth

import (
	"context"
	"crypto/subtle"
	"fmt"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// HeaderName is the request header that carries the secret key.
const HeaderName = "X-API-Key"

// unauthorizedMessage is the one message of every refusal: it never says
// which check failed and never echoes the key.
const unauthorizedMessage = "A valid secret API key is required in the X-API-Key header."

// unauthorized returns a fresh error each time, so that no caller can alter
// a shared value.
func unauthorized() error {
	return &paygate.Error{Code: paygate.CodeUnauthorized, Message: unauthorizedMessage, Param: HeaderName}
}

// Authenticator checks the X-API-Key header of a request against the store.
// It keeps no cache: every call reads the key, so a revocation or expiry is
// effective for the very next request, on every instance.
type Authenticator struct {
	Store paygate.Store
	// Clock judges revocation and expiry; nil means the system clock.
	Clock paygate.Clock
	// Usage, when set, notes each successful authentication (the key's
	// "last used" time); nil records nothing.
	Usage *UsageRecorder
}

// Authenticate returns the active secret key named by header, the value of
// the X-API-Key header.
//
// Errors: *paygate.Error with CodeUnauthorized, and always the same message,
// when the header is missing or malformed, or names a key that is unknown,
// revoked, expired or public. A store failure (CodeServiceUnavailable or an
// internal error) is returned as it is, wrapped: it is not the client's
// fault and must not answer 401.
func (a *Authenticator) Authenticate(ctx context.Context, header string) (paygate.APIKey, error) {
	return a.authenticate(header, func(hash []byte) (paygate.APIKey, error) {
		return paygate.OneAPIKey(a.Store.APIKeys(ctx, paygate.APIKeyQuery{Hash: hash}))
	})
}

// AuthenticateBy is Authenticate with the key of a hash read by lookup,
// for a caller that reads more with the key in the same round trip
// (paygate.RequestReader). Errors as Authenticate's.
func (a *Authenticator) AuthenticateBy(header string, lookup func(hash []byte) (paygate.APIKey, error)) (paygate.APIKey, error) {
	return a.authenticate(header, lookup)
}

// authenticate checks header against the key lookup returns for its hash.
func (a *Authenticator) authenticate(header string, lookup func(hash []byte) (paygate.APIKey, error)) (paygate.APIKey, error) {
	mode, typ, ok := Parse(header)
	if !ok || typ != paygate.KeySecret {
		// Public keys are refused without a lookup: they never
		// authenticate, whatever the store says.
		return paygate.APIKey{}, unauthorized()
	}
	hash := Hash(header)
	key, err := lookup(hash)
	if err != nil {
		if paygate.IsNotFound(err) {
			return paygate.APIKey{}, unauthorized()
		}
		return paygate.APIKey{}, fmt.Errorf("auth: look up key: %w", err)
	}
	// The store found the row by this hash; comparing again in constant
	// time guards against a store that matched loosely, at no cost worth
	// measuring. The mode and type stored must agree with the prefix.
	if subtle.ConstantTimeCompare(key.Hash, hash) != 1 ||
		key.Type != paygate.KeySecret || key.Mode != mode {
		return paygate.APIKey{}, unauthorized()
	}
	now := a.now()
	if !key.ActiveAt(now) {
		return paygate.APIKey{}, unauthorized()
	}
	if a.Usage != nil {
		a.Usage.Seen(key.ID, now)
	}
	return key, nil
}

func (a *Authenticator) now() time.Time {
	if a.Clock == nil {
		return paygate.SystemClock{}.Now()
	}
	return a.Clock.Now()
}
