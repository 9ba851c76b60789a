package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

// The endpoints of /v1, one method each. Every method returns an *Error
// for an error answer of the gateway and a *TransportError when no answer
// came; see the package documentation for which are retried.

// CreatePayment charges a card (POST /v1/payments). A decline is an *Error
// named CARD_DECLINED with DeclineCode and TransactionID (the failed
// payment's id); a provider failure is PROVIDER_ERROR with TransactionID.
// Status PaymentCreated (HTTP 202) means the provider's answer is not
// known yet: the final status follows by webhook and GetPayment.
func (c *Client) CreatePayment(ctx context.Context, p *PaymentParams, opts ...CallOption) (*PaymentResult, error) {
	var out PaymentResult
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/payments", body: p, out: &out}, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetPayment returns a payment (GET /v1/payments/{id}); NOT_FOUND when
// this merchant and mode have none with that id.
func (c *Client) GetPayment(ctx context.Context, id string, opts ...CallOption) (*Payment, error) {
	pid, err := pathID("payment", id)
	if err != nil {
		return nil, err
	}
	var out Payment
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/payments/" + pid, out: &out}, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// LookupPayment returns the most recently created payment with your
// reference merchantRef (GET /v1/payments?merchantRef=…); NOT_FOUND when
// there is none.
func (c *Client) LookupPayment(ctx context.Context, merchantRef string, opts ...CallOption) (*Payment, error) {
	var out Payment
	q := url.Values{"merchantRef": {merchantRef}}
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/payments", query: q, out: &out}, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// CapturePayment captures an authorized payment (POST
// /v1/payments/{id}/capture): all of it when p is nil or p.Amount is
// empty. A payment that is not authorized is INVALID_REQUEST.
func (c *Client) CapturePayment(ctx context.Context, id string, p *CaptureParams, opts ...CallOption) (*Payment, error) {
	pid, err := pathID("payment", id)
	if err != nil {
		return nil, err
	}
	if p == nil {
		p = &CaptureParams{}
	}
	var out Payment
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/payments/" + pid + "/capture", body: p, out: &out}, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// VoidPayment cancels an authorized payment (POST /v1/payments/{id}/void).
// A payment that is not authorized is INVALID_REQUEST.
func (c *Client) VoidPayment(ctx context.Context, id string, opts ...CallOption) (*Payment, error) {
	pid, err := pathID("payment", id)
	if err != nil {
		return nil, err
	}
	var out Payment
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/payments/" + pid + "/void", body: struct{}{}, out: &out}, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListPaymentRefunds returns a payment's refunds, newest first (GET
// /v1/payments/{id}/refunds). The list is whole: the endpoint does not
// paginate.
func (c *Client) ListPaymentRefunds(ctx context.Context, paymentID string, opts ...CallOption) ([]Refund, error) {
	pid, err := pathID("payment", paymentID)
	if err != nil {
		return nil, err
	}
	var out []Refund
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/payments/" + pid + "/refunds", out: &out}, opts); err != nil {
		return nil, err
	}
	return out, nil
}

// CreateRefund refunds a captured payment, fully or partly (POST
// /v1/refunds). INVALID_REQUEST names the param: transactionId (the
// payment is not captured), currency (not the payment's), amount (more
// than is left to refund).
func (c *Client) CreateRefund(ctx context.Context, p *RefundParams, opts ...CallOption) (*Refund, error) {
	var out Refund
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/refunds", body: p, out: &out}, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetRefund returns a refund (GET /v1/refunds/{id}).
func (c *Client) GetRefund(ctx context.Context, id string, opts ...CallOption) (*Refund, error) {
	rid, err := pathID("refund", id)
	if err != nil {
		return nil, err
	}
	var out Refund
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/refunds/" + rid, out: &out}, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpsertCustomer creates the customer with p.ExternalID, or updates the
// existing one, which keeps its id and createdAt (POST /v1/customers).
func (c *Client) UpsertCustomer(ctx context.Context, p *CustomerParams, opts ...CallOption) (*Customer, error) {
	var out Customer
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/customers", body: p, out: &out}, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetCustomer returns a customer by the gateway's id of it (GET
// /v1/customers/{id}).
func (c *Client) GetCustomer(ctx context.Context, id string, opts ...CallOption) (*Customer, error) {
	cid, err := pathID("customer", id)
	if err != nil {
		return nil, err
	}
	var out Customer
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/customers/" + cid, out: &out}, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// SaveCard stores a card for a customer, by the gateway's id of the
// customer (POST /v1/customers/{id}/cards). Saving the same number again
// returns the card already stored.
func (c *Client) SaveCard(ctx context.Context, customerID string, card *StoredCardParams, opts ...CallOption) (*StoredCard, error) {
	cid, err := pathID("customer", customerID)
	if err != nil {
		return nil, err
	}
	body := struct {
		Card *StoredCardParams `json:"card"`
	}{card}
	var out StoredCard
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/customers/" + cid + "/cards", body: body, out: &out}, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListCards returns a customer's stored cards, newest first, deleted ones
// left out (GET /v1/customers/{id}/cards). The list is whole: the endpoint
// does not paginate.
func (c *Client) ListCards(ctx context.Context, customerID string, opts ...CallOption) ([]StoredCard, error) {
	cid, err := pathID("customer", customerID)
	if err != nil {
		return nil, err
	}
	var out []StoredCard
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/customers/" + cid + "/cards", out: &out}, opts); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteCard deletes a stored card (DELETE
// /v1/customers/{id}/cards/{cardId}); it can no longer pay. A card already
// deleted is NOT_FOUND, and so is a retried deletion whose first answer was
// lost on the way: either way the card is gone.
func (c *Client) DeleteCard(ctx context.Context, customerID, cardID string, opts ...CallOption) error {
	cid, err := pathID("customer", customerID)
	if err != nil {
		return err
	}
	kid, err := pathID("card", cardID)
	if err != nil {
		return err
	}
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/customers/" + cid + "/cards/" + kid}, opts)
}

// CreateToken tokenizes a card with the merchant's public key
// ("smtgw_pk_…"; POST /v1/tokens), as the card fields do in a browser, and
// returns the token: it pays once (PaymentParams with MethodToken and
// Token), within 15 minutes. The client's own (secret) key is not sent: a
// secret key there is UNAUTHORIZED. Meant for tests and tools; a shop's
// server should never see the card.
func (c *Client) CreateToken(ctx context.Context, publicKey string, card *Card, opts ...CallOption) (*CardToken, error) {
	if publicKey == "" {
		return nil, errors.New("paygate: CreateToken needs the public key")
	}
	body := struct {
		Card *Card `json:"card"`
	}{card}
	var out CardToken
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/tokens", body: body, out: &out, apiKey: publicKey}, opts); err != nil {
		return nil, err
	}
	return &out, nil
}
