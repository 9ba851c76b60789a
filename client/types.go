package client

import (
	"log/slog"
	"time"
)

// Amounts are decimal strings ("10.50", "100" for JPY), as the API takes
// and shows them: at most two decimals, no more than the currency has.
// The client never turns them into floats.

// PaymentStatus is a payment's status.
type PaymentStatus string

// The statuses of a payment.
const (
	// PaymentCreated: stored, the provider's answer not known yet (a
	// create that answered 202); the final status follows by webhook.
	PaymentCreated        PaymentStatus = "created"
	PaymentCaptured       PaymentStatus = "captured"
	PaymentAuthorized     PaymentStatus = "authorized"
	PaymentPending3DS     PaymentStatus = "pending_3ds"
	PaymentPendingConsent PaymentStatus = "pending_consent" // reserved: no flow produces it
	PaymentFailed         PaymentStatus = "failed"
	PaymentVoided         PaymentStatus = "voided"
)

// RefundStatus is a refund's status: created, then pending, then
// succeeded or failed.
type RefundStatus string

// The statuses of a refund.
const (
	RefundCreated   RefundStatus = "created"
	RefundPending   RefundStatus = "pending"
	RefundSucceeded RefundStatus = "succeeded"
	RefundFailed    RefundStatus = "failed"
)

// The payment methods of PaymentParams.PaymentMethod.
const (
	MethodCard       = "card"
	MethodStoredCard = "stored_card"
	// MethodToken pays with a single-use card token (PaymentParams.Token)
	// that the gateway's card fields made in the shopper's browser.
	MethodToken = "token"
)

// Card is a card's details, sent with a payment. Its Number and CVV never
// show when the value is printed or logged.
type Card struct {
	Number      string `json:"number"`      // 13 to 19 digits
	ExpiryMonth string `json:"expiryMonth"` // "01" to "12"
	ExpiryYear  string `json:"expiryYear"`  // two digits: "30" is 2030
	CVV         string `json:"cvv"`         // 3 digits, 4 for American Express
	HolderName  string `json:"holderName"`
}

// String shows the card without its number and CVV.
func (c Card) String() string {
	return "{Number:[redacted] ExpiryMonth:" + c.ExpiryMonth + " ExpiryYear:" + c.ExpiryYear + " CVV:[redacted] HolderName:" + c.HolderName + "}"
}

// GoString is String, for %#v.
func (c Card) GoString() string { return "client.Card" + c.String() }

// LogValue shows the card without its number and CVV in log/slog.
func (c Card) LogValue() slog.Value {
	return slog.GroupValue(slog.String("number", "[redacted]"), slog.String("expiryMonth", c.ExpiryMonth),
		slog.String("expiryYear", c.ExpiryYear), slog.String("cvv", "[redacted]"), slog.String("holderName", c.HolderName))
}

// Billing is the cardholder's billing details. Email, Phone, Country,
// Address, City and PostalCode are required; State too for US and CA.
type Billing struct {
	FirstName    string `json:"firstName,omitempty"`
	LastName     string `json:"lastName,omitempty"`
	Email        string `json:"email,omitempty"`
	Phone        string `json:"phone,omitempty"`   // with country code, 5 to 32 characters
	Country      string `json:"country,omitempty"` // ISO 3166-1 alpha-2
	Address      string `json:"address,omitempty"`
	AddressLine2 string `json:"addressLine2,omitempty"`
	City         string `json:"city,omitempty"`
	PostalCode   string `json:"postalCode,omitempty"`
	State        string `json:"state,omitempty"`
	IPAddress    string `json:"ipAddress,omitempty"` // IPv4; default: the address of the request
	DOB          string `json:"dob,omitempty"`       // YYYY-MM-DD
	Gender       string `json:"gender,omitempty"`    // "M" or "F"
}

