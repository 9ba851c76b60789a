package paygate

// VaultStore is the part of Store for stored cards (issue 6): encrypted card
// records bound to (merchant, mode, customer).
// Methods follow the rules of Store: one transaction at most, merchant and
// mode filtered in SQL for merchant data, errors as documented on Store.
type VaultStore interface {
}
