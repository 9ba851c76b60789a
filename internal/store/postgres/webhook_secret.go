package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/paygate"
)

// WebhookSecrets lists the stored secrets of up to limit endpoints after
// (afterMerchant, afterMode), in (merchant id, mode) order.
func (s *Store) WebhookSecrets(ctx context.Context, afterMerchant string, afterMode paygate.Mode, limit int) ([]paygate.WebhookSecrets, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, `
		SELECT merchant_id, mode, secret, secret_sealed, previous_secret, previous_secret_sealed
		FROM webhook_endpoints
		WHERE (merchant_id, mode) > ($1::text, $2::text)
		ORDER BY merchant_id, mode
		LIMIT $3`, afterMerchant, string(afterMode), lim)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.WebhookSecrets, error) {
		var w paygate.WebhookSecrets
		err := r.Scan(&w.MerchantID, &w.Mode, &w.Secret, &w.SealedSecret, &w.PreviousSecret, &w.SealedPreviousSecret)
		return w, err
	})
	return out, translate(err)
}

// ReplaceWebhookSecrets stores to's sealed secrets, and empties the plain
// columns, if the endpoint's row still holds from's values.
func (s *Store) ReplaceWebhookSecrets(ctx context.Context, from, to paygate.WebhookSecrets) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE webhook_endpoints
		SET secret = '', secret_sealed = @to_sealed, previous_secret = '', previous_secret_sealed = @to_previous
		WHERE merchant_id = @merchant_id AND mode = @mode
			AND secret = @secret AND secret_sealed IS NOT DISTINCT FROM @sealed
			AND previous_secret = @previous AND previous_secret_sealed IS NOT DISTINCT FROM @sealed_previous`,
		namedArgs{
			"merchant_id": from.MerchantID, "mode": from.Mode,
			"secret": from.Secret, "sealed": nullBytes(from.SealedSecret),
			"previous": from.PreviousSecret, "sealed_previous": nullBytes(from.SealedPreviousSecret),
			"to_sealed": nullBytes(to.SealedSecret), "to_previous": nullBytes(to.SealedPreviousSecret),
		})
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: the webhook endpoint of merchant %s (%s) changed meanwhile", paygate.ErrStateConflict, from.MerchantID, from.Mode)
	}
	return nil
}

// WebhookSecretKeyIDs counts the sealed secrets, current and previous, by
// the key id in their seal.
func (s *Store) WebhookSecretKeyIDs(ctx context.Context) (map[string]int, error) {
	return s.countsByKeyID(ctx, `
		SELECT encode(substring(sealed FROM 2 FOR 8), 'hex'), count(*) FROM (
			SELECT secret_sealed AS sealed FROM webhook_endpoints
			UNION ALL
			SELECT previous_secret_sealed FROM webhook_endpoints
		) s
		WHERE length(sealed) >= 9 AND substring(sealed FROM 1 FOR 1) = '\x01'::bytea
		GROUP BY 1`)
}

// nullBytes is NULL for an empty value, so that an absent seal compares as
// NULL.
func nullBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}
