package paygate

// ThreeDSStore is the part of Store for 3-D Secure challenges (issue 4): tokens bound to payments.
// Methods follow the rules of Store: one transaction at most, merchant and
// mode filtered in SQL for merchant data, errors as documented on Store.
type ThreeDSStore interface {
}
