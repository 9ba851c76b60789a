package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

const storedCardColumns = `id, merchant_id, mode, customer_id, state, payment_id, brand, last4, exp_month, exp_year,
	holder_name, key_id, wrapped_key, ciphertext, fingerprint, created_at, updated_at, deleted_at`

func scanStoredCard(row scanner) (paygate.StoredCard, error) {
	var (
		c                paygate.StoredCard
		mode, state      string
		keyID, fp        sql.NullString
		created, updated int64
		deleted          sql.NullInt64
	)
	err := row.Scan(&c.ID, &c.MerchantID, &mode, &c.CustomerID, &state, &c.PaymentID, &c.Brand, &c.Last4,
		&c.ExpMonth, &c.ExpYear, &c.HolderName, &keyID, &c.Sealed.WrappedKey, &c.Sealed.Ciphertext, &fp,
		&created, &updated, &deleted)
	if err != nil {
		return paygate.StoredCard{}, err
	}
	c.Mode, c.State = paygate.Mode(mode), paygate.StoredCardState(state)
	c.Sealed.KeyID, c.Sealed.Fingerprint = keyID.String, fp.String
	c.CreatedAt, c.UpdatedAt, c.DeletedAt = fromMicros(created), fromMicros(updated), fromNullMicros(deleted)
	return c, nil
}

func queryStoredCards(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]paygate.StoredCard, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cards := []paygate.StoredCard{}
	for rows.Next() {
		c, err := scanStoredCard(rows)
		if err != nil {
			return nil, err
		}
		cards = append(cards, c)
	}
	return cards, rows.Err()
}

// activeByFingerprint returns the customer's active card whose fingerprint
// is one of match; ok is false when there is none.
func activeByFingerprint(ctx context.Context, tx *sql.Tx, merchantID string, mode paygate.Mode, customerID string, match []string) (paygate.StoredCard, bool, error) {
	if len(match) == 0 {
		return paygate.StoredCard{}, false, nil
	}
	list, err := json.Marshal(match)
	if err != nil {
		return paygate.StoredCard{}, false, fmt.Errorf("sqlite: encode fingerprints: %w", err)
	}
	c, err := scanStoredCard(tx.QueryRowContext(ctx, `
		SELECT `+storedCardColumns+` FROM stored_cards
		WHERE merchant_id = ? AND mode = ? AND customer_id = ? AND state = 'active'
			AND fingerprint IN (SELECT value FROM json_each(?))
		ORDER BY created_at, rowid LIMIT 1`,
		merchantID, string(mode), customerID, string(list)))
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.StoredCard{}, false, nil
	}
	return c, err == nil, err
}

// linkPayment sets the payment's stored card, for a payment of the card's
// customer in its merchant and mode; NOT_FOUND otherwise.
func linkPayment(ctx context.Context, tx *sql.Tx, c paygate.StoredCard, paymentID string) error {
	res, err := tx.ExecContext(ctx, `
		UPDATE payments SET stored_card_id = ?
		WHERE id = ? AND merchant_id = ? AND mode = ? AND customer_id = ?`,
		c.ID, paymentID, c.MerchantID, string(c.Mode), c.CustomerID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return notFound("payment")
	}
	return nil
}

