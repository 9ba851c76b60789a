package codec

import "github.com/paygate/paygate/internal/paygate"

// CustomerColumns are the columns of a customers row that ScanCustomer
// reads, in its order. email is NULL when none is stored, on both engines.
const CustomerColumns = `id, merchant_id, mode, external_id, email, metadata, created_at, updated_at`

// ScanCustomer reads a row of CustomerColumns.
func ScanCustomer(row Scanner) (paygate.Customer, error) {
	var c paygate.Customer
	var metadata string
	err := row.Scan(&c.ID, &c.MerchantID, &c.Mode, &c.ExternalID, OptionalText(&c.Email), &metadata,
		At(&c.CreatedAt), At(&c.UpdatedAt))
	if err != nil {
		return paygate.Customer{}, err
	}
	c.Metadata = []byte(metadata)
	return c, nil
}
