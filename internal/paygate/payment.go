package paygate

import (
	"fmt"
	"time"
)

// PaymentStatus is the status of a payment.
type PaymentStatus string

// Payment statuses. pending_consent is reserved: no flow produces it.
const (
	PaymentCreated        PaymentStatus = "created"
	PaymentCaptured       PaymentStatus = "captured"
	PaymentAuthorized     PaymentStatus = "authorized"
	PaymentPending3DS     PaymentStatus = "pending_3ds"
	PaymentPendingConsent PaymentStatus = "pending_consent"
	PaymentFailed         PaymentStatus = "failed"
	PaymentVoided         PaymentStatus = "voided"
)

// Final reports whether no further transition can leave s, except capture or
// void of an authorized payment.
func (s PaymentStatus) Final() bool {
	return s == PaymentCaptured || s == PaymentFailed || s == PaymentVoided
}

// PaymentMethod is how a payment is funded.
type PaymentMethod string

const (
	// MethodCard is a card submitted with the request.
	MethodCard PaymentMethod = "card"
	// MethodStoredCard is a card from the vault.
	MethodStoredCard PaymentMethod = "stored_card"
	// MethodToken is a single-use card token (decisions §19), as a
	// payment request names it. A payment with a token is stored, shown
	// and sent in webhooks as a card payment (MethodCard): the token is
	// spent, the card it carried paid.
	MethodToken PaymentMethod = "token"
)

// Decline codes of CARD_DECLINED.
const (
	DeclineGeneric           = "generic_decline"
	DeclineInsufficientFunds = "insufficient_funds"
	DeclineExpiredCard       = "expired_card"
	DeclineIncorrectCVC      = "incorrect_cvc"
)

// Billing is the cardholder's billing details.
type Billing struct {
	FirstName    string
	LastName     string
	Email        string
	Phone        string
	Country      string
	Address      string
	AddressLine2 string
	City         string
	PostalCode   string
	State        string
	IPAddress    string
	DOB          string
	Gender       string
}

// Payment is a stored payment. It never holds a full card number or CVV.
type Payment struct {
	ID         string
	MerchantID string
	Mode       Mode
	CustomerID string // the customer's UUID
	ProviderID string // "" while not submitted to a provider
	// ProviderRef is the provider's own reference for the payment.
	ProviderRef string
	Status      PaymentStatus
	Amount      Money
	// AmountText is the amount exactly as the merchant submitted it.
	AmountText        string
	AmountCaptured    int64
	AmountRefunded    int64
	Method            PaymentMethod
	StoredCardID      string
	MerchantRef       string // "" when none
	ErrorCode         string
	ErrorMessage      string
	DeclineCode       string
	Card              CardSummary
	Billing           *Billing
	ReturnURL         string
	DeviceFingerprint string
	Metadata          []byte // compact JSON object, "{}" when none
	// IdempotencyKey is the key of the request that created the payment, so
	// recovery can complete that request's idempotency record.
	IdempotencyKey string
	// LeaseUntil is when the creating request is certainly no longer
	// working on the payment; recovery may take it over after that.
	LeaseUntil time.Time
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// NewPayment is what CreatePayment inserts: the payment (status created) and
// the customer it belongs to, resolved by external id. As an operation of a
// Unit it inserts the payment in the status it has (unit.go).
type NewPayment struct {
	Payment Payment // CustomerID is filled in by the store
	// Customer resolves (or creates, with no email and empty metadata) the
	// customer of this external id.
	CustomerExternalID string
	NewCustomerID      string
	// Route is the providers the payment may be sent to, in the order
	// they will be tried (the Router's answer, chosen before the insert).
	// A store may commit the insert differently by where they keep their
	// records; what it stores is the same either way.
	Route []Provider
	// Reservation, when set, reserves the payment's idempotency key (its
	// Key is Payment.IdempotencyKey) in the transaction that inserts the
	// payment, as ReserveIdempotency would, with the record linked to the
	// payment from the start. When the key has a live record, nothing is
	// written and the error is a *KeyTakenError; UNAUTHORIZED when the API
	// key is no longer active. Saves the reservation's own transaction.
	Reservation *IdempotencyReservation
}

// CheckReservation returns an error when np.Reservation is set but is not
// for the payment's own idempotency key, merchant and mode: a store must
// then write nothing.
func (np NewPayment) CheckReservation() error {
	r, p := np.Reservation, np.Payment
	if r != nil && (r.Key != p.IdempotencyKey || r.MerchantID != p.MerchantID || r.Mode != p.Mode) {
		return fmt.Errorf("payment %s: the reservation is not for its idempotency key", p.ID)
	}
	return nil
}

// PaymentTransition moves a payment from one of From to To, conditionally:
// the store returns ErrStateConflict when the payment is in none of From.
// Empty fields other than To leave the stored values unchanged.
type PaymentTransition struct {
	ID           string
	MerchantID   string
	Mode         Mode
	From         []PaymentStatus
	To           PaymentStatus
	ProviderID   string
	ProviderRef  string
	ErrorCode    string
	ErrorMessage string
	DeclineCode  string
	// AmountCaptured is set when non-nil.
	AmountCaptured *int64
	UpdatedAt      time.Time
}