// PaymentParams is a payment to create. Amount, Currency and CustomerID
// are required; so is Card for a card payment (the default method),
// StoredCardID for a stored_card one, and Token for a token one.
type PaymentParams struct {
	Amount        string `json:"amount"`
	Currency      string `json:"currency"`
	PaymentMethod string `json:"paymentMethod,omitempty"` // MethodCard (default), MethodStoredCard or MethodToken
	// CustomerID is your own id of the customer (its externalId): the
	// gateway finds the customer, or creates it.
	CustomerID   string `json:"customerId"`
	Card         *Card  `json:"card,omitempty"`
	StoredCardID string `json:"storedCardId,omitempty"`
	// Token is a card token ("tok_…") of the merchant and mode, for
	// MethodToken: it pays once, within 15 minutes of its creation.
	Token   string   `json:"token,omitempty"`
	Billing *Billing `json:"billing,omitempty"`
	// MerchantRef is your reference of the payment, for LookupPayment.
	MerchantRef string `json:"merchantRef,omitempty"`
	// ReturnURL is where the customer's browser goes after 3-D Secure.
	ReturnURL         string `json:"returnUrl,omitempty"`
	DeviceFingerprint string `json:"deviceFingerprint,omitempty"`
	// Metadata is stored with the payment and not sent to providers: at
	// most 50 keys of 1 to 40 characters, 8 KiB as JSON.
	Metadata map[string]any `json:"metadata,omitzero"`
	// SaveCard stores the card for the customer once the payment is
	// captured or authorized (PaymentResult.StoredCardID).
	SaveCard bool `json:"saveCard,omitempty"`
}

// PaymentResult is the answer of CreatePayment.
type PaymentResult struct {
	ID       string        `json:"id"`
	Status   PaymentStatus `json:"status"` // captured, authorized, pending_3ds, or created (outcome unknown yet)
	Amount   string        `json:"amount"`
	Currency string        `json:"currency"`
	// Provider is the provider the payment was sent to.
	Provider        string       `json:"provider"`
	ThreeDSRequired bool         `json:"threeDsRequired"`
	ThreeDSData     *ThreeDSData `json:"threeDsData"`
	// StoredCardID is the card stored by SaveCard, when it was.
	StoredCardID string    `json:"storedCardId"`
	CreatedAt    time.Time `json:"createdAt"`
}

// ThreeDSData tells where to send the customer's browser for 3-D Secure.
type ThreeDSData struct {
	RedirectURL string            `json:"redirectUrl"`
	Method      string            `json:"method"`     // "GET" or "POST"
	Parameters  map[string]string `json:"parameters"` // the form's fields, for POST
}

