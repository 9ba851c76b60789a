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

// RoutingScoresFreshFor is how old a node's last score report may be and
// still be shown (by `paygate providers` and the dashboard alike): nodes
// report at least every 4 seconds (decisions §21: at least every 5), and a
// stopped node withdraws its scores, so older reports are of nodes that
// died or cannot reach the database.
const RoutingScoresFreshFor = 15 * time.Second

// RoutingScoresForgetAfter is how long after its last report a node's
// scores are deleted by any other node's report (a node that crashed,
// named host:pid, never withdraws them).
const RoutingScoresForgetAfter = time.Hour

// RoutingScoreReplacement replaces every score Node reported with Scores
// (all of which name that node), stamped at At. No scores forgets the node.
// Heartbeat keeps the node's stored scores (Scores is ignored: they did
// not change) and only stamps them At. Either way the scores of every node
// last stamped before ForgetBefore (when set) are deleted. It never fails
// the unit.
type RoutingScoreReplacement struct {
	Node         string
	Scores       []RoutingScore
	At           time.Time
	Heartbeat    bool
	ForgetBefore time.Time
}

func (RoutingScoreReplacement) unitOp() {}

// RoutingScoreStore is the part of Store that keeps the success-rate
// router's scores, written by every node at least every 5 seconds so that
// `paygate providers` and the dashboard show them while nodes serve.
type RoutingScoreStore interface {
	// RoutingScores returns the scores of the mode reported at or after
	// since, sorted by currency, brand and provider: for each (currency,
	// brand), the complete snapshot of one node, the one that reported it
	// last (ties: the first node by name). Nodes sharing Redis report the
	// same scores; without Redis each node's are its own, and one node's
	// snapshot keeps its shares adding up (a mix of nodes' would not, and
	// shares cannot be summed without each node's traffic).
	RoutingScores(ctx context.Context, mode Mode, since time.Time) ([]RoutingScore, error)
}
