package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

const storedCardColumns = codec.StoredCardColumns

func scanStoredCard(row scanner) (paygate.StoredCard, error) { return codec.ScanStoredCard(row) }

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

// linkStoredCard sets the payment's stored card (StoredCardLink), for a
// payment of the customer in its merchant and mode and an active card of
// the customer: NOT_FOUND when the payment is not the customer's,
// ErrConflict when the card is not active (SaveStoredCard looks again).
func linkStoredCard(ctx context.Context, tx *sql.Tx, l paygate.StoredCardLink) error {
	res, err := tx.ExecContext(ctx, `
		UPDATE payments SET stored_card_id = ?1
		WHERE id = ?2 AND merchant_id = ?3 AND mode = ?4 AND customer_id = ?5
			AND EXISTS (SELECT 1 FROM stored_cards WHERE id = ?1 AND merchant_id = ?3 AND mode = ?4
				AND customer_id = ?5 AND state = 'active')`,
		l.StoredCardID, l.PaymentID, l.MerchantID, string(l.Mode), l.CustomerID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n > 0 {
		return nil
	}
	var one int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM payments WHERE id = ? AND merchant_id = ? AND mode = ? AND customer_id = ?`,
		l.PaymentID, l.MerchantID, string(l.Mode), l.CustomerID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("payment")
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("sqlite: %w: stored card %s is not an active card of the customer", paygate.ErrConflict, l.StoredCardID)
}

// insertStoredCard inserts the card of a StoredCard operation; NOT_FOUND
// when its customer does not exist for its merchant and mode. A second
// active card of one number for the customer violates
// stored_cards_active_fingerprint: ErrConflict.
func insertStoredCard(ctx context.Context, tx *sql.Tx, c paygate.StoredCard) error {
	res, err := tx.ExecContext(ctx, `
		INSERT INTO stored_cards (`+storedCardColumns+`)
		SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL
		FROM customers WHERE id = ?4 AND merchant_id = ?2 AND mode = ?3`,
		c.ID, c.MerchantID, string(c.Mode), c.CustomerID, string(c.State), c.PaymentID, c.Brand, c.Last4,
		c.ExpMonth, c.ExpYear, c.HolderName, c.Sealed.KeyID, c.Sealed.WrappedKey, c.Sealed.Ciphertext,
		c.Sealed.Fingerprint, micros(c.CreatedAt), micros(c.UpdatedAt))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return notFound("customer")
	}
	return nil
}

// activatePendingCard activates the payment's pending card, or erases it
// and links the payment to the customer's active card of the same number
// (PendingCardActivation); NOT_FOUND when the payment has no pending card.
func activatePendingCard(ctx context.Context, tx *sql.Tx, a paygate.PendingCardActivation) error {
	pending, err := scanStoredCard(tx.QueryRowContext(ctx, `
		SELECT `+storedCardColumns+` FROM stored_cards
		WHERE payment_id = ? AND merchant_id = ? AND mode = ? AND state = 'pending'`,
		a.PaymentID, a.MerchantID, string(a.Mode)))
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("pending stored card")
	}
	if err != nil {
		return err
	}
	existing, ok, err := activeByFingerprint(ctx, tx, a.MerchantID, a.Mode, pending.CustomerID, []string{pending.Sealed.Fingerprint})
	if err != nil {
		return err
	}
	cardID := pending.ID
	if ok {
		if _, err := tx.ExecContext(ctx, `UPDATE stored_cards SET `+eraseCard+` WHERE id = ?2`, micros(a.At), pending.ID); err != nil {
			return err
		}
		cardID = existing.ID
	} else if _, err := tx.ExecContext(ctx, `UPDATE stored_cards SET state = 'active', updated_at = ? WHERE id = ?`,
		micros(a.At), pending.ID); err != nil {
		return err
	}
	return linkStoredCard(ctx, tx, paygate.StoredCardLink{
		PaymentID: a.PaymentID, MerchantID: a.MerchantID, Mode: a.Mode, CustomerID: pending.CustomerID, StoredCardID: cardID,
	})
}

// eraseCard is the SET clause that deletes a card at ?1: the sealed number,
// its wrapped key, key id and fingerprint are erased, the summary stays.
const eraseCard = `state = 'deleted', key_id = NULL, wrapped_key = NULL, ciphertext = NULL,
	fingerprint = NULL, deleted_at = ?1, updated_at = ?1`

// discardPendingCard erases the payment's pending card, if any
// (PendingCardDiscard).
func discardPendingCard(ctx context.Context, tx *sql.Tx, d paygate.PendingCardDiscard) error {
	_, err := tx.ExecContext(ctx, `
		UPDATE stored_cards SET `+eraseCard+`
		WHERE payment_id = ?2 AND merchant_id = ?3 AND mode = ?4 AND state = 'pending'`,
		micros(d.At), d.PaymentID, d.MerchantID, string(d.Mode))
	return err
}

// StoredCards lists the active cards of the query's customer, newest
// first, or NOT_FOUND when the customer does not exist for (merchant,
// mode).
func (s *Store) StoredCards(ctx context.Context, q paygate.StoredCardQuery) ([]paygate.StoredCard, error) {
	var cards []paygate.StoredCard
	err := s.inReadTx(ctx, func(tx *sql.Tx) error {
		customerID := q.CustomerID
		var err error
		if customerID == "" {
			err = tx.QueryRowContext(ctx, `SELECT id FROM customers WHERE merchant_id = ? AND mode = ? AND external_id = ?`,
				q.MerchantID, string(q.Mode), q.CustomerExternalID).Scan(&customerID)
		} else {
			var one int
			err = tx.QueryRowContext(ctx, `SELECT 1 FROM customers WHERE id = ? AND merchant_id = ? AND mode = ?`,
				customerID, q.MerchantID, string(q.Mode)).Scan(&one)
		}
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("customer")
		}
		if err != nil {
			return err
		}
		where := `customer_id = ? AND merchant_id = ? AND mode = ? AND state = 'active'`
		args := []any{customerID, q.MerchantID, string(q.Mode)}
		if q.ID != "" {
			where += ` AND id = ?`
			args = append(args, q.ID)
		}
		if len(q.Fingerprints) > 0 {
			list, err := json.Marshal(q.Fingerprints)
			if err != nil {
				return fmt.Errorf("sqlite: encode fingerprints: %w", err)
			}
			where += ` AND fingerprint IN (SELECT value FROM json_each(?))`
			args = append(args, string(list))
		}
		cards, err = queryStoredCards(ctx, tx, `
			SELECT `+storedCardColumns+` FROM stored_cards WHERE `+where+`
			ORDER BY created_at DESC, rowid DESC`, args...)
		return err
	})
	return cards, err
}

// deleteStoredCard deletes an active card of the customer and erases its
// sealed number (StoredCardDeletion); NOT_FOUND when there is none.
func deleteStoredCard(ctx context.Context, tx *sql.Tx, d paygate.StoredCardDeletion) error {
	res, err := tx.ExecContext(ctx, `
		UPDATE stored_cards SET `+eraseCard+`
		WHERE id = ?2 AND merchant_id = ?3 AND mode = ?4 AND customer_id = ?5 AND state = 'active'`,
		micros(d.At), d.ID, d.MerchantID, string(d.Mode), d.CustomerID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return notFound("stored card")
	}
	return nil
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

// rewrapStoredCard replaces the seal of a card still sealed under
// r.FromKeyID (StoredCardRewrap): ErrStateConflict when the card changed
// meanwhile, NOT_FOUND when no card has the id.
func rewrapStoredCard(ctx context.Context, tx *sql.Tx, r paygate.StoredCardRewrap) error {
	res, err := tx.ExecContext(ctx, `
		UPDATE stored_cards SET key_id = ?, wrapped_key = ?, ciphertext = ?, fingerprint = ?, updated_at = ?
		WHERE id = ? AND key_id = ? AND state <> 'deleted'`,
		r.To.KeyID, r.To.WrappedKey, r.To.Ciphertext, r.To.Fingerprint, micros(r.At), r.ID, r.FromKeyID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n > 0 {
		return nil
	}
	var one int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM stored_cards WHERE id = ?`, r.ID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("stored card")
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: stored card %s", paygate.ErrStateConflict, r.ID)
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
