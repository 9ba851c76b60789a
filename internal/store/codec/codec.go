// Package codec holds the stored encodings that both store engines share, so
// that one record written by SQLite reads the same as one written by
// PostgreSQL. SQL stays in each engine's package; only row mapping is here.
package codec

import (
	"encoding/json"
	"fmt"

	"github.com/paygate/paygate/internal/paygate"
)

// billingJSON is the stored JSON form of paygate.Billing. Its field names are
// part of the schema: renaming one needs a migration.
type billingJSON struct {
	FirstName    string `json:"firstName,omitempty"`
	LastName     string `json:"lastName,omitempty"`
	Email        string `json:"email,omitempty"`
	Phone        string `json:"phone,omitempty"`
	Country      string `json:"country,omitempty"`
	Address      string `json:"address,omitempty"`
	AddressLine2 string `json:"addressLine2,omitempty"`
	City         string `json:"city,omitempty"`
	PostalCode   string `json:"postalCode,omitempty"`
	State        string `json:"state,omitempty"`
	IPAddress    string `json:"ipAddress,omitempty"`
	DOB          string `json:"dob,omitempty"`
	Gender       string `json:"gender,omitempty"`
}

// EncodeBilling returns the stored JSON of b, or nil for no billing.
func EncodeBilling(b *paygate.Billing) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	raw, err := json.Marshal(billingJSON(*b))
	if err != nil {
		return nil, fmt.Errorf("encode billing: %w", err)
	}
	return raw, nil
}

// DecodeBilling parses stored billing JSON; empty input means no billing.
func DecodeBilling(raw []byte) (*paygate.Billing, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var b billingJSON
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("decode billing: %w", err)
	}
	out := paygate.Billing(b)
	return &out, nil
}
