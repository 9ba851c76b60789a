package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/paygate/paygate/internal/paygate"
)

const storedCardColumns = `id, merchant_id, mode, customer_id, state, payment_id, brand, last4, exp_month, exp_year,
	holder_name, key_id, wrapped_key, ciphertext, fingerprint, created_at, updated_at, deleted_at`

// eraseCard is the SET clause that deletes a card at @at: the sealed
// number, its wrapped key, key id and fingerprint are erased, the summary
// stays.
const eraseCard = `state = 'deleted', key_id = NULL, wrapped_key = NULL, ciphertext = NULL,
	fingerprint = NULL, deleted_at = @at, updated_at = @at`

func scanStoredCard(row pgx.Row) (paygate.StoredCard, error) {
	var (
		c                    paygate.StoredCard
		paymentID, keyID, fp pgtype.Text
		mode, state          string
		wrapped, ciphertext  []byte
		created, updated     time.Time
		deleted              *time.Time
	)
	err := row.Scan(&c.ID, &c.MerchantID, &mode, &c.CustomerID, &state, &paymentID, &c.Brand, &c.Last4,
		&c.ExpMonth, &c.ExpYear, &c.HolderName, &keyID, &wrapped, &ciphertext, &fp, &created, &updated, &deleted)
	if err != nil {
		return paygate.StoredCard{}, err
	}
	c.Mode, c.State, c.PaymentID = paygate.Mode(mode), paygate.StoredCardState(state), paymentID.String
	c.Sealed = paygate.SealedCard{KeyID: keyID.String, WrappedKey: wrapped, Ciphertext: ciphertext, Fingerprint: fp.String}
	c.CreatedAt, c.UpdatedAt, c.DeletedAt = created, updated, deleted
	return c, nil
}

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

// inVaultTx runs fn in a short transaction (several statements whose
// writes depend on each other's reads), and commits when fn returns nil.
func (s *Store) inVaultTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return translate(pgx.BeginFunc(ctx, s.pool, fn))
}

// activeByFingerprint returns the customer's active card whose fingerprint
// is one of match; ok is false when there is none.
func activeByFingerprint(ctx context.Context, tx pgx.Tx, merchantID string, mode paygate.Mode, customerID string, match []string) (paygate.StoredCard, bool, error) {
	if len(match) == 0 {
		return paygate.StoredCard{}, false, nil
	}
	c, err := scanStoredCard(tx.QueryRow(ctx, `
		SELECT `+storedCardColumns+` FROM stored_cards
		WHERE merchant_id = $1 AND mode = $2 AND customer_id = $3 AND state = 'active' AND fingerprint = ANY($4::text[])
		ORDER BY created_at, seq LIMIT 1`,
		merchantID, mode, customerID, match))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.StoredCard{}, false, nil
	}
	return c, err == nil, err
}

// linkPayment sets the payment's stored card, for a payment of the card's
// customer in its merchant and mode; NOT_FOUND otherwise.
func linkPayment(ctx context.Context, tx pgx.Tx, c paygate.StoredCard, paymentID string) error {
	tag, err := tx.Exec(ctx, `
		UPDATE payments SET stored_card_id = $1
		WHERE id = $2 AND merchant_id = $3 COLLATE "C" AND mode = $4 COLLATE "C" AND customer_id = $5`,
		c.ID, paymentID, c.MerchantID, c.Mode, c.CustomerID)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return notFound("payment")
	}
	return nil
}

