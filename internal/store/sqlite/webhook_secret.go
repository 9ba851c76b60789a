package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// WebhookSecrets lists the stored secrets of up to limit endpoints after
// (afterMerchant, afterMode), in (merchant id, mode) order.
func (s *Store) WebhookSecrets(ctx context.Context, afterMerchant string, afterMode paygate.Mode, limit int) ([]paygate.WebhookSecrets, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.read.QueryContext(ctx, `
		SELECT `+codec.WebhookSecretsColumns+`
		FROM webhook_endpoints
		WHERE (merchant_id, mode) > (?, ?)
		ORDER BY merchant_id, mode
		LIMIT ?`, afterMerchant, string(afterMode), limit)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []paygate.WebhookSecrets
	for rows.Next() {
		w, err := codec.ScanWebhookSecrets(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, w)
	}
	return out, translate(rows.Err())
}

// replaceSecrets stores r.To's sealed secrets in the unit's transaction,
// and empties the plain columns, if the endpoint's row still holds r.From's
// values.
func replaceSecrets(ctx context.Context, tx *sql.Tx, r paygate.WebhookSecretsReplacement) error {
	from, to := r.From, r.To
	res, err := tx.ExecContext(ctx, `
		UPDATE webhook_endpoints
		SET secret = '', secret_sealed = ?7, previous_secret = '', previous_secret_sealed = ?8
		WHERE merchant_id = ?1 AND mode = ?2
			AND secret = ?3 AND secret_sealed IS ?4
			AND previous_secret = ?5 AND previous_secret_sealed IS ?6`,
		from.MerchantID, string(from.Mode), from.Secret, nullBytes(from.SealedSecret),
		from.PreviousSecret, nullBytes(from.SealedPreviousSecret),
		nullBytes(to.SealedSecret), nullBytes(to.SealedPreviousSecret))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("%w: the webhook endpoint of merchant %s (%s) changed meanwhile", paygate.ErrStateConflict, from.MerchantID, from.Mode)
	}
	return nil
}

// nullBytes is NULL for an empty value, so that an absent seal compares
// with IS as NULL.
func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}