// SaveStoredCard stores an active or pending card; see paygate.VaultStore.
func (s *Store) SaveStoredCard(ctx context.Context, c paygate.StoredCard, match []string) (paygate.StoredCard, bool, error) {
	if c.State != paygate.StoredCardActive && c.State != paygate.StoredCardPending {
		return paygate.StoredCard{}, false, fmt.Errorf("sqlite: save a stored card in state %q", c.State)
	}
	var (
		saved   paygate.StoredCard
		created bool
	)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM customers WHERE id = ? AND merchant_id = ? AND mode = ?`,
			c.CustomerID, c.MerchantID, string(c.Mode)).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
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
		// The write lock is held since BEGIN IMMEDIATE: no concurrent save
		// can slip in between the lookup and the insert.
		saved, err = scanStoredCard(tx.QueryRowContext(ctx, `
			INSERT INTO stored_cards (`+storedCardColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)
			RETURNING `+storedCardColumns,
			c.ID, c.MerchantID, string(c.Mode), c.CustomerID, string(c.State), c.PaymentID, c.Brand, c.Last4,
			c.ExpMonth, c.ExpYear, c.HolderName, c.Sealed.KeyID, c.Sealed.WrappedKey, c.Sealed.Ciphertext,
			c.Sealed.Fingerprint, micros(c.CreatedAt), micros(c.UpdatedAt)))
		if err != nil {
			return err
		}
		created = true
		if c.State == paygate.StoredCardActive && c.PaymentID != "" {
			return linkPayment(ctx, tx, saved, c.PaymentID)
		}
		return nil
	})
	if err != nil {
		return paygate.StoredCard{}, false, err
	}
	return saved, created, nil
}

// ActivatePendingCard activates the payment's pending card, or links the
// payment to the customer's active card of the same number; see
// paygate.VaultStore.
func (s *Store) ActivatePendingCard(ctx context.Context, merchantID string, mode paygate.Mode, paymentID string, at time.Time) (paygate.StoredCard, error) {
	var out paygate.StoredCard
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		pending, err := scanStoredCard(tx.QueryRowContext(ctx, `
			SELECT `+storedCardColumns+` FROM stored_cards
			WHERE payment_id = ? AND merchant_id = ? AND mode = ? AND state = 'pending'`,
			paymentID, merchantID, string(mode)))
		if errors.Is(err, sql.ErrNoRows) {
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
			if _, err := tx.ExecContext(ctx, `UPDATE stored_cards SET `+eraseCard+` WHERE id = ?2`, micros(at), pending.ID); err != nil {
				return err
			}
			out = existing
		} else {
			out, err = scanStoredCard(tx.QueryRowContext(ctx, `
				UPDATE stored_cards SET state = 'active', updated_at = ? WHERE id = ?
				RETURNING `+storedCardColumns, micros(at), pending.ID))
			if err != nil {
				return err
			}
		}
		return linkPayment(ctx, tx, out, paymentID)
	})
	return out, err
}

// eraseCard is the SET clause that deletes a card at ?1: the sealed number,
// its wrapped key, key id and fingerprint are erased, the summary stays.
const eraseCard = `state = 'deleted', key_id = NULL, wrapped_key = NULL, ciphertext = NULL,
	fingerprint = NULL, deleted_at = ?1, updated_at = ?1`

// DiscardPendingCard erases the payment's pending card, if any.
func (s *Store) DiscardPendingCard(ctx context.Context, merchantID string, mode paygate.Mode, paymentID string, at time.Time) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `
			UPDATE stored_cards SET `+eraseCard+`
			WHERE payment_id = ?2 AND merchant_id = ?3 AND mode = ?4 AND state = 'pending'`,
			micros(at), paymentID, merchantID, string(mode))
		return err
	})
}

// StoredCardByID returns an active card of the customer, or NOT_FOUND.
func (s *Store) StoredCardByID(ctx context.Context, merchantID string, mode paygate.Mode, customerID, id string) (paygate.StoredCard, error) {
	c, err := scanStoredCard(s.read.QueryRowContext(ctx, `
		SELECT `+storedCardColumns+` FROM stored_cards
		WHERE id = ? AND merchant_id = ? AND mode = ? AND customer_id = ? AND state = 'active'`,
		id, merchantID, string(mode), customerID))
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.StoredCard{}, notFound("stored card")
	}
	return c, translate(err)
}

// StoredCardByCustomerRef returns an active card of the customer of the
// external id, or NOT_FOUND.
func (s *Store) StoredCardByCustomerRef(ctx context.Context, merchantID string, mode paygate.Mode, customerExternalID, id string) (paygate.StoredCard, error) {
	c, err := scanStoredCard(s.read.QueryRowContext(ctx, `
		SELECT `+storedCardColumns+` FROM stored_cards
		WHERE id = ? AND merchant_id = ? AND mode = ? AND state = 'active'
			AND customer_id = (SELECT id FROM customers WHERE merchant_id = ? AND mode = ? AND external_id = ?)`,
		id, merchantID, string(mode), merchantID, string(mode), customerExternalID))
	if errors.Is(err, sql.ErrNoRows) {
		return paygate.StoredCard{}, notFound("stored card")
	}
	return c, translate(err)
}

