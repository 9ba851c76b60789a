-- The dashboard for teams (issue 22): roles, removal, lockout and TOTP of
-- users, their recovery codes, and invitations. Existing users become
-- owners (they could do everything before roles existed). The TOTP secret
-- is stored only sealed by the vault, recovery codes and invitation tokens
-- only as their SHA-256.

-- +goose Up
ALTER TABLE users
    ADD COLUMN role text NOT NULL DEFAULT 'owner'
        CONSTRAINT users_role_check CHECK (role IN ('owner', 'admin', 'developer', 'analyst')),
    ADD COLUMN disabled_at timestamptz,
    ADD COLUMN locked_until timestamptz,
    ADD COLUMN failed_sign_ins integer NOT NULL DEFAULT 0,
    ADD COLUMN last_sign_in_at timestamptz,
    ADD COLUMN mfa_secret bytea,
    ADD COLUMN mfa_enabled_at timestamptz,
    ADD COLUMN mfa_last_step bigint NOT NULL DEFAULT 0;

CREATE TABLE recovery_codes (
    user_id    text NOT NULL REFERENCES users (id),
    code_hash  bytea NOT NULL,
    created_at timestamptz NOT NULL,
    used_at    timestamptz,
    PRIMARY KEY (user_id, code_hash)
);

CREATE TABLE invitations (
    id          text PRIMARY KEY,
    merchant_id text NOT NULL REFERENCES merchants (id),
    email       text NOT NULL,
    role        text NOT NULL CONSTRAINT invitations_role_check CHECK (role IN ('owner', 'admin', 'developer', 'analyst')),
    token_hash  bytea NOT NULL CONSTRAINT invitations_token_hash_key UNIQUE,
    created_by  text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    accepted_at timestamptz,
    revoked_at  timestamptz
);
CREATE INDEX invitations_merchant_idx ON invitations (merchant_id, created_at DESC, id DESC);

-- +goose Down
DROP TABLE invitations;
DROP TABLE recovery_codes;
ALTER TABLE users
    DROP COLUMN mfa_last_step, DROP COLUMN mfa_enabled_at, DROP COLUMN mfa_secret,
    DROP COLUMN last_sign_in_at, DROP COLUMN failed_sign_ins, DROP COLUMN locked_until,
    DROP COLUMN disabled_at, DROP COLUMN role;
