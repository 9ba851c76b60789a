package paygate

// WebhookStore is the part of Store for webhook deliveries (issue 3): endpoints' deliveries, attempts and claims.
// Methods follow the rules of Store: one transaction at most, merchant and
// mode filtered in SQL for merchant data, errors as documented on Store.
type WebhookStore interface {
}
