// Package plan holds the choices both store engines make the same way for
// speed alone, so that the domain (internal/paygate) names payments, not
// indexes or flushes: which index a list of payments reads (PaymentList),
// and which payment inserts may commit without their own durable flush
// (LazyCreate). Each engine maps a choice to its own SQL; nothing here
// changes what a query returns or what a client is told.
package plan

import "github.com/paygate/paygate/internal/paygate"

// ListKey names the filter whose index a payments list reads, each engine
// having one index per key in list order (created_at DESC, id DESC).
type ListKey int

// The keys of PaymentList, from the most selective.
const (
	ListAll ListKey = iota
	ListByReference
	ListByCustomer
	ListByCurrency
	ListByStatus
	// ListByID reads the one payment of an id (its primary key);
	// ListByLast4 the payments of a card's last four digits. They were
	// added after the others, so they come last in number, not in choice.
	ListByID
	ListByLast4
)

// PaymentList returns the filter whose index a list of q reads: the first of
// payment id, reference, customer (by id, external id or email), card last
// four, currency and status that q filters by, or ListAll.
// The order is by how few rows a value usually has (a reference names a
// payment or a few, a customer a few hundred at most, a currency or a status
// any share of them), so the choice does not depend on statistics: SQLite
// has none before ANALYZE (left to itself it read the status index for a
// reference and a status), and PostgreSQL's generic plans average them (a
// rare currency looks as common as any). The other filters are residual
// conditions on that index's range.
func PaymentList(q paygate.PaymentQuery) ListKey {
	switch {
	case q.PaymentID != "":
		return ListByID
	case q.MerchantRef != "":
		return ListByReference
	case q.CustomerID != "" || q.CustomerExternalID != "" || q.CustomerEmail != "":
		return ListByCustomer
	case q.CardLast4 != "":
		return ListByLast4
	case q.Currency != "":
		return ListByCurrency
	case len(q.Statuses) > 0:
		return ListByStatus
	}
	return ListAll
}

// GatewayLedger is the optional capability of a provider that keeps its
// record of a charge in the gateway's own database (the test-mode
// sandboxes, decisions.md sections 8 and 22): written in the unit of the
// payment's outcome (ChargeResult.Commit), or during Charge for a charge
// not answered at once (card 4000000000000705, a sandbox with a latency),
// after the payment's insert either way. It is the connector's own
// declaration; the engines read it through LazyCreate.
type GatewayLedger interface {
	// LedgerInGateway reports whether the provider's charges are recorded
	// in the gateway's database, after the payment's insert.
	LedgerInGateway() bool
}

// LazyCreate reports whether the insert of np may commit without waiting
// for its own durable flush: when every provider of its route (the
// providers the charge may be sent to, np.Route) records the charge in this
// database after the insert. Nothing outside the database then depends on
// the insert: the provider's record is written after it into the same log
// (in the outcome's unit, or during the charge), and the outcome, which is
// what a client is told, commits durably after both; its flush covers the
// insert. So a database crash that loses the insert loses the record and
// every answer with it: no row, no ledger entry, no answer, nothing charged
// (the key's reservation was in the insert: a retry with the key starts
// afresh). One that keeps the insert and loses the rest leaves a created
// payment its provider never saw, which recovery fails with nothing charged
// (section 22). A remote provider keeps its own records: a payment that may
// be sent to one is inserted durably before the call (decisions.md section
// 22), and so is a payment with an empty route. The insert is visible to
// other transactions at commit either way.
//
// The route is the one the charge uses, chosen before the insert from the
// live configuration, so the decision follows that configuration without a
// second copy of it.
func LazyCreate(np paygate.NewPayment) bool {
	for _, p := range np.Route {
		if l, ok := p.(GatewayLedger); !ok || !l.LedgerInGateway() {
			return false
		}
	}
	return len(np.Route) > 0
}
