package paygate

// RoutingStore is the part of Store for provider routing and recovery (issue 5): provider states, the sandbox ledger, payments and refunds to recover.
// Methods follow the rules of Store: one transaction at most, merchant and
// mode filtered in SQL for merchant data, errors as documented on Store.
type RoutingStore interface {
}
