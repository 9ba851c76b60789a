-- One representation for both engines (issue 19), for events and webhooks:
-- SQLite already stored events and webhooks as PostgreSQL now does (event
-- ids NOT NULL DEFAULT '', endpoint events a JSON array, optional times
-- NULL). What PostgreSQL enforces that SQLite did not is that
-- webhook_attempts.private_address is a boolean: its integer may only be 0
-- or 1 (or NULL, not recorded), which codec.ScanAttempt reads. No table
-- references webhook_attempts, so it is rebuilt with that CHECK, every row
-- copied.
--
-- Run a second time, the rebuild alone would succeed again (its end is its
-- start, plus the CHECK), so a second process that starts this migration at
-- the same moment as another would apply it twice (migrate.go). The
-- rebuilt table's key is therefore not a PRIMARY KEY clause, whose index
-- SQLite names after the table and renames with it, but a unique index
-- named webhook_attempts_pkey (PostgreSQL's name for it), which the
-- original table never had: an index of the same name cannot be created
-- twice, so a second run fails there, before copying anything, and its
-- transaction rolls back. For a table with a rowid the two are the same
-- thing: a unique index over NOT NULL columns.

-- +goose Up
CREATE TABLE webhook_attempts_rebuilt (
    delivery_id     TEXT NOT NULL REFERENCES webhook_deliveries (id),
    number          INTEGER NOT NULL,
    url             TEXT NOT NULL,
    started_at      INTEGER NOT NULL,
    status_code     INTEGER NOT NULL,
    latency_us      INTEGER NOT NULL,
    response        BLOB NOT NULL,
    error           TEXT NOT NULL,
    private_address INTEGER CONSTRAINT webhook_attempts_private_address CHECK (private_address IN (0, 1))
) STRICT;
CREATE UNIQUE INDEX webhook_attempts_pkey ON webhook_attempts_rebuilt (delivery_id, number);
INSERT INTO webhook_attempts_rebuilt (delivery_id, number, url, started_at, status_code, latency_us, response,
    error, private_address)
SELECT delivery_id, number, url, started_at, status_code, latency_us, response, error,
    CASE WHEN private_address IS NULL THEN NULL WHEN private_address <> 0 THEN 1 ELSE 0 END
FROM webhook_attempts;
DROP TABLE webhook_attempts;
ALTER TABLE webhook_attempts_rebuilt RENAME TO webhook_attempts;

-- +goose Down
CREATE TABLE webhook_attempts_rebuilt (
    delivery_id     TEXT NOT NULL REFERENCES webhook_deliveries (id),
    number          INTEGER NOT NULL,
    url             TEXT NOT NULL,
    started_at      INTEGER NOT NULL,
    status_code     INTEGER NOT NULL,
    latency_us      INTEGER NOT NULL,
    response        BLOB NOT NULL,
    error           TEXT NOT NULL,
    private_address INTEGER,
    PRIMARY KEY (delivery_id, number)
) STRICT;
INSERT INTO webhook_attempts_rebuilt SELECT delivery_id, number, url, started_at, status_code, latency_us, response,
    error, private_address FROM webhook_attempts;
DROP TABLE webhook_attempts;
ALTER TABLE webhook_attempts_rebuilt RENAME TO webhook_attempts;
