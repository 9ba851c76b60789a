package auth

import (
	"context"
	"crypto/subtle"
	"fmt"
	"sync"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// HeaderName is the request header that carries the secret key.
const HeaderName = "X-API-Key"

// unauthorizedMessage is the one message of every refusal: it never says
// which check failed and never echoes the key.
const unauthorizedMessage = "A valid secret API key is required in the X-API-Key header."

// Unauthorized returns the one refusal of every authentication, a fresh
// value each time so that no caller can alter a shared one; also for a
// caller whose store refused a key that Known named (a revoked key).
func Unauthorized() *paygate.Error {
	return &paygate.Error{Code: paygate.CodeUnauthorized, Message: unauthorizedMessage, Param: HeaderName}
}

// Authenticator checks the X-API-Key header of a request against the store.
// Every authentication reads the key, so a revocation or expiry is
// effective for the very next request, on every instance. What it
// remembers (Known) is only which key a hash named, never whether the key
// is still active: a caller that uses it has the store verify the key.
type Authenticator struct {
	Store paygate.Store
	// Clock judges revocation and expiry; nil means the system clock.
	Clock paygate.Clock
	// Usage, when set, notes each successful authentication (the key's
	// "last used" time); nil records nothing.
	Usage *UsageRecorder

	knownMu sync.RWMutex
	known   map[string]paygate.APIKey // by hash: keys that authenticated here
}

// knownLimit bounds the keys Known remembers; when it is reached they are
// forgotten at once and learnt again by the next authentications.
const knownLimit = 10_000

// Known returns the secret key that header named when it last
// authenticated on this instance, without reading the store; ok is false
// when the header is not a secret key or has not authenticated here.
//
// The key is NOT verified: it may have been revoked or may have expired
// since. It serves a caller whose first write verifies the key itself in
// the same statement (decisions §22: a payment's insert authenticates its
// key; its rate limit may be charged by the key's hash first), and who
// authenticates (Authenticate) before answering anything else. The id,
// merchant and mode of a key never change, so what Known returns is right
// for every key that is still active.
func (a *Authenticator) Known(header string) (paygate.APIKey, bool) {
	mode, typ, ok := Parse(header)
	if !ok || typ != paygate.KeySecret {
		return paygate.APIKey{}, false
	}
	hash := Hash(header)
	a.knownMu.RLock()
	key, ok := a.known[string(hash)]
	a.knownMu.RUnlock()
	if !ok || subtle.ConstantTimeCompare(key.Hash, hash) != 1 || key.Mode != mode {
		return paygate.APIKey{}, false
	}
	return key, true
}

// Forget drops what Known remembers of header's key: a key the store has
// refused (revoked or expired) is authenticated on each request again.
func (a *Authenticator) Forget(header string) {
	h := string(Hash(header))
	a.knownMu.Lock()
	delete(a.known, h)
	a.knownMu.Unlock()
}

// Used notes that a key returned by Known was verified by the store's
// write (its "last used" time), as Authenticate notes it for a key it
// verified.
func (a *Authenticator) Used(key paygate.APIKey) {
	if a.Usage != nil {
		a.Usage.Seen(key.ID, a.now())
	}
}

// remember records which key a hash named, for Known.
func (a *Authenticator) remember(key paygate.APIKey) {
	h := string(key.Hash)
	a.knownMu.RLock()
	_, ok := a.known[h]
	a.knownMu.RUnlock()
	if ok {
		return
	}
	a.knownMu.Lock()
	if a.known == nil || len(a.known) >= knownLimit {
		a.known = make(map[string]paygate.APIKey)
	}
	a.known[h] = key
	a.knownMu.Unlock()
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
		return paygate.APIKey{}, Unauthorized()
	}
	hash := Hash(header)
	key, err := lookup(hash)
	if err != nil {
		if paygate.IsNotFound(err) {
			return paygate.APIKey{}, Unauthorized()
		}
		return paygate.APIKey{}, fmt.Errorf("auth: look up key: %w", err)
	}
	// The store found the row by this hash; comparing again in constant
	// time guards against a store that matched loosely, at no cost worth
	// measuring. The mode and type stored must agree with the prefix.
	if subtle.ConstantTimeCompare(key.Hash, hash) != 1 ||
		key.Type != paygate.KeySecret || key.Mode != mode {
		return paygate.APIKey{}, Unauthorized()
	}
	now := a.now()
	if !key.ActiveAt(now) {
		return paygate.APIKey{}, Unauthorized()
	}
	if a.Usage != nil {
		a.Usage.Seen(key.ID, now)
	}
	a.remember(key)
	return key, nil
}

func (a *Authenticator) now() time.Time {
	if a.Clock == nil {
		return paygate.SystemClock{}.Now()
	}
	return a.Clock.Now()
}

// publicMessage is the one message of every refusal of AuthenticatePublic.
const publicMessage = "A valid public API key is required in the X-API-Key header."

// UnauthorizedPublic returns the one refusal of AuthenticatePublic, a
// fresh value each time.
func UnauthorizedPublic() *paygate.Error {
	return &paygate.Error{Code: paygate.CodeUnauthorized, Message: publicMessage, Param: HeaderName}
}

// AuthenticatePublic returns the active public key named by header, for
// the one endpoint that takes a public key (POST /v1/tokens, decisions
// §19). A secret key is refused there without a lookup: secret keys never
// belong in a browser. Errors as Authenticate's, with
// UnauthorizedPublic's message. The key is not remembered for Known, which
// names secret keys only.
func (a *Authenticator) AuthenticatePublic(ctx context.Context, header string) (paygate.APIKey, error) {
	mode, typ, ok := Parse(header)
	if !ok || typ != paygate.KeyPublic {
		return paygate.APIKey{}, UnauthorizedPublic()
	}
	hash := Hash(header)
	key, err := paygate.OneAPIKey(a.Store.APIKeys(ctx, paygate.APIKeyQuery{Hash: hash}))
	if err != nil {
		if paygate.IsNotFound(err) {
			return paygate.APIKey{}, UnauthorizedPublic()
		}
		return paygate.APIKey{}, fmt.Errorf("auth: look up key: %w", err)
	}
	if subtle.ConstantTimeCompare(key.Hash, hash) != 1 ||
		key.Type != paygate.KeyPublic || key.Mode != mode {
		return paygate.APIKey{}, UnauthorizedPublic()
	}
	now := a.now()
	if !key.ActiveAt(now) {
		return paygate.APIKey{}, UnauthorizedPublic()
	}
	if a.Usage != nil {
		a.Usage.Seen(key.ID, now)
	}
	return key, nil
}