// Payment is a payment's record. Fields the gateway shows as null are
// empty strings here.
type Payment struct {
	ID            string        `json:"id"`
	MerchantID    string        `json:"merchantId"`
	CustomerID    string        `json:"customerId"` // the customer's id in the gateway, not its externalId
	ProviderID    string        `json:"providerId"`
	Status        PaymentStatus `json:"status"`
	Amount        string        `json:"amount"`
	Currency      string        `json:"currency"`
	PaymentMethod string        `json:"paymentMethod"`
	MerchantRef   string        `json:"merchantRef"`
	ErrorCode     string        `json:"errorCode"`
	ErrorMessage  string        `json:"errorMessage"`
	DeclineCode   string        `json:"declineCode"`
	// AmountCaptured and AmountRefunded are written with the currency's
	// decimals ("0.00", "10.50", "0" for JPY).
	AmountCaptured string    `json:"amountCaptured"`
	AmountRefunded string    `json:"amountRefunded"`
	StoredCardID   string    `json:"storedCardId"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
}

// CaptureParams is a capture of an authorized payment: Amount, when
// set, captures that much (at most the authorized amount); empty captures
// it all.
type CaptureParams struct {
	Amount string `json:"amount,omitempty"`
}

// RefundParams is a refund to create. TransactionID, Amount and Currency
// are required.
type RefundParams struct {
	TransactionID string `json:"transactionId"`
	Amount        string `json:"amount"`
	Currency      string `json:"currency"`
	Reason        string `json:"reason,omitempty"` // at most 500 characters
}

// Refund is a refund's record. Its status moves from created to pending,
// then succeeded or failed; webhooks tell each step.
type Refund struct {
	ID            string       `json:"id"`
	TransactionID string       `json:"transactionId"`
	Amount        string       `json:"amount"`
	Currency      string       `json:"currency"`
	Status        RefundStatus `json:"status"`
	Reason        string       `json:"reason"`
	ErrorCode     string       `json:"errorCode"`    // why a failed refund failed
	ErrorMessage  string       `json:"errorMessage"` // likewise
	CreatedAt     time.Time    `json:"createdAt"`
	UpdatedAt     time.Time    `json:"updatedAt"`
}

// CustomerParams creates a customer, or updates the one with the same
// ExternalID. Email and Metadata, when given, replace the stored values;
// when left out, the stored values stay (a non-nil empty Metadata clears
// it).
type CustomerParams struct {
	ExternalID string         `json:"externalId"` // your id of the customer, 1 to 255 characters
	Email      string         `json:"email,omitempty"`
	Metadata   map[string]any `json:"metadata,omitzero"`
}

// Customer is a customer's record.
type Customer struct {
	ID         string         `json:"id"`
	ExternalID string         `json:"externalId"`
	Email      string         `json:"email"`
	Metadata   map[string]any `json:"metadata"`
	CreatedAt  time.Time      `json:"createdAt"`
}

// StoredCardParams is a card to store for a customer: a card without a
// CVV, which is never stored. Its Number never shows when the value is
// printed or logged.
type StoredCardParams struct {
	Number      string `json:"number"`
	ExpiryMonth string `json:"expiryMonth"`
	ExpiryYear  string `json:"expiryYear"`
	HolderName  string `json:"holderName"`
}

// String shows the card without its number.
func (c StoredCardParams) String() string {
	return "{Number:[redacted] ExpiryMonth:" + c.ExpiryMonth + " ExpiryYear:" + c.ExpiryYear + " HolderName:" + c.HolderName + "}"
}

// GoString is String, for %#v.
func (c StoredCardParams) GoString() string { return "client.StoredCardParams" + c.String() }

// LogValue shows the card without its number in log/slog.
func (c StoredCardParams) LogValue() slog.Value {
	return slog.GroupValue(slog.String("number", "[redacted]"), slog.String("expiryMonth", c.ExpiryMonth),
		slog.String("expiryYear", c.ExpiryYear), slog.String("holderName", c.HolderName))
}

// StoredCard is a stored card as the API shows it: never more of the
// number than its last four digits.
type StoredCard struct {
	ID          string    `json:"id"`
	CustomerID  string    `json:"customerId"`
	Brand       string    `json:"brand"` // visa, mastercard, amex, discover, jcb, diners, unionpay, unknown
	Last4       string    `json:"last4"`
	ExpiryMonth string    `json:"expiryMonth"`
	ExpiryYear  string    `json:"expiryYear"`
	HolderName  string    `json:"holderName"`
	CreatedAt   time.Time `json:"createdAt"`
}

// CardToken is a single-use card token (POST /v1/tokens): what it shows of
// its card, never the number or the CVV.
type CardToken struct {
	ID        string        `json:"id"` // "tok_…": PaymentParams.Token
	Card      CardTokenCard `json:"card"`
	ExpiresAt time.Time     `json:"expiresAt"`
	Used      bool          `json:"used"`
}

// CardTokenCard is the card of a token, as the token shows it.
type CardTokenCard struct {
	Brand       string `json:"brand"`
	Last4       string `json:"last4"`
	ExpiryMonth string `json:"expiryMonth"`
	ExpiryYear  string `json:"expiryYear"`
}
