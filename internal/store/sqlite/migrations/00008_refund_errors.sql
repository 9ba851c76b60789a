-- Why a failed refund failed (issue 17, decisions §15): error_code
-- (PROVIDER_ERROR) and error_message, both NULL on refunds that did not
-- fail. The message is shown to merchants: it never holds card data (the
-- refund worker masks long digit runs in a provider's reason).
--
-- Refunds that failed before this version get PROVIDER_ERROR and their
-- recorded reason as the message when it holds no digit at all (so no card
-- number can be copied into a field merchants see), else a generic message.

-- +goose Up
ALTER TABLE refunds ADD COLUMN error_code TEXT;
ALTER TABLE refunds ADD COLUMN error_message TEXT;
UPDATE refunds SET
    error_code = 'PROVIDER_ERROR',
    error_message = CASE
        WHEN failure_reason <> '' AND failure_reason NOT GLOB '*[0-9]*' THEN failure_reason
        ELSE 'The refund failed at the payment provider.'
    END
WHERE status = 'failed' AND error_code IS NULL;
