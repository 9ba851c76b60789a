// Package webhook verifies the webhooks paygate sends, for merchants' Go
// backends. Deliveries follow the Standard Webhooks specification
// (https://www.standardwebhooks.com): every request carries
//
//	webhook-id:        the event id, the same on every retry and resend
//	webhook-timestamp: unix seconds when this attempt was signed
//	webhook-signature: "v1,<base64 HMAC-SHA256>", space-separated when
//	                   several secrets sign (during a secret rotation)
//
// where the HMAC is keyed with the base64-decoded part of the endpoint's
// secret "whsec_<base64>" and covers "{webhook-id}.{webhook-timestamp}.{body}".
//
// A receiver checks the signature on the raw body before parsing it:
//
//	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
//	if err != nil { ... }
//	if err := webhook.Verify(secret, r.Header, body); err != nil {
//		http.Error(w, "invalid signature", http.StatusBadRequest)
//		return
//	}
//
// The package imports only the standard library.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a delivery, lower case as the specification writes them
// (http.Header looks them up in any case).
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every endpoint secret: "whsec_" and base64.
const SecretPrefix = "whsec_"

// Tolerance is how far the webhook-timestamp may be from the receiver's
// clock, in either direction, before Verify refuses the request. It bounds
// how long a captured request can be replayed.
const Tolerance = 5 * time.Minute

// signatureVersion is the scheme of a symmetric (HMAC-SHA256) signature.
const signatureVersion = "v1"

// Errors of Verify. Each is returned wrapped with detail; test with
// errors.Is.
var (
	// ErrInvalidSecret: the secret is empty or not (whsec_)base64.
	ErrInvalidSecret = errors.New("webhook: invalid secret")
	// ErrMissingHeader: webhook-id, webhook-timestamp or webhook-signature
	// is absent.
	ErrMissingHeader = errors.New("webhook: missing header")
	// ErrInvalidTimestamp: the timestamp is not unix seconds, or is further
	// than Tolerance from now (a replay, or a badly wrong clock).
	ErrInvalidTimestamp = errors.New("webhook: invalid timestamp")
	// ErrNoMatchingSignature: no v1 signature matches the body.
	ErrNoMatchingSignature = errors.New("webhook: no matching signature")
)

// Sign returns the "v1,<base64>" signature of body for the message id and
// timestamp under secret ("whsec_<base64>", or the bare base64). Errors:
// ErrInvalidSecret.
func Sign(secret, id string, timestamp time.Time, body []byte) (string, error) {
	key, err := decodeSecret(secret)
	if err != nil {
		return "", err
	}
	return signatureVersion + "," + base64.StdEncoding.EncodeToString(mac(key, id, timestamp.Unix(), body)), nil
}

// Verify checks that body, with its headers, was signed with secret less
// than Tolerance ago (or ahead). It accepts the request when any of the
// space-separated v1 signatures matches; signatures of other versions are
// ignored. Errors: ErrInvalidSecret, ErrMissingHeader, ErrInvalidTimestamp,
// ErrNoMatchingSignature.
//
// A successful Verify proves who sent the body and that it is recent, not
// that it is new: deliveries are at least once, so deduplicate on the
// webhook-id.
func Verify(secret string, headers http.Header, body []byte) error {
	return verifyAt(secret, headers, body, time.Now())
}

// verifyAt is Verify with the receiver's clock given.
func verifyAt(secret string, headers http.Header, body []byte, now time.Time) error {
	key, err := decodeSecret(secret)
	if err != nil {
		return err
	}
	id, ts, sigs := headers.Get(HeaderID), headers.Get(HeaderTimestamp), headers.Get(HeaderSignature)
	for _, h := range []struct{ name, value string }{{HeaderID, id}, {HeaderTimestamp, ts}, {HeaderSignature, sigs}} {
		if h.value == "" {
			return fmt.Errorf("%w: %s", ErrMissingHeader, h.name)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q is not unix seconds", ErrInvalidTimestamp, ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > Tolerance || d < -Tolerance {
		return fmt.Errorf("%w: %s away from now, more than %s", ErrInvalidTimestamp, d.Abs().Truncate(time.Second), Tolerance)
	}
	want := mac(key, id, sec, body)
	for _, s := range strings.Fields(sigs) {
		version, value, ok := strings.Cut(s, ",")
		if !ok || version != signatureVersion {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(value)
		if err != nil {
			continue
		}
		if hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrNoMatchingSignature
}

// mac is HMAC-SHA256 of "{id}.{timestamp}.{body}" under key.
func mac(key []byte, id string, timestamp int64, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write(strconv.AppendInt(nil, timestamp, 10))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// decodeSecret returns the key bytes of "whsec_<base64>" or of the bare
// base64.
func decodeSecret(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil || len(key) == 0 {
		return nil, ErrInvalidSecret
	}
	return key, nil
}
