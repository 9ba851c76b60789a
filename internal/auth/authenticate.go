package auth

import (
	"context"
	"crypto/subtle"
	"errors"
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
		return a.Store.APIKeyByHash(ctx, hash)
	})
}

// AuthenticatePeek is Authenticate for a request that carries the
// Idempotency-Key idemKey: when the store can (paygate.IdempotencyPeeker),
// it also reads that key's record within the API key's merchant and mode,
// in the same round trip, and returns it (nil when there is none). peeked
// is false when the store cannot; the caller then looks the key up itself.
func (a *Authenticator) AuthenticatePeek(ctx context.Context, header, idemKey string) (key paygate.APIKey, rec *paygate.IdempotencyRecord, peeked bool, err error) {
	p, ok := a.Store.(paygate.IdempotencyPeeker)
	if !ok {
		key, err = a.Authenticate(ctx, header)
		return key, nil, false, err
	}
	return authenticateWith(a, header, func(hash []byte) (paygate.APIKey, paygate.IdempotencyRecord, bool, error) {
		return p.APIKeyAndIdempotency(ctx, hash, idemKey)
	})
}

// AuthenticatePayment is Authenticate for GET /v1/payments/{paymentID}:
// when the store can (paygate.PaymentPeeker), it also reads that payment
// within the API key's merchant and mode, in the same round trip, and
// returns it. It is nil when there is none, when the store cannot peek or
// when the read beside the key failed: the caller then reads the payment
// itself, and answers a missing one as the store does.
func (a *Authenticator) AuthenticatePayment(ctx context.Context, header, paymentID string) (paygate.APIKey, *paygate.Payment, error) {
	pp, ok := a.Store.(paygate.PaymentPeeker)
	if !ok {
		key, err := a.Authenticate(ctx, header)
		return key, nil, err
	}
	key, p, _, err := authenticateWith(a, header, func(hash []byte) (paygate.APIKey, paygate.Payment, bool, error) {
		return pp.APIKeyAndPayment(ctx, hash, paymentID)
	})
	return key, p, err
}

// authenticateWith authenticates header through read, which returns the key
// of a hash together with something of the key's merchant and mode (found
// false when there is none). That something is returned only when the key
// authenticates; peeked is false when read could not read it
// (paygate.ErrNotPeeked) and the caller must read it itself.
func authenticateWith[T any](a *Authenticator, header string, read func(hash []byte) (paygate.APIKey, T, bool, error)) (key paygate.APIKey, got *T, peeked bool, err error) {
	peeked = true
	key, err = a.authenticate(header, func(hash []byte) (paygate.APIKey, error) {
		k, v, found, err := read(hash)
		if errors.Is(err, paygate.ErrNotPeeked) {
			peeked = false
			return k, nil
		}
		if found {
			got = &v
		}
		return k, err
	})
	if err != nil || !peeked {
		return key, nil, false, err
	}
	return key, got, true, nil
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
