-- Units of work (issue 19): an API key rotation in a unit must fail the
-- whole unit when it does not apply (see 00011), and say why: the old key
-- does not exist (PG404), it already has a successor (PG410, the
-- successor's id as the error's detail, for paygate.KeyReplacedError), or
-- it is revoked or expired (PG409). The rotation's conditional UPDATE may
-- have waited for a concurrent rotation of the same key and found it
-- replaced; the statement's own snapshot predates that rotation, so the
-- reason is read here: a VOLATILE function's query takes a new snapshot
-- under READ COMMITTED and sees the successor the other rotation
-- committed. The function returns only by raising.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION unit_rotation_refused(key_id text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	successor text;
BEGIN
	SELECT k.successor_id INTO successor FROM api_keys k WHERE k.id = key_id;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'a write of the unit found no row' USING ERRCODE = 'PG404';
	END IF;
	IF successor IS NOT NULL THEN
		RAISE EXCEPTION 'the API key already has a successor' USING ERRCODE = 'PG410', DETAIL = successor;
	END IF;
	RAISE EXCEPTION 'a write of the unit found its row in another state' USING ERRCODE = 'PG409';
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION unit_rotation_refused(text);