// StoredCardsByCustomer lists the customer's active cards, newest first, or
// NOT_FOUND when the customer does not exist for (merchant, mode).
func (s *Store) StoredCardsByCustomer(ctx context.Context, merchantID string, mode paygate.Mode, customerID string) ([]paygate.StoredCard, error) {
	var cards []paygate.StoredCard
	err := s.inReadTx(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM customers WHERE id = ? AND merchant_id = ? AND mode = ?`,
			customerID, merchantID, string(mode)).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("customer")
		}
		if err != nil {
			return err
		}
		cards, err = queryStoredCards(ctx, tx, `
			SELECT `+storedCardColumns+` FROM stored_cards
			WHERE customer_id = ? AND merchant_id = ? AND mode = ? AND state = 'active'
			ORDER BY created_at DESC, rowid DESC`,
			customerID, merchantID, string(mode))
		return err
	})
	return cards, err
}

// DeleteStoredCard deletes an active card of the customer and erases its
// sealed number; NOT_FOUND when there is none.
func (s *Store) DeleteStoredCard(ctx context.Context, merchantID string, mode paygate.Mode, customerID, id string, at time.Time) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `
			UPDATE stored_cards SET `+eraseCard+`
			WHERE id = ?2 AND merchant_id = ?3 AND mode = ?4 AND customer_id = ?5 AND state = 'active'`,
			micros(at), id, merchantID, string(mode), customerID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return notFound("stored card")
		}
		return nil
	})
}

// StoredCardsToRewrap returns cards not sealed under keyID, after the id,
// in id order.
func (s *Store) StoredCardsToRewrap(ctx context.Context, keyID, after string, limit int) ([]paygate.StoredCard, error) {
	var cards []paygate.StoredCard
	err := s.inReadTx(ctx, func(tx *sql.Tx) error {
		var err error
		cards, err = queryStoredCards(ctx, tx, `
			SELECT `+storedCardColumns+` FROM stored_cards
			WHERE key_id IS NOT NULL AND key_id <> ? AND id > ?
			ORDER BY id LIMIT ?`,
			keyID, after, sqlLimit(limit))
		return err
	})
	return cards, err
}

// RewrapStoredCard replaces the seal of a card still sealed under
// fromKeyID.
func (s *Store) RewrapStoredCard(ctx context.Context, id, fromKeyID string, to paygate.SealedCard, at time.Time) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `
			UPDATE stored_cards SET key_id = ?, wrapped_key = ?, ciphertext = ?, fingerprint = ?, updated_at = ?
			WHERE id = ? AND key_id = ? AND state <> 'deleted'`,
			to.KeyID, to.WrappedKey, to.Ciphertext, to.Fingerprint, micros(at), id, fromKeyID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n > 0 {
			return nil
		}
		var one int
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM stored_cards WHERE id = ?`, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("stored card")
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("%w: stored card %s", paygate.ErrStateConflict, id)
	})
}

// StoredCardKeyIDs counts the cards that are not deleted by key id.
func (s *Store) StoredCardKeyIDs(ctx context.Context) (map[string]int, error) {
	return s.countsByKeyID(ctx, `SELECT key_id, count(*) FROM stored_cards WHERE key_id IS NOT NULL GROUP BY key_id`)
}

// countsByKeyID reads a query of (key id, count) rows into a map.
func (s *Store) countsByKeyID(ctx context.Context, query string) (map[string]int, error) {
	rows, err := s.read.QueryContext(ctx, query)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var (
			id string
			n  int
		)
		if err := rows.Scan(&id, &n); err != nil {
			return nil, translate(err)
		}
		out[id] = n
	}
	return out, translate(rows.Err())
}
