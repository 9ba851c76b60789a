// Package plan holds the choices both store engines make the same way for
// speed alone, so that the domain (internal/paygate) names payments, not
// indexes: which index a list of payments reads. Each engine maps a choice
// to its own SQL; nothing here changes what a query returns.
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
)

// PaymentList returns the filter whose index a list of q reads: the first of
// reference, customer, currency and status that q filters by, or ListAll.
// The order is by how few rows a value usually has (a reference names a
// payment or a few, a customer a few hundred at most, a currency or a status
// any share of them), so the choice does not depend on statistics: SQLite
// has none before ANALYZE (left to itself it read the status index for a
// reference and a status), and PostgreSQL's generic plans average them (a
// rare currency looks as common as any). The other filters are residual
// conditions on that index's range.
func PaymentList(q paygate.PaymentQuery) ListKey {
	switch {
	case q.MerchantRef != "":
		return ListByReference
	case q.CustomerID != "" || q.CustomerExternalID != "":
		return ListByCustomer
	case q.Currency != "":
		return ListByCurrency
	case len(q.Statuses) > 0:
		return ListByStatus
	}
	return ListAll
}
