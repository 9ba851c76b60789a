package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
	"github.com/paygate/paygate/internal/store/plan"
)

// --- customers ----------------------------------------------------------------

// customerColumns are the columns scanCustomer reads (one row mapping for
// both engines: codec.ScanCustomer).
const customerColumns = codec.CustomerColumns

func scanCustomer(row pgx.Row) (paygate.Customer, error) { return codec.ScanCustomer(row) }

// UpsertCustomer creates the customer or updates the one with the same
// external id in (merchant, mode): email and metadata are replaced when
// given (a given empty email clears it). An existing customer keeps its id
// and CreatedAt; UpdatedAt becomes u.Now.
func (s *Store) UpsertCustomer(ctx context.Context, u paygate.CustomerUpsert) (paygate.Customer, error) {
	var email any
	if u.Email != nil {
		email = nullText(*u.Email)
	}
	var metadata any
	if u.Metadata != nil {
		metadata = jsonObject(u.Metadata)
	}
	c, err := scanCustomer(s.pool.QueryRow(ctx, `
		INSERT INTO customers AS c (id, merchant_id, mode, external_id, email, metadata, created_at, updated_at)
		VALUES (@id, @merchant_id, @mode, @external_id, @email, COALESCE(@metadata, '{}'), @now, @now)
		ON CONFLICT (merchant_id, mode, external_id) DO UPDATE SET
			email = CASE WHEN @email_given THEN EXCLUDED.email ELSE c.email END,
			metadata = CASE WHEN @metadata_given THEN EXCLUDED.metadata ELSE c.metadata END,
			updated_at = EXCLUDED.updated_at
		RETURNING `+customerColumns, namedArgs{
		"id": u.NewID, "merchant_id": u.MerchantID, "mode": u.Mode, "external_id": u.ExternalID,
		"email": email, "email_given": u.Email != nil,
		"metadata": metadata, "metadata_given": u.Metadata != nil,
		"now": u.Now,
	}))
	return c, translate(err)
}

// CustomerByID returns a customer of (merchant, mode), or NOT_FOUND.
func (s *Store) CustomerByID(ctx context.Context, merchantID string, mode paygate.Mode, id string) (paygate.Customer, error) {
	c, err := scanCustomer(s.pool.QueryRow(ctx, `
		SELECT `+customerColumns+` FROM customers
		WHERE id = $1 AND merchant_id = $2 COLLATE "C" AND mode = $3 COLLATE "C"`, id, merchantID, mode))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.Customer{}, notFound("customer")
	}
	return c, translate(err)
}

// --- payments -----------------------------------------------------------------

// Lookups by primary key compare merchant_id and mode under the "C"
// collation (`merchant_id = $2 COLLATE "C"`). For text equality that is the
// same test (both collations are deterministic), but no index can serve it,
// so the planner always finds the row through the primary key. Without it,
// on tables without statistics (a database where autovacuum is off never
// analyzes them) the planner took the dashboard's (merchant_id, mode, ...,
// id) indexes for these lookups, with id checked inside the index, and
// walked every entry of the merchant for each payment update: throughput
// halved within minutes. The customer lookup by external id compares it
// under "C" for the same reason, which makes customers_external_prefix_idx
// (whose third column is external_id COLLATE "C") match all three columns.

// paymentColumns are the columns scanPayment reads (one row mapping for
// both engines: codec.ScanPayment).
const paymentColumns = codec.PaymentColumns

func scanPayment(row pgx.Row) (paygate.Payment, error) { return codec.ScanPayment(row) }

