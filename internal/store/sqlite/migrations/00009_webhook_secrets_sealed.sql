-- Webhook signing secrets encrypted at rest (issue 17): the vault's seal of
-- the current and the previous secret (AES-256-GCM under a key derived from
-- the vault master key, bound to the merchant, mode and purpose; the sealing
-- key's id is part of the seal). The plain columns secret and previous_secret
-- stay in the schema (migrations only add) but hold '' once a row is
-- converted: the migration cannot know the vault key, so every program that
-- opens the store with the vault seals the remaining plain secrets at
-- startup, and readers accept an unconverted row meanwhile.

-- +goose Up
ALTER TABLE webhook_endpoints ADD COLUMN secret_sealed BLOB;
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_sealed BLOB;

-- +goose Down
ALTER TABLE webhook_endpoints DROP COLUMN previous_secret_sealed;
ALTER TABLE webhook_endpoints DROP COLUMN secret_sealed;
