-- Units of work (issue 19): a refund inserted by a unit is checked against
-- its payment in its statement, and a refusal must fail the whole unit
-- (see 00011). unit_refused says only "another state" or "no row"; a
-- refund is also refused as an invalid request naming the field at fault
-- (transactionId, currency, amount). This function raises the store's own
-- SQLSTATE PG400 with the field as the error's column and the message for
-- the merchant. It returns only by raising.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION unit_invalid(param text, message text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	RAISE EXCEPTION USING ERRCODE = 'PG400', MESSAGE = message, COLUMN = param;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION unit_invalid(text, text);
