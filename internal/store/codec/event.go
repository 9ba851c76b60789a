package codec

import "github.com/paygate/paygate/internal/paygate"

// EventColumns are the columns of an events row that ScanEvent reads, in
// its order. Both engines store an event alike (issue 19): payment_id and
// refund_id are NOT NULL, with an empty string for none (a ping has
// neither, a payment's event no refund); the payload is bytes; created_at
// is as At describes.
const EventColumns = `id, merchant_id, mode, type, payment_id, refund_id, payload, created_at`

// ScanEvent reads a row of EventColumns.
func ScanEvent(row Scanner) (paygate.Event, error) {
	var e paygate.Event
	if err := row.Scan(&e.ID, &e.MerchantID, &e.Mode, &e.Type, &e.PaymentID, &e.RefundID, &e.Payload,
		At(&e.CreatedAt)); err != nil {
		return paygate.Event{}, err
	}
	if e.Payload == nil {
		e.Payload = []byte{}
	}
	return e, nil
}
