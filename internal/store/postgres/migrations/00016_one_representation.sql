-- One representation for both engines (issue 19): the optional text
-- columns of payments and refunds are NOT NULL DEFAULT '' as on SQLite, so that one row
-- mapping (internal/store/codec) reads both. Existing NULLs become ''.
-- payments_merchant_ref_idx loses its predicate: "merchant_ref IS NOT
-- NULL" would now hold for every row, and a predicate on '' could not be
-- proven by a lookup with a parameter, so the planner could not use it.

-- +goose Up
UPDATE payments SET
    provider_id = COALESCE(provider_id, ''),
    provider_ref = COALESCE(provider_ref, ''),
    stored_card_id = COALESCE(stored_card_id, ''),
    merchant_ref = COALESCE(merchant_ref, ''),
    error_code = COALESCE(error_code, ''),
    error_message = COALESCE(error_message, ''),
    decline_code = COALESCE(decline_code, ''),
    return_url = COALESCE(return_url, ''),
    device_fingerprint = COALESCE(device_fingerprint, ''),
    idempotency_key = COALESCE(idempotency_key, '')
WHERE provider_id IS NULL OR provider_ref IS NULL OR stored_card_id IS NULL OR merchant_ref IS NULL
    OR error_code IS NULL OR error_message IS NULL OR decline_code IS NULL OR return_url IS NULL
    OR device_fingerprint IS NULL OR idempotency_key IS NULL;
ALTER TABLE payments
    ALTER COLUMN provider_id SET DEFAULT '', ALTER COLUMN provider_id SET NOT NULL,
    ALTER COLUMN provider_ref SET DEFAULT '', ALTER COLUMN provider_ref SET NOT NULL,
    ALTER COLUMN stored_card_id SET DEFAULT '', ALTER COLUMN stored_card_id SET NOT NULL,
    ALTER COLUMN merchant_ref SET DEFAULT '', ALTER COLUMN merchant_ref SET NOT NULL,
    ALTER COLUMN error_code SET DEFAULT '', ALTER COLUMN error_code SET NOT NULL,
    ALTER COLUMN error_message SET DEFAULT '', ALTER COLUMN error_message SET NOT NULL,
    ALTER COLUMN decline_code SET DEFAULT '', ALTER COLUMN decline_code SET NOT NULL,
    ALTER COLUMN return_url SET DEFAULT '', ALTER COLUMN return_url SET NOT NULL,
    ALTER COLUMN device_fingerprint SET DEFAULT '', ALTER COLUMN device_fingerprint SET NOT NULL,
    ALTER COLUMN idempotency_key SET DEFAULT '', ALTER COLUMN idempotency_key SET NOT NULL;
DROP INDEX payments_merchant_ref_idx;
CREATE INDEX payments_merchant_ref_idx ON payments (merchant_id, mode, merchant_ref, created_at DESC, id DESC);

UPDATE refunds SET
    reason = COALESCE(reason, ''),
    provider_id = COALESCE(provider_id, ''),
    provider_ref = COALESCE(provider_ref, ''),
    failure_reason = COALESCE(failure_reason, ''),
    error_code = COALESCE(error_code, ''),
    error_message = COALESCE(error_message, '')
WHERE reason IS NULL OR provider_id IS NULL OR provider_ref IS NULL OR failure_reason IS NULL
    OR error_code IS NULL OR error_message IS NULL;
ALTER TABLE refunds
    ALTER COLUMN reason SET DEFAULT '', ALTER COLUMN reason SET NOT NULL,
    ALTER COLUMN provider_id SET DEFAULT '', ALTER COLUMN provider_id SET NOT NULL,
    ALTER COLUMN provider_ref SET DEFAULT '', ALTER COLUMN provider_ref SET NOT NULL,
    ALTER COLUMN failure_reason SET DEFAULT '', ALTER COLUMN failure_reason SET NOT NULL,
    ALTER COLUMN error_code SET DEFAULT '', ALTER COLUMN error_code SET NOT NULL,
    ALTER COLUMN error_message SET DEFAULT '', ALTER COLUMN error_message SET NOT NULL;

-- +goose Down
ALTER TABLE refunds
    ALTER COLUMN reason DROP NOT NULL, ALTER COLUMN reason DROP DEFAULT,
    ALTER COLUMN provider_id DROP NOT NULL, ALTER COLUMN provider_id DROP DEFAULT,
    ALTER COLUMN provider_ref DROP NOT NULL, ALTER COLUMN provider_ref DROP DEFAULT,
    ALTER COLUMN failure_reason DROP NOT NULL, ALTER COLUMN failure_reason DROP DEFAULT,
    ALTER COLUMN error_code DROP NOT NULL, ALTER COLUMN error_code DROP DEFAULT,
    ALTER COLUMN error_message DROP NOT NULL, ALTER COLUMN error_message DROP DEFAULT;
DROP INDEX payments_merchant_ref_idx;
CREATE INDEX payments_merchant_ref_idx ON payments (merchant_id, mode, merchant_ref, created_at DESC, id DESC)
    WHERE merchant_ref IS NOT NULL;
ALTER TABLE payments
    ALTER COLUMN provider_id DROP NOT NULL, ALTER COLUMN provider_id DROP DEFAULT,
    ALTER COLUMN provider_ref DROP NOT NULL, ALTER COLUMN provider_ref DROP DEFAULT,
    ALTER COLUMN stored_card_id DROP NOT NULL, ALTER COLUMN stored_card_id DROP DEFAULT,
    ALTER COLUMN merchant_ref DROP NOT NULL, ALTER COLUMN merchant_ref DROP DEFAULT,
    ALTER COLUMN error_code DROP NOT NULL, ALTER COLUMN error_code DROP DEFAULT,
    ALTER COLUMN error_message DROP NOT NULL, ALTER COLUMN error_message DROP DEFAULT,
    ALTER COLUMN decline_code DROP NOT NULL, ALTER COLUMN decline_code DROP DEFAULT,
    ALTER COLUMN return_url DROP NOT NULL, ALTER COLUMN return_url DROP DEFAULT,
    ALTER COLUMN device_fingerprint DROP NOT NULL, ALTER COLUMN device_fingerprint DROP DEFAULT,
    ALTER COLUMN idempotency_key DROP NOT NULL, ALTER COLUMN idempotency_key DROP DEFAULT;
-- The releases before this one read NULL as "none" (a created payment with
-- a provider_id is one whose request was answered, for recovery): give
-- them their NULLs back.
UPDATE refunds SET
    reason = NULLIF(reason, ''),
    provider_id = NULLIF(provider_id, ''),
    provider_ref = NULLIF(provider_ref, ''),
    failure_reason = NULLIF(failure_reason, ''),
    error_code = NULLIF(error_code, ''),
    error_message = NULLIF(error_message, '');
UPDATE payments SET
    provider_id = NULLIF(provider_id, ''),
    provider_ref = NULLIF(provider_ref, ''),
    stored_card_id = NULLIF(stored_card_id, ''),
    merchant_ref = NULLIF(merchant_ref, ''),
    error_code = NULLIF(error_code, ''),
    error_message = NULLIF(error_message, ''),
    decline_code = NULLIF(decline_code, ''),
    return_url = NULLIF(return_url, ''),
    device_fingerprint = NULLIF(device_fingerprint, ''),
    idempotency_key = NULLIF(idempotency_key, '');
