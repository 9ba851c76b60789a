package paygate

import "time"

// ProviderStatPeriod is the length of the periods of ProviderStats, which
// start at multiples of it since the Unix epoch: the buckets of the
// dashboard's chart of authorization rate per provider.
const ProviderStatPeriod = 5 * time.Minute

// ProviderStat is one ProviderStatPeriod and provider of ProviderStats: the
// payments of one merchant and mode created in the period that the provider
// answered last (the one a failover ended with).
type ProviderStat struct {
	Start      time.Time // UTC
	ProviderID string
	// Currency and Brand are the payments' currency and card brand (the
	// success-rate router's groups; the Routing page shows the scores of
	// the groups the merchant's own payments touched).
	Currency string
	Brand    string
	// Attempts counts the payments the provider answered: authorized,
	// captured, voided or failed. Payments still pending (created,
	// pending_3ds, pending_consent) are left out: they have no answer yet.
	Attempts int64
	// Approved counts those the provider authorized: authorized, captured
	// or voided (a void follows an authorization).
	Approved int64
}

// Rate is Approved / Attempts, 0 without attempts.
func (s ProviderStat) Rate() float64 {
	if s.Attempts == 0 {
		return 0
	}
	return float64(s.Approved) / float64(s.Attempts)
}
