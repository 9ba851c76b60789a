-- The operator's approval rate override of a sandbox provider (decisions.md
-- section 21, `paygate providers set-approval`), kept with the provider's
-- drain state so that the watcher every node runs reads both in its one
-- poll. NULL: no override, the configuration's sandbox.approvalRate.

-- +goose Up
ALTER TABLE provider_states ADD COLUMN approval_rate double precision
    CHECK (approval_rate >= 0 AND approval_rate <= 1);
ALTER TABLE provider_states ADD COLUMN approval_at timestamptz;

-- +goose Down
ALTER TABLE provider_states DROP COLUMN approval_at;
ALTER TABLE provider_states DROP COLUMN approval_rate;
