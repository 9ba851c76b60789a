package codec

import "github.com/paygate/paygate/internal/paygate"

// AttemptResponse is the stored form of a delivery attempt's answer: never
// nil, and at most paygate.MaxAttemptResponse bytes, whatever the caller
// passed (decisions.md section 15: no more than 1 KiB of an endpoint's
// answer is kept or shown).
func AttemptResponse(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b[:min(len(b), paygate.MaxAttemptResponse)]
}