// SaveStoredCard stores an active or pending card; see paygate.VaultStore.
//
// Two concurrent saves of one number for one customer both miss the lookup
// under READ COMMITTED; the unique index on active fingerprints makes the
// later insert fail once the first commits, and the retry finds the first
// card.
func (s *Store) SaveStoredCard(ctx context.Context, c paygate.StoredCard, match []string) (paygate.StoredCard, bool, error) {
	if c.State != paygate.StoredCardActive && c.State != paygate.StoredCardPending {
		return paygate.StoredCard{}, false, fmt.Errorf("postgres: save a stored card in state %q", c.State)
	}
	var err error
	for range 3 {
		var (
			saved   paygate.StoredCard
			created bool
		)
		err = s.inVaultTx(ctx, func(tx pgx.Tx) error {
			var one int
			err := tx.QueryRow(ctx, `SELECT 1 FROM customers WHERE id = $1 AND merchant_id = $2 COLLATE "C" AND mode = $3 COLLATE "C"`,
				c.CustomerID, c.MerchantID, c.Mode).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound("customer")
			}
			if err != nil {
				return err
			}
			if c.State == paygate.StoredCardActive {
				existing, ok, err := activeByFingerprint(ctx, tx, c.MerchantID, c.Mode, c.CustomerID, match)
				if err != nil {
					return err
				}
				if ok {
					saved = existing
					if c.PaymentID != "" {
						return linkPayment(ctx, tx, existing, c.PaymentID)
					}
					return nil
				}
			}
			saved, err = scanStoredCard(tx.QueryRow(ctx, `
				INSERT INTO stored_cards (id, merchant_id, mode, customer_id, state, payment_id, brand, last4,
					exp_month, exp_year, holder_name, key_id, wrapped_key, ciphertext, fingerprint, created_at, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
				RETURNING `+storedCardColumns,
				c.ID, c.MerchantID, c.Mode, c.CustomerID, c.State, nullText(c.PaymentID), c.Brand, c.Last4,
				c.ExpMonth, c.ExpYear, c.HolderName, c.Sealed.KeyID, c.Sealed.WrappedKey, c.Sealed.Ciphertext,
				c.Sealed.Fingerprint, c.CreatedAt, c.UpdatedAt))
			if err != nil {
				return err
			}
			created = true
			if c.State == paygate.StoredCardActive && c.PaymentID != "" {
				return linkPayment(ctx, tx, saved, c.PaymentID)
			}
			return nil
		})
		if err == nil {
			return saved, created, nil
		}
		if !errors.Is(err, paygate.ErrConflict) {
			break
		}
	}
	return paygate.StoredCard{}, false, err
}

// ActivatePendingCard activates the payment's pending card, or links the
// payment to the customer's active card of the same number; see
// paygate.VaultStore.
func (s *Store) ActivatePendingCard(ctx context.Context, merchantID string, mode paygate.Mode, paymentID string, at time.Time) (paygate.StoredCard, error) {
	var out paygate.StoredCard
	err := s.inVaultTx(ctx, func(tx pgx.Tx) error {
		pending, err := scanStoredCard(tx.QueryRow(ctx, `
			SELECT `+storedCardColumns+` FROM stored_cards
			WHERE payment_id = $1 AND merchant_id = $2 AND mode = $3 AND state = 'pending'
			FOR UPDATE`,
			paymentID, merchantID, mode))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("pending stored card")
		}
		if err != nil {
			return err
		}
		existing, ok, err := activeByFingerprint(ctx, tx, merchantID, mode, pending.CustomerID, []string{pending.Sealed.Fingerprint})
		if err != nil {
			return err
		}
		if ok {
			if _, err := tx.Exec(ctx, `UPDATE stored_cards SET `+eraseCard+` WHERE id = @id`,
				namedArgs{"id": pending.ID, "at": at}); err != nil {
				return err
			}
			out = existing
		} else {
			out, err = scanStoredCard(tx.QueryRow(ctx, `
				UPDATE stored_cards SET state = 'active', updated_at = $1 WHERE id = $2
				RETURNING `+storedCardColumns, at, pending.ID))
			if err != nil {
				return err
			}
		}
		return linkPayment(ctx, tx, out, paymentID)
	})
	return out, err
}

