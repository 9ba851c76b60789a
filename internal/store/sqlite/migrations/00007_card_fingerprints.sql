-- Card data out of reach (decisions §15). Until this release the payments'
-- card fingerprints were an HMAC of the card number under a key kept in this
-- database (instance_secrets 'card-fingerprint-key'), and the fingerprints
-- of idempotent requests were keyed by a key derived from it over bodies that
-- held the card number and CVV: a reader of the database could enumerate a
-- card's middle digits, then its CVV. Both kinds of fingerprint are now keyed
-- by keys derived from the vault's master key, which is never stored here.
--
-- The old ones cannot be recomputed under the new key (nothing here knows
-- the card), so they are dropped: a payment keeps an empty card_fingerprint,
-- and an idempotency record an empty fingerprint, which replays its stored
-- answer for any body (its key is at most 24 hours from expiry anyway). The
-- key itself is deleted. Stored cards' fingerprints were always keyed by the
-- vault and stay. A node of the older release still running would store its
-- key again: every start deletes it (legacy.go), and on SQLite erases it
-- from the file, as it erases what this migration overwrote.

-- +goose Up
-- The file is to be erased (legacy.go) only when there was something to
-- drop: a fresh file, which several processes may be opening at once, is
-- not rebuilt.
INSERT INTO instance_secrets (name, value)
SELECT 'card-fingerprint-key-erase', x'00'
WHERE EXISTS (SELECT 1 FROM instance_secrets WHERE name = 'card-fingerprint-key')
   OR EXISTS (SELECT 1 FROM payments WHERE card_fingerprint <> '')
   OR EXISTS (SELECT 1 FROM idempotency_keys WHERE length(fingerprint) > 0)
ON CONFLICT (name) DO NOTHING;
UPDATE payments SET card_fingerprint = '' WHERE card_fingerprint <> '';
UPDATE idempotency_keys SET fingerprint = x'' WHERE length(fingerprint) > 0;
DELETE FROM instance_secrets WHERE name = 'card-fingerprint-key';

-- +goose Down
SELECT 1;
