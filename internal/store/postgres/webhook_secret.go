package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// WebhookSecrets lists the stored secrets of up to limit endpoints after
// (afterMerchant, afterMode), in (merchant id, mode) order.
func (s *Store) WebhookSecrets(ctx context.Context, afterMerchant string, afterMode paygate.Mode, limit int) ([]paygate.WebhookSecrets, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+codec.WebhookSecretsColumns+`
		FROM webhook_endpoints
		WHERE (merchant_id, mode) > ($1::text, $2::text)
		ORDER BY merchant_id, mode
		LIMIT $3`, afterMerchant, string(afterMode), lim)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.WebhookSecrets, error) { return codec.ScanWebhookSecrets(r) })
	return out, translate(err)
}

// replaceSecrets stores the sealed secrets of a WebhookSecretsReplacement,
// and empties the plain columns, if the endpoint's row still holds From's
// values; it fails the unit with unit_refused (PG409) otherwise.
const replaceSecrets = `
	WITH replaced AS (
		UPDATE webhook_endpoints
		SET secret = '', secret_sealed = @to_sealed, previous_secret = '', previous_secret_sealed = @to_previous
		WHERE merchant_id = @merchant_id AND mode = @mode
			AND secret = @secret AND secret_sealed IS NOT DISTINCT FROM @sealed
			AND previous_secret = @previous AND previous_secret_sealed IS NOT DISTINCT FROM @sealed_previous
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM replaced) THEN true ELSE unit_refused(true) END`

// replaceSecretsArgs returns the arguments of replaceSecrets.
func replaceSecretsArgs(r paygate.WebhookSecretsReplacement) namedArgs {
	from, to := r.From, r.To
	return namedArgs{
		"merchant_id": from.MerchantID, "mode": from.Mode,
		"secret": from.Secret, "sealed": nullBytes(from.SealedSecret),
		"previous": from.PreviousSecret, "sealed_previous": nullBytes(from.SealedPreviousSecret),
		"to_sealed": nullBytes(to.SealedSecret), "to_previous": nullBytes(to.SealedPreviousSecret),
	}
}

// replaceRefused names why replaceSecrets refused the unit.
func replaceRefused(r paygate.WebhookSecretsReplacement) func(*pgconn.PgError) error {
	return func(pgErr *pgconn.PgError) error {
		if pgErr.Code != sqlStateConflict {
			return nil
		}
		return fmt.Errorf("%w: the webhook endpoint of merchant %s (%s) changed meanwhile", paygate.ErrStateConflict, r.From.MerchantID, r.From.Mode)
	}
}

// nullBytes is NULL for an empty value, so that an absent seal compares as
// NULL.
func nullBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}