// DiscardPendingCard erases the payment's pending card, if any.
func (s *Store) DiscardPendingCard(ctx context.Context, merchantID string, mode paygate.Mode, paymentID string, at time.Time) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE stored_cards SET `+eraseCard+`
		WHERE payment_id = @payment_id AND merchant_id = @merchant_id AND mode = @mode AND state = 'pending'`,
		namedArgs{"payment_id": paymentID, "merchant_id": merchantID, "mode": mode, "at": at})
	return translate(err)
}

// StoredCardByID returns an active card of the customer, or NOT_FOUND.
func (s *Store) StoredCardByID(ctx context.Context, merchantID string, mode paygate.Mode, customerID, id string) (paygate.StoredCard, error) {
	c, err := scanStoredCard(s.pool.QueryRow(ctx, `
		SELECT `+storedCardColumns+` FROM stored_cards
		WHERE id = $1 AND merchant_id = $2 AND mode = $3 AND customer_id = $4 AND state = 'active'`,
		id, merchantID, mode, customerID))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.StoredCard{}, notFound("stored card")
	}
	return c, translate(err)
}

// StoredCardByCustomerRef returns an active card of the customer of the
// external id, or NOT_FOUND.
func (s *Store) StoredCardByCustomerRef(ctx context.Context, merchantID string, mode paygate.Mode, customerExternalID, id string) (paygate.StoredCard, error) {
	c, err := scanStoredCard(s.pool.QueryRow(ctx, `
		SELECT `+storedCardColumns+` FROM stored_cards
		WHERE id = $1 AND merchant_id = $2 AND mode = $3 AND state = 'active'
			AND customer_id = (SELECT id FROM customers WHERE merchant_id = $2 AND mode = $3 AND external_id = $4)`,
		id, merchantID, mode, customerExternalID))
	if errors.Is(err, pgx.ErrNoRows) {
		return paygate.StoredCard{}, notFound("stored card")
	}
	return c, translate(err)
}

// StoredCardsByCustomer lists the customer's active cards, newest first, or
// NOT_FOUND when the customer does not exist for (merchant, mode). Only an
// empty list costs a second query (customers are never deleted, so it
// cannot disagree with the first).
func (s *Store) StoredCardsByCustomer(ctx context.Context, merchantID string, mode paygate.Mode, customerID string) ([]paygate.StoredCard, error) {
	cards, err := collectStoredCards(s.pool.Query(ctx, `
		SELECT `+storedCardColumns+` FROM stored_cards
		WHERE customer_id = $1 AND merchant_id = $2 AND mode = $3 AND state = 'active'
		ORDER BY created_at DESC, seq DESC`,
		customerID, merchantID, mode))
	if err != nil || len(cards) > 0 {
		return cards, err
	}
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM customers WHERE id = $1 AND merchant_id = $2 COLLATE "C" AND mode = $3 COLLATE "C")`,
		customerID, merchantID, mode).Scan(&exists); err != nil {
		return nil, translate(err)
	}
	if !exists {
		return nil, notFound("customer")
	}
	return cards, nil
}

// DeleteStoredCard deletes an active card of the customer and erases its
// sealed number; NOT_FOUND when there is none.
func (s *Store) DeleteStoredCard(ctx context.Context, merchantID string, mode paygate.Mode, customerID, id string, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE stored_cards SET `+eraseCard+`
		WHERE id = @id AND merchant_id = @merchant_id AND mode = @mode AND customer_id = @customer_id AND state = 'active'`,
		namedArgs{"id": id, "merchant_id": merchantID, "mode": mode, "customer_id": customerID, "at": at})
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("stored card")
	}
	return nil
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

// RewrapStoredCard replaces the seal of a card still sealed under
// fromKeyID; the last SELECT tells a changed card from a missing one.
func (s *Store) RewrapStoredCard(ctx context.Context, id, fromKeyID string, to paygate.SealedCard, at time.Time) error {
	var moved, exists bool
	err := s.pool.QueryRow(ctx, `
		WITH moved AS (
			UPDATE stored_cards SET key_id = $3, wrapped_key = $4, ciphertext = $5, fingerprint = $6, updated_at = $7
			WHERE id = $1 AND key_id = $2 AND state <> 'deleted'
			RETURNING id
		)
		SELECT EXISTS (SELECT 1 FROM moved), EXISTS (SELECT 1 FROM stored_cards WHERE id = $1)`,
		id, fromKeyID, to.KeyID, to.WrappedKey, to.Ciphertext, to.Fingerprint, at).Scan(&moved, &exists)
	switch {
	case err != nil:
		return translate(err)
	case moved:
		return nil
	case !exists:
		return notFound("stored card")
	default:
		return fmt.Errorf("%w: stored card %s", paygate.ErrStateConflict, id)
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
