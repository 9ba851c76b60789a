package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

const storedCardColumns = codec.StoredCardColumns

// eraseCard is the SET clause that deletes a card at @at: the sealed
// number, its wrapped key, key id and fingerprint are erased, the summary
// stays.
const eraseCard = `state = 'deleted', key_id = NULL, wrapped_key = NULL, ciphertext = NULL,
	fingerprint = NULL, deleted_at = @at, updated_at = @at`

func scanStoredCard(row pgx.Row) (paygate.StoredCard, error) { return codec.ScanStoredCard(row) }

func collectStoredCards(rows pgx.Rows, err error) ([]paygate.StoredCard, error) {
	if err != nil {
		return nil, translate(err)
	}
	cards, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.StoredCard, error) { return scanStoredCard(r) })
	if err != nil {
		return nil, translate(err)
	}
	if cards == nil {
		cards = []paygate.StoredCard{}
	}
	return cards, nil
}

// StoredCards lists the active cards of the query's customer, newest
// first, or NOT_FOUND when the customer does not exist for (merchant,
// mode). Only an empty list costs a second query (customers are never
// deleted, so it cannot disagree with the first).
func (s *Store) StoredCards(ctx context.Context, q paygate.StoredCardQuery) ([]paygate.StoredCard, error) {
	args := namedArgs{"merchant_id": q.MerchantID, "mode": q.Mode}
	customer := `@customer_id`
	args["customer_id"] = q.CustomerID
	if q.CustomerID == "" {
		customer = `(SELECT id FROM customers WHERE merchant_id = @merchant_id AND mode = @mode AND external_id = @external_id)`
		args["external_id"] = q.CustomerExternalID
	}
	where := `customer_id = ` + customer + ` AND merchant_id = @merchant_id AND mode = @mode AND state = 'active'`
	if q.ID != "" {
		where += ` AND id = @id`
		args["id"] = q.ID
	}
	if len(q.Fingerprints) > 0 {
		where += ` AND fingerprint = ANY(@fingerprints::text[])`
		args["fingerprints"] = q.Fingerprints
	}
	cards, err := collectStoredCards(s.pool.Query(ctx, `
		SELECT `+storedCardColumns+` FROM stored_cards WHERE `+where+`
		ORDER BY created_at DESC, seq DESC`, args))
	if err != nil || len(cards) > 0 {
		return cards, err
	}
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM customers
		WHERE id = `+customer+` AND merchant_id = @merchant_id COLLATE "C" AND mode = @mode COLLATE "C")`,
		args).Scan(&exists); err != nil {
		return nil, translate(err)
	}
	if !exists {
		return nil, notFound("customer")
	}
	return cards, nil
}

// insertStoredCardInUnit inserts the card of a StoredCard operation when its
// customer exists for its merchant and mode, and fails the unit through
// unit_refused (PG404) otherwise. A second active card of one number for
// the customer violates stored_cards_active_fingerprint: ErrConflict.
const insertStoredCardInUnit = `
	WITH inserted AS (
		INSERT INTO stored_cards (id, merchant_id, mode, customer_id, state, payment_id, brand, last4,
			exp_month, exp_year, holder_name, key_id, wrapped_key, ciphertext, fingerprint, created_at, updated_at)
		SELECT @id, @merchant_id, @mode, @customer_id, @state, @payment_id, @brand, @last4,
			@exp_month, @exp_year, @holder_name, @key_id, @wrapped_key, @ciphertext, @fingerprint, @created_at, @updated_at
		FROM customers WHERE id = @customer_id AND merchant_id = @merchant_id COLLATE "C" AND mode = @mode COLLATE "C"
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM inserted) THEN true ELSE unit_refused(false) END`

// storedCardArgs returns the arguments of insertStoredCardInUnit.
func storedCardArgs(c paygate.StoredCard) namedArgs {
	return namedArgs{
		"id": c.ID, "merchant_id": c.MerchantID, "mode": c.Mode, "customer_id": c.CustomerID,
		"state": c.State, "payment_id": c.PaymentID, "brand": c.Brand, "last4": c.Last4,
		"exp_month": c.ExpMonth, "exp_year": c.ExpYear, "holder_name": c.HolderName,
		"key_id": c.Sealed.KeyID, "wrapped_key": c.Sealed.WrappedKey, "ciphertext": c.Sealed.Ciphertext,
		"fingerprint": c.Sealed.Fingerprint, "created_at": c.CreatedAt, "updated_at": c.UpdatedAt,
	}
}

// linkStoredCardInUnit sets the payment's stored card (StoredCardLink), for
// a payment of the customer in its merchant and mode and a card of the
// customer that is active, and fails the unit through unit_refused
// otherwise: PG404 when the payment is not the customer's, PG409 when the
// card is not active (linkRefused). The card's row is locked (FOR SHARE)
// so a concurrent deletion either waits for this unit to commit or, having
// updated it first, is waited for and then seen under READ COMMITTED: the
// card is no longer active and the unit is refused.
const linkStoredCardInUnit = `
	WITH card AS (
		SELECT id FROM stored_cards
		WHERE id = @stored_card_id AND merchant_id = @merchant_id AND mode = @mode
			AND customer_id = @customer_id AND state = 'active'
		FOR SHARE
	), linked AS (
		UPDATE payments SET stored_card_id = (SELECT id FROM card)
		WHERE id = @payment_id AND merchant_id = @merchant_id COLLATE "C" AND mode = @mode COLLATE "C"
			AND customer_id = @customer_id AND EXISTS (SELECT 1 FROM card)
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM linked) THEN true
		ELSE unit_refused(EXISTS (SELECT 1 FROM payments WHERE id = @payment_id
			AND merchant_id = @merchant_id COLLATE "C" AND mode = @mode COLLATE "C" AND customer_id = @customer_id)) END`

// linkRefused names the refusal of a StoredCardLink: ErrConflict when the
// card is not an active card of the customer (SaveStoredCard looks again),
// NOT_FOUND when the payment is not the customer's.
func linkRefused(l paygate.StoredCardLink) func(*pgconn.PgError) error {
	return func(pgErr *pgconn.PgError) error {
		switch pgErr.Code {
		case sqlStateConflict:
			return fmt.Errorf("postgres: %w: stored card %s is not an active card of the customer", paygate.ErrConflict, l.StoredCardID)
		case sqlStateNotFound:
			return notFound("payment")
		}
		return nil
	}
}

// linkArgs returns the arguments of linkStoredCardInUnit.
func linkArgs(l paygate.StoredCardLink) namedArgs {
	return namedArgs{
		"stored_card_id": l.StoredCardID, "payment_id": l.PaymentID, "merchant_id": l.MerchantID,
		"mode": l.Mode, "customer_id": l.CustomerID,
	}
}

// deleteStoredCardInUnit deletes an active card of the customer and erases
// its sealed number (StoredCardDeletion), and fails the unit through
// unit_refused (PG404) when there is none.
const deleteStoredCardInUnit = `
	WITH deleted AS (
		UPDATE stored_cards SET ` + eraseCard + `
		WHERE id = @id AND merchant_id = @merchant_id AND mode = @mode AND customer_id = @customer_id AND state = 'active'
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM deleted) THEN true ELSE unit_refused(false) END`

// deletionArgs returns the arguments of deleteStoredCardInUnit.
func deletionArgs(d paygate.StoredCardDeletion) namedArgs {
	return namedArgs{"id": d.ID, "merchant_id": d.MerchantID, "mode": d.Mode, "customer_id": d.CustomerID, "at": d.At}
}

// activatePendingCardInUnit settles the payment's pending card after a
// successful payment (PendingCardActivation): when the customer has an
// active card of the same fingerprint, the pending card is erased and the
// payment linked to that card; otherwise the pending card becomes active and
// the payment is linked to it. The pending card's row is locked first, so a
// concurrent activation waits and then, under READ COMMITTED, finds it no
// longer pending. When the payment has no pending card (or is not its
// customer's), the statement fails the unit through unit_refused (PG404).
const activatePendingCardInUnit = `
	WITH pending AS (
		SELECT id, customer_id, fingerprint FROM stored_cards
		WHERE payment_id = @payment_id AND merchant_id = @merchant_id AND mode = @mode AND state = 'pending'
		FOR UPDATE
	), existing AS (
		SELECT s.id FROM stored_cards s JOIN pending p ON s.customer_id = p.customer_id AND s.fingerprint = p.fingerprint
		WHERE s.merchant_id = @merchant_id AND s.mode = @mode AND s.state = 'active'
		ORDER BY s.created_at, s.seq LIMIT 1
	), erased AS (
		UPDATE stored_cards SET ` + eraseCard + `
		WHERE id = (SELECT id FROM pending) AND EXISTS (SELECT 1 FROM existing)
		RETURNING id
	), activated AS (
		UPDATE stored_cards SET state = 'active', updated_at = @at
		WHERE id = (SELECT id FROM pending) AND NOT EXISTS (SELECT 1 FROM existing)
		RETURNING id
	), linked AS (
		UPDATE payments SET stored_card_id = COALESCE((SELECT id FROM existing), (SELECT id FROM activated))
		WHERE id = @payment_id AND merchant_id = @merchant_id COLLATE "C" AND mode = @mode COLLATE "C"
			AND customer_id = (SELECT customer_id FROM pending)
			AND (EXISTS (SELECT 1 FROM erased) OR EXISTS (SELECT 1 FROM activated))
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM linked) THEN true ELSE unit_refused(false) END`

// discardPendingCard erases the payment's pending card, if any
// (PendingCardDiscard).
const discardPendingCard = `
	UPDATE stored_cards SET ` + eraseCard + `
	WHERE payment_id = @payment_id AND merchant_id = @merchant_id AND mode = @mode AND state = 'pending'`

// pendingCardArgs returns the arguments of activatePendingCardInUnit and
// discardPendingCard.
func pendingCardArgs(merchantID string, mode paygate.Mode, paymentID string, at time.Time) namedArgs {
	return namedArgs{"payment_id": paymentID, "merchant_id": merchantID, "mode": mode, "at": at}
}

// StoredCardsToRewrap returns cards not sealed under keyID, after the id,
// in id order.
func (s *Store) StoredCardsToRewrap(ctx context.Context, keyID, after string, limit int) ([]paygate.StoredCard, error) {
	return collectStoredCards(s.pool.Query(ctx, `
		SELECT `+storedCardColumns+` FROM stored_cards
		WHERE key_id IS NOT NULL AND key_id <> $1 AND id > $2
		ORDER BY id LIMIT $3`,
		keyID, after, nullLimit(limit)))
}

// rewrapStoredCardInUnit replaces the seal of a card still sealed under
// @from_key_id (StoredCardRewrap), and fails the unit through unit_refused
// otherwise: PG409 when the card changed meanwhile, PG404 when no card has
// the id.
const rewrapStoredCardInUnit = `
	WITH moved AS (
		UPDATE stored_cards SET key_id = @key_id, wrapped_key = @wrapped_key, ciphertext = @ciphertext,
			fingerprint = @fingerprint, updated_at = @at
		WHERE id = @id AND key_id = @from_key_id AND state <> 'deleted'
		RETURNING id
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM moved) THEN true
		ELSE unit_refused(EXISTS (SELECT 1 FROM stored_cards WHERE id = @id)) END`

// rewrapArgs returns the arguments of rewrapStoredCardInUnit.
func rewrapArgs(r paygate.StoredCardRewrap) namedArgs {
	return namedArgs{
		"id": r.ID, "from_key_id": r.FromKeyID, "key_id": r.To.KeyID, "wrapped_key": r.To.WrappedKey,
		"ciphertext": r.To.Ciphertext, "fingerprint": r.To.Fingerprint, "at": r.At,
	}
}

// StoredCardKeyIDs counts the cards that are not deleted by key id.
func (s *Store) StoredCardKeyIDs(ctx context.Context) (map[string]int, error) {
	return s.countsByKeyID(ctx, `SELECT key_id, count(*) FROM stored_cards WHERE key_id IS NOT NULL GROUP BY key_id`)
}

// countsByKeyID reads a query of (key id, count) rows into a map.
func (s *Store) countsByKeyID(ctx context.Context, query string) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, query)
	if err != nil {
		return nil, translate(err)
	}
	out := map[string]int{}
	var (
		id string
		n  int
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error { out[id] = n; return nil })
	if err != nil {
		return nil, translate(err)
	}
	return out, nil
}