// createPaymentSQL returns the statement that resolves the customer and
// inserts the payment, all only when guard (an SQL condition) holds: when
// it does not (a replayed request's key is taken), the statement reads
// nothing else and writes nothing. tail adds CTEs after the payment's, and
// final is the statement's SELECT. A
// missing customer is inserted with ON CONFLICT DO UPDATE, a no-op update
// that only serves to return the row: if a concurrent request inserted the
// same customer after this statement's snapshot was taken, the insert waits
// for it and returns its id, so the statement always resolves the customer.
func createPaymentSQL(guard, tail, final string) string {
	return `
	WITH existing AS (
		SELECT id FROM customers
		WHERE merchant_id = @merchant_id AND mode = @mode AND external_id = @customer_external_id COLLATE "C"
			AND ` + guard + `
	), inserted AS (
		INSERT INTO customers (id, merchant_id, mode, external_id, metadata, created_at, updated_at)
		SELECT @new_customer_id, @merchant_id, @mode, @customer_external_id, '{}', @created_at, @created_at
		WHERE NOT EXISTS (SELECT 1 FROM existing) AND ` + guard + `
		ON CONFLICT (merchant_id, mode, external_id) DO UPDATE SET external_id = EXCLUDED.external_id
		RETURNING id
	), customer AS (
		SELECT id FROM existing UNION ALL SELECT id FROM inserted
	), payment AS (
		INSERT INTO payments (id, merchant_id, mode, customer_id, provider_id, provider_ref, status,
			amount, currency, amount_text, amount_captured, amount_refunded, method, stored_card_id,
			merchant_ref, error_code, error_message, decline_code,
			card_brand, card_last4, card_exp_month, card_exp_year, card_holder_name, card_fingerprint,
			billing, return_url, device_fingerprint, metadata, idempotency_key, lease_until,
			created_at, updated_at)
		SELECT @id, @merchant_id, @mode, customer.id, @provider_id, @provider_ref, @status,
			@amount, @currency, @amount_text, @amount_captured, @amount_refunded, @method, @stored_card_id,
			@merchant_ref, @error_code, @error_message, @decline_code,
			@card_brand, @card_last4, @card_exp_month, @card_exp_year, @card_holder_name, @card_fingerprint,
			@billing, @return_url, @device_fingerprint, @metadata, @idempotency_key, @lease_until,
			@created_at, @updated_at
		FROM customer LIMIT 1
		RETURNING customer_id
	)` + tail + `
	` + final
}

// insertedCustomer is the SELECT of CreatePayment's statements.
const insertedCustomer = `SELECT customer_id FROM payment`

// createPayment inserts the payment and links it to its idempotency record
// (reserved earlier, by another statement).
var createPayment = createPaymentSQL("TRUE", `, linked AS (
		UPDATE idempotency_keys SET payment_id = @id
		WHERE merchant_id = @merchant_id AND mode = @mode AND key = @idempotency_key
			AND EXISTS (SELECT 1 FROM payment)
	)`, insertedCustomer)

// reservedForPayment holds when the payment's idempotency record names it:
// the reservation statement before it in the same transaction reserved the
// key for this payment id (a fresh UUID, so no other request's record can
// name it).
const reservedForPayment = `EXISTS (
		SELECT 1 FROM idempotency_keys
		WHERE merchant_id = @merchant_id AND mode = @mode AND key = @idempotency_key AND payment_id = @id)`

// createReservedPayment inserts the payment only when its idempotency
// record names it (reservedForPayment).
var createReservedPayment = createPaymentSQL(reservedForPayment, "", insertedCustomer)

// CreatePayment, in one statement, resolves the customer by external id
// (creating it with no email and empty metadata when missing), inserts the
// payment in status created, and links the payment to the idempotency record
// of p.Payment.IdempotencyKey. Returns the payment with CustomerID set (its
// status is created and nothing is refunded, whatever p said). ErrConflict
// on a duplicate payment id. With np.Reservation, the key is reserved in the
// same round trip and transaction (reserveAndCreatePayment).
func (s *Store) CreatePayment(ctx context.Context, np paygate.NewPayment) (paygate.Payment, error) {
	np.Payment.Status = paygate.PaymentCreated
	p, args, err := createPaymentArgs(np)
	if err != nil {
		return paygate.Payment{}, err
	}
	if np.Reservation != nil {
		return s.reserveAndCreatePayment(ctx, np, p, args)
	}
	if plan.LazyCreate(np) {
		// Committed without waiting for its WAL flush (see
		// plan.LazyCreate): the provider's ledger entry and the
		// outcome are written after it (in one unit, unless the charge
		// was not answered at once), and the outcome's synchronous commit
		// flushes all earlier WAL, this insert included.
		b := &pgx.Batch{}
		b.Queue(skipFlushWait)
		b.Queue(createPayment, args).QueryRow(func(row pgx.Row) error { return row.Scan(&p.CustomerID) })
		err = s.pool.SendBatch(ctx, b).Close()
	} else {
		err = s.pool.QueryRow(ctx, createPayment, args).Scan(&p.CustomerID)
	}
	if err != nil {
		return paygate.Payment{}, translate(err)
	}
	return p, nil
}

