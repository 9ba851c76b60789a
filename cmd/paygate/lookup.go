package main

import (
	"context"
	"fmt"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// notFoundError is a merchant, key, event or user that the database a
// command used does not hold. Its message names that database (its URL
// with any password redacted): the usual cause is a command pointed at
// another database than serve's (a relative sqlite: file, a missing
// PAYGATE_DATABASE_URL).
type notFoundError struct {
	what string // "merchant"
	id   string
	db   string // the redacted database URL
	bad  bool   // the id is not even of the right form
}

// Error returns "merchant not found: ID in database URL".
func (e *notFoundError) Error() string {
	if e.bad {
		return fmt.Sprintf("%s not found: %q is not a %s id (database %s)", e.what, e.id, e.what, e.db)
	}
	return fmt.Sprintf("%s not found: %s in database %s", e.what, e.id, e.db)
}

// notFound returns the *notFoundError of what id in the database dbURL.
func notFound(what, objectID, dbURL string) error {
	return &notFoundError{what: what, id: objectID, db: redactURL(dbURL), bad: !id.Valid(objectID)}
}

// findMerchant is merchantByID whose "not found" names the database.
func findMerchant(ctx context.Context, st paygate.Store, dbURL, merchantID string) (paygate.Merchant, error) {
	if !id.Valid(merchantID) {
		return paygate.Merchant{}, notFound("merchant", merchantID, dbURL)
	}
	m, err := paygate.OneMerchant(st.Merchants(ctx, paygate.MerchantQuery{ID: merchantID}))
	if paygate.IsNotFound(err) {
		return m, notFound("merchant", merchantID, dbURL)
	}
	return m, err
}

// findKey loads an API key by id; its "not found" names the database.
func findKey(ctx context.Context, st paygate.Store, dbURL, keyID string) (paygate.APIKey, error) {
	if !id.Valid(keyID) {
		return paygate.APIKey{}, notFound("key", keyID, dbURL)
	}
	k, err := paygate.OneAPIKey(st.APIKeys(ctx, paygate.APIKeyQuery{ID: keyID}))
	if paygate.IsNotFound(err) {
		return k, notFound("key", keyID, dbURL)
	}
	return k, err
}
