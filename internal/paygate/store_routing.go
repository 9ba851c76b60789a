package paygate

import (
	"context"
	"time"
)

// ProviderState is the operator's state of one provider, shared by every
// node through the database: a drained provider is taken out of every route
// (payments it already processed still reach it for capture, void, refund
// and status inquiries).
//
// A sandbox provider's state may also carry the operator's approval rate
// (SandboxApproval), which replaces the configured sandbox.approvalRate on
// every node while it is set.
type ProviderState struct {
	ProviderID string
	Drained    bool
	// UpdatedAt is when Drained last changed, or when the state was first
	// stored by a drain or restore; the Unix epoch for a state a
	// SandboxApproval stored, of a provider never drained or restored
	// (DrainChangedAt).
	UpdatedAt time.Time
	// ApprovalRate is the operator's approval rate override (0 to 1), nil
	// when none; ApprovalAt is when it was set, nil when none.
	ApprovalRate *float64
	ApprovalAt   *time.Time
}

// DrainChangedAt returns when the provider was last drained or restored,
// nil when it never was (its state was stored by a SandboxApproval).
func (s ProviderState) DrainChangedAt() *time.Time {
	if s.UpdatedAt.Unix() <= 0 {
		return nil
	}
	t := s.UpdatedAt
	return &t
}

// SandboxApproval sets (Rate non-nil, 0 to 1) or clears (nil) the approval
// rate override of a sandbox provider at At, for routing experiments
// (decisions.md section 21). It leaves the provider's drained state alone;
// a provider without a state gets one, not drained. It never fails the
// unit.
type SandboxApproval struct {
	ProviderID string
	Rate       *float64
	At         time.Time
}

// ProviderDrain drains (Drained true) or restores (false) a provider at At.
// Setting the state a provider already has keeps its UpdatedAt.
type ProviderDrain struct {
	ProviderID string
	Drained    bool
	At         time.Time
}

// BreakerState is the state of one node's circuit breaker for a provider.
type BreakerState string

// Breaker states. An open breaker takes the provider out of that node's
// routes; a half-open one lets a probe through.
const (
	BreakerClosed   BreakerState = "closed"
	BreakerHalfOpen BreakerState = "half-open"
	BreakerOpen     BreakerState = "open"
)

// BreakerReport is what one node last said about one of its circuit
// breakers, so that the operator's command line can show every node's view.
type BreakerReport struct {
	Node       string // the reporting node: host name and process id
	Mode       Mode
	ProviderID string
	State      BreakerState
	Since      time.Time // when the breaker entered State
	ReportedAt time.Time
}

// BreakerReplacement replaces every report of Node with Reports (all of
// which name that node), stamped at At. No reports forgets the node (a node
// that stops).
type BreakerReplacement struct {
	Node    string
	Reports []BreakerReport
	At      time.Time
}

// SandboxOutcome is what a sandbox provider decided about a charge it
// received.
type SandboxOutcome string

// Sandbox outcomes. Declined carries a decline code and message; Errored is
// a provider error (nothing charged) with a message.
const (
	SandboxCaptured   SandboxOutcome = "captured"
	SandboxAuthorized SandboxOutcome = "authorized"
	SandboxPending3DS SandboxOutcome = "pending_3ds"
	SandboxDeclined   SandboxOutcome = "declined"
	SandboxErrored    SandboxOutcome = "errored"
)

// SandboxCharge is one entry of the sandbox providers' durable ledger: what a
// sandbox provider received and decided, kept in the database as a remote
// provider would keep it on its side, so that a status inquiry tells the
// truth after a crash. It never holds card data.
type SandboxCharge struct {
	ProviderID  string
	PaymentID   string
	Mode        Mode
	Amount      Money
	Outcome     SandboxOutcome
	ProviderRef string
	DeclineCode string // when declined
	Message     string // a decline's or an error's text, safe to show
	// ReadyAt is when the provider has finished processing: before it, an
	// inquiry answers that the charge is still being processed.
	ReadyAt   time.Time
	CreatedAt time.Time
}

// RecoveryClaim claims the payment PaymentID of (MerchantID, Mode) for one
// recovery attempt until Until, when it is still one PaymentsToRecover
// would return at Now. It fails the unit, changing nothing, with
// ErrStateConflict when it is not (another node claimed it, it is no longer
// created, or its lease runs), and with NOT_FOUND when it does not exist
// for the merchant and mode. Concurrent claims of one payment succeed once.
type RecoveryClaim struct {
	MerchantID string
	Mode       Mode
	PaymentID  string
	Now        time.Time
	Until      time.Time
}

// RoutingStore is the part of Store for provider routing and recovery (issue
// 5): provider states, breaker reports, the sandbox ledger, and the
// payments the recovery job takes over.
// Methods follow the rules of Store: one transaction at most, merchant and
// mode filtered in SQL for merchant data, errors as documented on Store.
type RoutingStore interface {
	// ProviderStates returns every provider state an operator ever set,
	// sorted by provider id.
	ProviderStates(ctx context.Context) ([]ProviderState, error)
	// A ProviderDrain operation (Commit) sets a provider's state.
	// A SandboxApproval operation (Commit) sets or clears a sandbox
	// provider's approval rate override, kept with its state.

	// A BreakerReplacement operation (Commit) replaces or forgets a node's
	// reports.

	// BreakerReports returns the reports of every node reported at or after
	// since, sorted by provider id, mode and node.
	BreakerReports(ctx context.Context, since time.Time) ([]BreakerReport, error)

	// A SandboxCharge operation (Commit) stores a ledger entry unless the
	// provider already has one for the payment: the first one wins, as the
	// payment id is the provider's idempotency key.

	// SandboxChargeByPayment returns the provider's ledger entry for the
	// payment, or NOT_FOUND when the provider never received it.
	SandboxChargeByPayment(ctx context.Context, providerID, paymentID string) (SandboxCharge, error)

	// PaymentsToRecover returns up to limit payments of any merchant that
	// the recovery job may take over at now, oldest first: in status
	// created, either past their lease (the request that created them can
	// no longer be working on them) or naming their provider (the request
	// answered 202 and handed them over), and not claimed by a recovery at
	// now. It serves the background recovery job only. A limit <= 0 means no
	// limit.
	PaymentsToRecover(ctx context.Context, now time.Time, limit int) ([]Payment, error)
	// A RecoveryClaim operation (Commit) claims a payment for recovery.
}
