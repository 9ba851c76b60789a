// Package idempotency holds the request-side rules of Idempotency-Key
// (decisions.md section 5): which keys are acceptable, and the fingerprint
// that tells a replay of a request from a different request under the same
// key. Reserving, completing and replaying records is the store's work.
package idempotency

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
)

// fingerprintVersion starts every hashed message, so that a later change of
// the canonical form can never collide with stored fingerprints.
const fingerprintVersion = "paygate/idempotency/fingerprint/v2"

// Body kinds, hashed before the body so that the three cases can never be
// confused with one another.
const (
	bodyEmpty     byte = 'e'
	bodyCanonical byte = 'j'
	bodyRaw       byte = 'r'
)

// Fingerprint returns the fingerprint of a request, HMAC-SHA256 under key of
// its method, its path and its body as parsed JSON. It is stored, and a
// payment's body holds a card, so two rules keep it from leading back to the
// card (decisions §15): the key must never be stored in the database (it is
// derived from the vault's master key), and the card never enters it as it
// is: in a top-level "card" object, "cvv" is left out and "number" is
// replaced by its HMAC under the same key. A retry that differs from the
// first request only in its CVV is therefore the same request. The key must
// be the same on every node and across restarts, or replays would be
// refused as different requests.
//
// Two requests have the same fingerprint exactly when they ask for the same
// thing:
//
//   - Object key order and insignificant whitespace do not count; array
//     order does.
//   - Strings are compared by their decoded value ("é" equals "\u00e9").
//   - Numbers are compared by their literal text: 1, 1.0 and 1e0 differ.
//     The API takes amounts as strings and refuses JSON numbers for them,
//     so no request that succeeds depends on numeric equality; a client
//     that changes how it writes a number gets 409 rather than a replay,
//     the safe side.
//   - With duplicate object keys the last one counts, as in the decoder
//     that reads the request.
//   - An empty body, or one of JSON whitespace only, hashes as empty.
//   - A body that is not valid JSON (or not valid UTF-8, or has data after
//     the value) is hashed as its raw bytes, under the same key: the request
//     fails validation and its answer is not stored, so only an exact repeat
//     matches.
//
// The method and path are taken as given (the caller passes the request's
// method and URL path); they are length-prefixed, so no choice of path can
// imitate another method or body. The error is an empty key; it is nil for
// every input.
func Fingerprint(key []byte, method, path string, body []byte) ([]byte, error) {
	if len(key) == 0 {
		return nil, errors.New("idempotency: fingerprint needs a key")
	}
	h := hmac.New(sha256.New, key)
	writeField(h, []byte(fingerprintVersion))
	writeField(h, []byte(method))
	writeField(h, []byte(path))

	trimmed := bytes.Trim(body, " \t\r\n")
	switch canon, ok := canonicalRequest(trimmed, key); {
	case len(trimmed) == 0:
		h.Write([]byte{bodyEmpty})
	case ok:
		h.Write([]byte{bodyCanonical})
		writeField(h, canon)
	default:
		h.Write([]byte{bodyRaw})
		writeField(h, body)
	}
	return h.Sum(nil), nil
}

// writeField writes b prefixed by its length, so fields cannot run into one
// another.
func writeField(w io.Writer, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	_, _ = w.Write(n[:])
	_, _ = w.Write(b)
}

// writeString writes s as a JSON string, escaping only what JSON requires.
// Decoded strings are valid UTF-8 (invalid input never gets here, and lone
// surrogate escapes decode to U+FFFD).
func writeString(buf *bytes.Buffer, s []byte) {
	const hex = "0123456789abcdef"
	buf.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			buf.WriteByte('\\')
			buf.WriteByte(c)
		case c < 0x20:
			buf.WriteString(`\u00`)
			buf.WriteByte(hex[c>>4])
			buf.WriteByte(hex[c&0xf])
		default:
			buf.WriteByte(c)
		}
	}
	buf.WriteByte('"')
}
