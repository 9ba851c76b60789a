-- The dashboard for teams (issue 22): roles, removal, lockout and TOTP of
-- users, their recovery codes, and invitations. Existing users become
-- owners (they could do everything before roles existed). The TOTP secret
-- is stored only sealed by the vault, recovery codes and invitation tokens
-- only as their SHA-256.

-- +goose Up
ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'owner'
    CHECK (role IN ('owner', 'admin', 'developer', 'analyst'));
ALTER TABLE users ADD COLUMN disabled_at INTEGER;
ALTER TABLE users ADD COLUMN locked_until INTEGER;
ALTER TABLE users ADD COLUMN failed_sign_ins INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN last_sign_in_at INTEGER;
ALTER TABLE users ADD COLUMN mfa_secret BLOB;
ALTER TABLE users ADD COLUMN mfa_enabled_at INTEGER;
ALTER TABLE users ADD COLUMN mfa_last_step INTEGER NOT NULL DEFAULT 0;

CREATE TABLE recovery_codes (
    user_id    TEXT NOT NULL REFERENCES users (id),
    code_hash  BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    used_at    INTEGER,
    PRIMARY KEY (user_id, code_hash)
) STRICT;

CREATE TABLE invitations (
    id          TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    email       TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'analyst')),
    token_hash  BLOB NOT NULL UNIQUE,
    created_by  TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    accepted_at INTEGER,
    revoked_at  INTEGER
) STRICT;
CREATE INDEX invitations_merchant ON invitations (merchant_id, created_at DESC, id DESC);

-- +goose Down
DROP INDEX invitations_merchant;
DROP TABLE invitations;
DROP TABLE recovery_codes;
ALTER TABLE users DROP COLUMN mfa_last_step;
ALTER TABLE users DROP COLUMN mfa_enabled_at;
ALTER TABLE users DROP COLUMN mfa_secret;
ALTER TABLE users DROP COLUMN last_sign_in_at;
ALTER TABLE users DROP COLUMN failed_sign_ins;
ALTER TABLE users DROP COLUMN locked_until;
ALTER TABLE users DROP COLUMN disabled_at;
ALTER TABLE users DROP COLUMN role;
