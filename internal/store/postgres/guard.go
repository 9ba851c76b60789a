package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
)

// GuardSettings returns the card-testing guard's settings of (merchant,
// mode): the stored rules and the defaults of the others, in one query.
//
// What was read is kept (guardCache) while a listener hears every change,
// so that a payment usually reads nothing.
func (s *Store) GuardSettings(ctx context.Context, merchantID string, mode paygate.Mode) (paygate.GuardSettings, error) {
	k := guardKey{merchantID, mode}
	cached, ok, gen := s.guard.get(k)
	if ok {
		return cached, nil
	}
	readAt := time.Now()
	rows, err := s.pool.Query(ctx, `SELECT `+codec.GuardColumns+` FROM guard_rules WHERE merchant_id = $1 AND mode = $2`,
		merchantID, string(mode))
	if err != nil {
		return paygate.GuardSettings{}, translate(err)
	}
	stored, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (paygate.GuardRuleSettings, error) { return codec.ScanGuardRule(r) })
	if err != nil {
		return paygate.GuardSettings{}, translate(err)
	}
	set := codec.GuardSettings(merchantID, mode, stored)
	s.guard.put(k, gen, readAt, set)
	return set, nil
}

// notifyGuardChange tells every node's guardCache that the guard's
// settings changed, at the commit of the unit that changes them.
const notifyGuardChange = `SELECT pg_notify('` + guardChannel + `', '')`

// changeGuardInUnit stores one rule's settings (GuardChange), failing the
// unit (PG404) when the merchant does not exist.
const changeGuardInUnit = `
	WITH up AS (
		INSERT INTO guard_rules (merchant_id, mode, rule, enabled, threshold, window_ms, block_ms, updated_at)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8
		WHERE EXISTS (SELECT 1 FROM merchants WHERE id = $1)
		ON CONFLICT (merchant_id, mode, rule) DO UPDATE SET enabled = excluded.enabled,
			threshold = excluded.threshold, window_ms = excluded.window_ms, block_ms = excluded.block_ms,
			updated_at = excluded.updated_at
		RETURNING 1
	)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM up) THEN true ELSE unit_refused(false) END`
