package paygate

import (
	"context"
	"time"
)

// RoutingScore is what the success-rate router (decisions §21) last knew of
// one provider for one currency and card brand in one mode: its attempts and
// authorizations over the route's window (issuer declines that say nothing
// about the provider are not counted) and the share of that currency and
// brand's routed payments it received recently.
type RoutingScore struct {
	Mode       Mode
	ProviderID string
	Currency   string
	Brand      string
	Attempts   int64
	Approved   int64
	// Score is Approved / Attempts, 0 without attempts.
	Score float64
	// Share is the share (0 to 1) of the currency and brand's payments
	// that the router sent to this provider over the same recent window.
	Share float64
	// Node is the node that reported the score; UpdatedAt when it did.
	Node      string
	UpdatedAt time.Time
}

// RoutingScoreReplacement replaces every score Node reported with Scores
// (all of which name that node), stamped at At. No scores forgets the node.
// It never fails the unit.
type RoutingScoreReplacement struct {
	Node   string
	Scores []RoutingScore
	At     time.Time
}

func (RoutingScoreReplacement) unitOp() {}

// RoutingScoreStore is the part of Store that keeps the success-rate
// router's scores, written by every node at least every 5 seconds so that
// `paygate providers` and the dashboard show them while nodes serve.
type RoutingScoreStore interface {
	// RoutingScores returns, for each (mode, provider, currency, brand),
	// the most recent score any node reported at or after since, sorted by
	// mode, currency, brand and provider.
	RoutingScores(ctx context.Context, since time.Time) ([]RoutingScore, error)
}
