package payment

import (
	"bytes"

	"github.com/paygate/paygate/internal/idempotency"
)

// RequestFingerprint returns the keyed fingerprint of an idempotent request
// (idempotency.Fingerprint) under the request key of the vault's sealing
// master key: the same on every node and after every restart, and never in
// the database, so that a stored fingerprint of a request that carried a
// card leads nowhere without the vault key (decisions §15).
func (s *Service) RequestFingerprint(method, path string, body []byte) ([]byte, error) {
	return idempotency.Fingerprint(s.requestKeys[0], method, path, body)
}

// SameRequest reports whether a stored fingerprint is that of this request,
// whose fingerprint under the sealing key is fp: equal to fp, equal to the
// request's fingerprint under an older configured master key (a record
// written before a key rotation), or empty. An empty fingerprint was dropped
// when an earlier release's was converted on upgrade (it could lead back to
// a card), and its record replays its stored answer for any body.
func (s *Service) SameRequest(stored, fp []byte, method, path string, body []byte) bool {
	if len(stored) == 0 || bytes.Equal(stored, fp) {
		return true
	}
	for _, k := range s.requestKeys[1:] {
		if old, err := idempotency.Fingerprint(k, method, path, body); err == nil && bytes.Equal(stored, old) {
			return true
		}
	}
	return false
}
