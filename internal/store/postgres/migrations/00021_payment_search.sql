-- The dashboard's payment search (issue 22): payments by the last four
-- digits of their card, in list order behind merchant and mode, so that a
-- search by last 4 is a range of this index and not a walk of every payment
-- of the merchant. Search by payment id reads the primary key, by email the
-- customers' email index then payments_customer_idx, by reference
-- payments_merchant_ref_idx: those had their indexes.

-- +goose Up
CREATE INDEX payments_card_last4_idx ON payments (merchant_id, mode, card_last4, created_at DESC, id DESC);

-- +goose Down
DROP INDEX payments_card_last4_idx;
