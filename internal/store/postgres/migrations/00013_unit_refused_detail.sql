-- Units of work (issue 19): the webhook operations of a unit are refused
-- like a transition (see 00011), PG409 or PG404, but their callers are told
-- more than "another state" or "no row": which row is missing (an event, an
-- endpoint, a merchant) and since when an endpoint is disabled. This
-- function raises the same SQLSTATEs as unit_refused with that as the
-- error's detail (never NULL: "" when none), which the store reads back.
-- It returns only by raising.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION unit_refused_detail(row_exists boolean, detail text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	IF row_exists THEN
		RAISE EXCEPTION 'a write of the unit found its row in another state'
			USING ERRCODE = 'PG409', DETAIL = coalesce(detail, '');
	END IF;
	RAISE EXCEPTION 'a write of the unit found no row' USING ERRCODE = 'PG404', DETAIL = coalesce(detail, '');
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION unit_refused_detail(boolean, text);
