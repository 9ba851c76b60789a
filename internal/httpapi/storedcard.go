package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
)

// The stored cards of a customer (decisions.md section 13):
//
//	POST   /v1/customers/{id}/cards           save a card (idempotent, as every POST)
//	GET    /v1/customers/{id}/cards           list the active cards, newest first
//	DELETE /v1/customers/{id}/cards/{cardId}  delete one
//
// DELETE takes no Idempotency-Key (decisions §5 asks it of POSTs): deleting
// is idempotent by nature, and a repeat answers 404 because the card is
// gone, which is what a retrying client needs to know. A key that is sent
// anyway is ignored.

// storedCardRecord is a stored card as the API shows it: brand and last four
// digits, never more of the number.
type storedCardRecord struct {
	ID          string `json:"id"`
	CustomerID  string `json:"customerId"`
	Brand       string `json:"brand"`
	Last4       string `json:"last4"`
	ExpiryMonth string `json:"expiryMonth"`
	ExpiryYear  string `json:"expiryYear"`
	HolderName  string `json:"holderName"`
	CreatedAt   string `json:"createdAt"`
}

// storedCardResponse renders a stored card; the expiry is two digits each,
// as submitted.
func storedCardResponse(c paygate.StoredCard) storedCardRecord {
	return storedCardRecord{
		ID: c.ID, CustomerID: c.CustomerID, Brand: c.Brand, Last4: c.Last4,
		ExpiryMonth: fmt.Sprintf("%02d", c.ExpMonth), ExpiryYear: fmt.Sprintf("%02d", c.ExpYear%100),
		HolderName: c.HolderName, CreatedAt: formatTime(c.CreatedAt),
	}
}

// deletedRecord is the answer of a deletion.
type deletedRecord struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

func (s *Server) saveStoredCard(w http.ResponseWriter, r *http.Request, key paygate.APIKey, ids []string) {
	s.runIdempotent(w, r, key, nil, func(body []byte) (payment.Operation, error) {
		var sr storedCardRequest
		if e := decodeJSON(body, &sr); e != nil {
			return nil, e
		}
		c, e := sr.validate(s.clock.Now())
		if e != nil {
			return nil, e
		}
		return func(ctx context.Context, req payment.Request) (payment.Result, error) {
			return s.cfg.Payments.SaveCard(ctx, req, ids[0], c)
		}, nil
	})
}

func (s *Server) listStoredCards(w http.ResponseWriter, r *http.Request, key paygate.APIKey, ids []string) {
	cards, err := s.cfg.Store.StoredCards(r.Context(), paygate.StoredCardQuery{MerchantID: key.MerchantID, Mode: key.Mode, CustomerID: ids[0]})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]storedCardRecord, 0, len(cards))
	for _, c := range cards {
		out = append(out, storedCardResponse(c))
	}
	s.writeData(w, r, http.StatusOK, out)
}

func (s *Server) deleteStoredCard(w http.ResponseWriter, r *http.Request, key paygate.APIKey, ids []string) {
	if err := s.cfg.Payments.DeleteCard(r.Context(), key.MerchantID, key.Mode, ids[0], ids[1]); err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeData(w, r, http.StatusOK, deletedRecord{ID: ids[1], Deleted: true})
}
