-- Units of work (issue 19): a store's Commit sends a unit's statements in
-- one pipelined batch, which PostgreSQL runs as one implicit transaction.
-- A conditional write that does not apply (a payment transition whose
-- payment is in another state, or missing) must fail the whole unit, so
-- its statement raises an error, through this function, which rolls back
-- every statement of the batch, before and after it. The SQLSTATEs are the
-- store's own: PG409 (the row is in another state) and PG404 (no such
-- row). The function returns only by raising; its boolean type lets a
-- statement call it in a CASE beside a value.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION unit_refused(row_exists boolean) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	IF row_exists THEN
		RAISE EXCEPTION 'a write of the unit found its row in another state' USING ERRCODE = 'PG409';
	END IF;
	RAISE EXCEPTION 'a write of the unit found no row' USING ERRCODE = 'PG404';
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION unit_refused(boolean);