// reserveAndCreatePayment reserves the payment's idempotency key and
// inserts the payment in one pipelined batch: one round trip and one
// implicit transaction, instead of one of each for the reservation and
// another for the insert. The reservation writes the payment's id into the
// record, and the insert runs only when the record names it; the read of
// the record between them tells a taken key's record.
func (s *Store) reserveAndCreatePayment(ctx context.Context, np paygate.NewPayment, p paygate.Payment, args namedArgs) (paygate.Payment, error) {
	if err := np.CheckReservation(); err != nil {
		return paygate.Payment{}, fmt.Errorf("postgres: %w", err)
	}
	r := *np.Reservation
	// A record read as missing was released or purged between the
	// statements: try again, a few times (as ReserveIdempotency).
	lazy := plan.LazyCreate(np)
	for range 5 {
		var res reservation
		inserted := false
		b := &pgx.Batch{}
		if lazy {
			// See CreatePayment and ReserveIdempotency: both writes may
			// commit without their own flush on a gateway-ledger route.
			b.Queue(skipFlushWait)
		}
		queueReservation(b, r, p.ID, nil, &res)
		b.Queue(createReservedPayment, args).QueryRow(func(row pgx.Row) error {
			err := row.Scan(&p.CustomerID)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			inserted = err == nil
			return err
		})
		if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
			return paygate.Payment{}, translate(err)
		}
		switch {
		case !res.keyActive:
			return paygate.Payment{}, paygate.Errorf(paygate.CodeUnauthorized, "", "The API key is not active.")
		case res.reserved && inserted:
			return p, nil
		case res.reserved:
			// The statement resolves every customer (createPaymentSQL),
			// so this does not happen; if it did, the record names a
			// payment that does not exist: free the key rather than
			// leave it in flight for a day.
			_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys
				WHERE merchant_id = $1 AND mode = $2 AND key = $3 AND payment_id = $4`,
				r.MerchantID, r.Mode, r.Key, p.ID)
			return paygate.Payment{}, errors.Join(
				fmt.Errorf("postgres: payment %s was not inserted after its key was reserved", p.ID), translate(err))
		case res.found:
			return paygate.Payment{}, &paygate.KeyTakenError{Record: res.rec}
		}
	}
	return paygate.Payment{}, paygate.ErrStateConflict
}

// createPaymentArgs returns the payment as it is stored (in the status it
// has: CreatePayment sets created) and the arguments of createPaymentSQL's
// statements.
func createPaymentArgs(np paygate.NewPayment) (paygate.Payment, namedArgs, error) {
	p := np.Payment
	p.AmountRefunded = 0
	if len(p.Metadata) == 0 {
		p.Metadata = []byte("{}")
	}
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = p.CreatedAt
	}
	var billing any
	if b, err := codec.EncodeBilling(p.Billing); err != nil {
		return paygate.Payment{}, nil, fmt.Errorf("postgres: %w", err)
	} else if b != nil {
		billing = b
	}
	args := namedArgs{
		"id": p.ID, "merchant_id": p.MerchantID, "mode": p.Mode,
		"customer_external_id": np.CustomerExternalID, "new_customer_id": np.NewCustomerID,
		"provider_id": p.ProviderID, "provider_ref": p.ProviderRef, "status": p.Status,
		"amount": p.Amount.Amount, "currency": p.Amount.Currency, "amount_text": p.AmountText,
		"amount_captured": p.AmountCaptured, "amount_refunded": p.AmountRefunded,
		"method": p.Method, "stored_card_id": p.StoredCardID,
		"merchant_ref": p.MerchantRef, "error_code": p.ErrorCode,
		"error_message": p.ErrorMessage, "decline_code": p.DeclineCode,
		"card_brand": p.Card.Brand, "card_last4": p.Card.Last4,
		"card_exp_month": p.Card.ExpMonth, "card_exp_year": p.Card.ExpYear,
		"card_holder_name": p.Card.HolderName, "card_fingerprint": p.Card.Fingerprint,
		"billing": billing, "return_url": p.ReturnURL,
		"device_fingerprint": p.DeviceFingerprint, "metadata": string(p.Metadata),
		"idempotency_key": p.IdempotencyKey, "lease_until": p.LeaseUntil,
		"created_at": p.CreatedAt, "updated_at": p.UpdatedAt,
	}
	return p, args, nil
}

// movedPayment is the head of the statements that apply a conditional
// transition, insert its events and complete its idempotency record, all
// only when the transition applied; each adds its final SELECT.
const movedPayment = `
	WITH moved AS (
		UPDATE payments SET
			status = @to,
			provider_id = COALESCE(@provider_id, provider_id),
			provider_ref = COALESCE(@provider_ref, provider_ref),
			error_code = COALESCE(@error_code, error_code),
			error_message = COALESCE(@error_message, error_message),
			decline_code = COALESCE(@decline_code, decline_code),
			amount_captured = COALESCE(@amount_captured, amount_captured),
			updated_at = COALESCE(@updated_at, updated_at)
		WHERE id = @id AND merchant_id = @merchant_id COLLATE "C" AND mode = @mode COLLATE "C" AND status = ANY(@from::text[])
		RETURNING id
	), events AS (` + insertEvents + ` WHERE EXISTS (SELECT 1 FROM moved) ORDER BY e.ord
	), done AS (` + completeIdempotency + ` AND EXISTS (SELECT 1 FROM moved)
	)`

// paymentExists is true when the payment of the transition exists for its
// merchant and mode (in the statement's snapshot, before it moved).
const paymentExists = `EXISTS (SELECT 1 FROM payments WHERE id = @id AND merchant_id = @merchant_id COLLATE "C" AND mode = @mode COLLATE "C")`

// transitionPayment is movedPayment answering whether the transition
// applied and whether the payment exists: the caller tells a lost race
// from a missing payment.
const transitionPayment = movedPayment + `
	SELECT EXISTS (SELECT 1 FROM moved), ` + paymentExists

// transitionArgs returns the arguments of transitionPayment.
func transitionArgs(t paygate.PaymentTransition, events []paygate.Event, done *paygate.IdempotencyCompletion) namedArgs {
	from := make([]string, len(t.From))
	for i, st := range t.From {
		from[i] = string(st)
	}
	args := namedArgs{
		"id": t.ID, "merchant_id": t.MerchantID, "mode": t.Mode, "from": from, "to": t.To,
		"provider_id": nullText(t.ProviderID), "provider_ref": nullText(t.ProviderRef),
		"error_code": nullText(t.ErrorCode), "error_message": nullText(t.ErrorMessage),
		"decline_code": nullText(t.DeclineCode), "amount_captured": t.AmountCaptured,
		"updated_at": nullTime(t.UpdatedAt),
	}
	addEventArgs(args, events)
	addCompletionArgs(args, done)
	return args
}

const paymentByID = `SELECT ` + paymentColumns + ` FROM payments
	WHERE id = $1 AND merchant_id = $2 COLLATE "C" AND mode = $3 COLLATE "C"`

// paymentByKeyHash is paymentByID within the merchant and mode of the API
// key whose hash is $2 (APIKeyAndRequest).
const paymentByKeyHash = `SELECT ` + paymentColumns + ` FROM payments
	WHERE id = $1 AND (merchant_id COLLATE "C", mode COLLATE "C") = (SELECT merchant_id, mode FROM api_keys WHERE hash = $2)`

// PaymentByID returns a payment of (merchant, mode), or NOT_FOUND.
func (s *Store) PaymentByID(ctx context.Context, merchantID string, mode paygate.Mode, id string) (paygate.Payment, error) {
	p, err := scanPayment(s.pool.QueryRow(ctx, paymentByID, id, merchantID, mode))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.Payment{}, notFound("payment")
	}
	return p, translate(err)
}

// PaymentByMerchantRef returns the most recently created payment of
// (merchant, mode) with the reference (of equal creation times, the last
// inserted), or NOT_FOUND. The empty reference matches nothing: a payment
// without a reference stores "", so it is answered without a query.
func (s *Store) PaymentByMerchantRef(ctx context.Context, merchantID string, mode paygate.Mode, ref string) (paygate.Payment, error) {
	if ref == "" {
		return paygate.Payment{}, notFound("payment")
	}
	p, err := scanPayment(s.pool.QueryRow(ctx, `
		SELECT `+paymentColumns+` FROM payments
		WHERE merchant_id = $1 AND mode = $2 AND merchant_ref = $3
		ORDER BY created_at DESC, seq DESC LIMIT 1`, merchantID, mode, ref))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.Payment{}, notFound("payment")
	}
	return p, translate(err)
}
