-- Operator fixes of issue 17 (decisions.md section 15).
--
-- api_keys.successor_id names the key that replaced a rotated key. A key
-- with a successor cannot be rotated again: the rotation is a conditional
-- update "WHERE successor_id IS NULL", so two concurrent rotations of one
-- key cannot both succeed. Keys rotated before this migration have none.
--
-- webhook_attempts.private_address records whether the address an attempt
-- connected to was loopback, private, link-local, multicast or unspecified
-- (1) or not (0); NULL when unknown (no connection, or recorded before this
-- migration, when the URL's host is judged instead). With the address guard
-- on, the answer of such an attempt is never shown.

-- +goose Up
ALTER TABLE api_keys ADD COLUMN successor_id TEXT;
ALTER TABLE webhook_attempts ADD COLUMN private_address INTEGER;

-- +goose Down
ALTER TABLE webhook_attempts DROP COLUMN private_address;
ALTER TABLE api_keys DROP COLUMN successor_id;
