// Package baseline declares what the load tool (`paygate bench --baseline`,
// issue 9) needs of a store: the database's own limit for the writes of a
// payment, so that the gateway's rate reads as a ratio that holds on a noisy
// machine. It is the load tool's contract, not the domain's: nothing but the
// load tool calls it, and the engines implement it next to their SQL.
package baseline

import (
	"context"
	"strconv"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// Store is implemented by the stores for `paygate bench --baseline`. It is
// not part of paygate.Store: nothing but the load tool calls it.
type Store interface {
	// BaselinePayment performs, in ONE transaction through the store's
	// driver and pool, the database writes of one successful card payment
	// as the gateway performs them (see Writes), for the merchant
	// and mode, which must exist. n makes the rows' natural keys unique
	// within a run (ids are fresh UUIDs, so runs never collide). It
	// leaves a captured payment behind, as a real one would.
	BaselinePayment(ctx context.Context, merchantID string, mode paygate.Mode, n int64) error
}

// Customers is how many distinct customers the baseline's payments
// belong to, like the load tool's clients: most payments find their
// customer, a few create it.
const Customers = 500

// Writes are the rows of one successful card payment, with the sizes
// a real one has:
//
//   - the idempotency record, inserted in flight (ReserveIdempotency),
//   - the customer resolved by external id, inserted when missing, and the
//     payment inserted as created, linked to the idempotency record
//     (CreatePayment),
//   - the payment moved to captured, its payment.captured event inserted
//     (the events trigger adds webhook deliveries when the merchant has an
//     endpoint) and the idempotency record completed with the answer
//     (Commit of the transition, the event and the answer).
//
// The sandbox provider's own ledger entry (a SandboxCharge operation, which
// the gateway commits with the outcome) is not included: it is the
// simulated provider's write, not the gateway's.
type Writes struct {
	Reservation paygate.IdempotencyReservation
	Payment     paygate.NewPayment
	Transition  paygate.PaymentTransition
	Event       paygate.Event
	Done        paygate.IdempotencyCompletion
}

// NewWrites builds the rows of the n-th baseline payment at now.
// paymentID, customerID and eventID are fresh UUIDs from the caller.
func NewWrites(merchantID string, mode paygate.Mode, n int64, paymentID, customerID, eventID string, now time.Time) Writes {
	now = paygate.Normalize(now)
	num := strconv.FormatInt(n, 10)
	ref := "order-" + num
	key := "baseline-" + paymentID
	amount := int64(4200)
	p := paygate.Payment{
		ID: paymentID, MerchantID: merchantID, Mode: mode, Status: paygate.PaymentCreated,
		Amount: paygate.Money{Amount: amount, Currency: "EUR"}, AmountText: "42.00", Method: paygate.MethodCard,
		MerchantRef: ref,
		Card: paygate.CardSummary{
			Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: now.Year() + 3,
			HolderName: "Ada Lovelace", Fingerprint: "3f9c1e7a5b2d4c6e8f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60",
		},
		Billing: &paygate.Billing{
			FirstName: "Ada", LastName: "Lovelace", Email: "ada@example.com", Phone: "+441632960001",
			Country: "GB", Address: "12 Analytical Row", City: "London", PostalCode: "N1 9GU", IPAddress: "203.0.113.7",
		},
		Metadata:       []byte(`{"orderId":"` + ref + `","channel":"web","source":"paygate-bench","cart":"3 items"}`),
		IdempotencyKey: key,
		LeaseUntil:     now.Add(paygate.PaymentLease),
		CreatedAt:      now, UpdatedAt: now,
	}
	ts := now.Format("2006-01-02T15:04:05.000Z")
	// The answer and the event payload are the real ones' shape and size
	// (httpapi's creation answer, webhook.PaymentEvent).
	payload := `{"id":"` + eventID + `","event":"payment.captured","mode":"` + string(mode) + `","timestamp":"` + ts +
		`","data":{"transactionId":"` + paymentID + `","merchantId":"` + merchantID +
		`","status":"captured","amount":4200,"currency":"EUR"}}`
	answer := `{"data":{"id":"` + paymentID + `","status":"captured","amount":"42.00","currency":"EUR",` +
		`"provider":"sandbox-eu","threeDsRequired":false,"threeDsData":null,"createdAt":"` + ts + `"}}`
	captured := amount
	return Writes{
		Reservation: paygate.IdempotencyReservation{
			MerchantID: merchantID, Mode: mode, Key: key,
			Fingerprint: []byte("0123456789abcdef0123456789abcdef"), Now: now,
		},
		Payment: paygate.NewPayment{
			Payment:            p,
			CustomerExternalID: "customer-" + strconv.FormatInt(n%Customers, 10),
			NewCustomerID:      customerID,
		},
		Transition: paygate.PaymentTransition{
			ID: paymentID, MerchantID: merchantID, Mode: mode,
			From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentCaptured,
			ProviderID: "sandbox", ProviderRef: "sb_" + paymentID, AmountCaptured: &captured, UpdatedAt: now,
		},
		Event: paygate.Event{
			ID: eventID, MerchantID: merchantID, Mode: mode, Type: paygate.EventPaymentCaptured,
			PaymentID: paymentID, Payload: []byte(payload), CreatedAt: now,
		},
		Done: paygate.IdempotencyCompletion{MerchantID: merchantID, Mode: mode, Key: key, StatusCode: 201, Body: []byte(answer)},
	}
}
