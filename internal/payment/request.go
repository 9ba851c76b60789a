package payment

import "github.com/paygate/paygate/internal/idempotency"

// RequestFingerprint returns the keyed fingerprint of an idempotent request
// (idempotency.Fingerprint) under this installation's request key, which is
// derived from the card fingerprint key and so is the same on every node and
// after every restart. The stored fingerprint of a request that carried a
// card number cannot be brute-forced back to the number without the key.
func (s *Service) RequestFingerprint(method, path string, body []byte) ([]byte, error) {
	return idempotency.Fingerprint(s.requestKey, method, path, body)
}
