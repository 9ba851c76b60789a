package httpapi

import "encoding/json"

// The request bodies of the API, as decoded by decodeJSON. They are the
// wire shapes only: each has a validate method (validate.go) that checks
// every rule and converts it to the input types of package payment. A JSON
// null is the same as an absent field; where absent and empty must be told
// apart, the field is a pointer.

// paymentRequest is the body of POST /v1/payments.
type paymentRequest struct {
	Amount            string          `json:"amount"`
	Currency          string          `json:"currency"`
	PaymentMethod     string          `json:"paymentMethod"`
	CustomerID        string          `json:"customerId"`
	Card              *cardRequest    `json:"card"`
	StoredCardID      string          `json:"storedCardId"`
	Token             string          `json:"token"`
	Billing           *billingRequest `json:"billing"`
	MerchantRef       string          `json:"merchantRef"`
	ReturnURL         string          `json:"returnUrl"`
	DeviceFingerprint string          `json:"deviceFingerprint"`
	Metadata          json.RawMessage `json:"metadata"`
	SaveCard          bool            `json:"saveCard"`
}

// cardRequest is the card object of a payment or of a stored card.
type cardRequest struct {
	Number      string `json:"number"`
	ExpiryMonth string `json:"expiryMonth"`
	ExpiryYear  string `json:"expiryYear"`
	CVV         string `json:"cvv"`
	HolderName  string `json:"holderName"`
}

// billingRequest is the billing object of a payment.
type billingRequest struct {
	FirstName    string `json:"firstName"`
	LastName     string `json:"lastName"`
	Email        string `json:"email"`
	Phone        string `json:"phone"`
	Country      string `json:"country"`
	Address      string `json:"address"`
	AddressLine2 string `json:"addressLine2"`
	City         string `json:"city"`
	PostalCode   string `json:"postalCode"`
	State        string `json:"state"`
	IPAddress    string `json:"ipAddress"`
	DOB          string `json:"dob"`
	Gender       string `json:"gender"`
}

// refundRequest is the body of POST /v1/refunds.
type refundRequest struct {
	TransactionID string `json:"transactionId"`
	Amount        string `json:"amount"`
	Currency      string `json:"currency"`
	Reason        string `json:"reason"`
}

// customerRequest is the body of POST /v1/customers. Email and Metadata
// are nil when absent: an upsert then keeps the stored value.
type customerRequest struct {
	ExternalID string          `json:"externalId"`
	Email      *string         `json:"email"`
	Metadata   json.RawMessage `json:"metadata"`
}

// captureRequest is the body of POST /v1/payments/{id}/capture: {} captures
// the whole authorized amount. Amount is nil when absent.
type captureRequest struct {
	Amount *string `json:"amount"`
}

// storedCardRequest is the body of POST /v1/customers/{id}/cards
// (decisions.md section 13): a card without cvv.
type storedCardRequest struct {
	Card *cardRequest `json:"card"`
}

// tokenRequest is the body of POST /v1/tokens (decisions §19): a card with
// its cvv, validated as a card payment's.
type tokenRequest struct {
	Card *cardRequest `json:"card"`
}
