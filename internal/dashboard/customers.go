package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// customersData is the customer search page.
type customersData struct {
	Query     string
	Errors    []string
	Customers []paygate.Customer
	// Older and Newest are the pagination links, as on the payments list.
	Older, Newest string
}

// customersPage serves GET /customers: search by external id (exact or
// prefix) or exact email, newest first.
func (d *Dashboard) customersPage(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	q := r.URL.Query()
	data := customersData{Query: strings.TrimSpace(q.Get("q"))}
	cq := paygate.CustomerQuery{MerchantID: v.User.MerchantID, Mode: v.Mode, Text: data.Query, Limit: pageSize + 1}
	if utf8.RuneCountInString(data.Query) > maxFilterText {
		data.Errors = append(data.Errors, "Search for at most 255 characters: an external id or an email address.")
	}
	after := q.Get("after")
	if after != "" {
		c, ok := parseCursor(after)
		if !ok {
			data.Errors = append(data.Errors, "The page link is not valid; start again from the newest customers.")
		}
		cq.After = &c
	}
	if len(data.Errors) > 0 {
		d.render(w, r, v, http.StatusBadRequest, "customers", data)
		return
	}
	rows, err := d.store.SearchCustomers(r.Context(), cq)
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	filter := url.Values{}
	if data.Query != "" {
		filter.Set("q", data.Query)
	}
	data.Customers, data.Older, data.Newest = pageLinks(modePath(v, "/customers"), filter, after, rows,
		func(c paygate.Customer) (time.Time, string) { return c.CreatedAt, c.ID })
	d.render(w, r, v, http.StatusOK, "customers", data)
}

// customerData is the customer detail page.
type customerData struct {
	C        paygate.Customer
	Metadata []metaEntry
	// Payments are the newest pageSize payments; More says there are older
	// ones, which the filtered payments list shows.
	Payments    []paygate.Payment
	More        bool
	PaymentsURL string
	Cards       []paygate.StoredCard
	Notice      string
}

// customerPage serves GET /customers/{id}.
func (d *Dashboard) customerPage(w http.ResponseWriter, r *http.Request, v *viewer, params []string) {
	data, err := d.loadCustomer(r.Context(), v, params[0])
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	if r.URL.Query().Get("deleted") != "" {
		data.Notice = "The stored card was deleted. It can no longer be used for payments."
	}
	d.render(w, r, v, http.StatusOK, "customer", data)
}

// loadCustomer reads a customer of the viewer's merchant and mode with its
// newest payments and stored cards; NOT_FOUND when it is not theirs.
func (d *Dashboard) loadCustomer(ctx context.Context, v *viewer, customerID string) (customerData, error) {
	mid, mode := v.User.MerchantID, v.Mode
	if !id.Valid(customerID) {
		return customerData{}, paygate.Errorf(paygate.CodeNotFound, "", "no such customer")
	}
	c, err := d.store.CustomerByID(ctx, mid, mode, strings.ToLower(customerID))
	if err != nil {
		return customerData{}, fmt.Errorf("read customer: %w", err)
	}
	data := customerData{
		C:           c,
		Metadata:    metadataEntries(c.Metadata),
		PaymentsURL: modePath(v, "/payments") + "?" + url.Values{"customer": {c.ExternalID}}.Encode(),
	}
	ps, err := d.store.ListPayments(ctx, paygate.PaymentQuery{MerchantID: mid, Mode: mode, CustomerID: c.ID, Limit: pageSize + 1})
	if err != nil {
		return customerData{}, fmt.Errorf("list the customer's payments: %w", err)
	}
	if len(ps) > pageSize {
		ps, data.More = ps[:pageSize], true
	}
	data.Payments = ps
	if data.Cards, err = d.store.StoredCards(ctx, paygate.StoredCardQuery{MerchantID: mid, Mode: mode, CustomerID: c.ID}); err != nil {
		return customerData{}, fmt.Errorf("list stored cards: %w", err)
	}
	return data, nil
}

// deleteCard serves POST /customers/{id}/cards/{cardId}/delete: the card
// goes through the same use case as DELETE /v1/customers/{id}/cards/{id}.
func (d *Dashboard) deleteCard(w http.ResponseWriter, r *http.Request, v *viewer, params []string) {
	ctx := r.Context()
	mid, mode := v.User.MerchantID, v.Mode
	if !id.Valid(params[0]) || !id.Valid(params[1]) {
		d.fail(w, r, v, paygate.Errorf(paygate.CodeNotFound, "", "no such stored card"))
		return
	}
	customerID, cardID := strings.ToLower(params[0]), strings.ToLower(params[1])
	// Read the card first (scoped to merchant, mode and customer) for the
	// audit entry's description.
	cards, err := d.store.StoredCards(ctx, paygate.StoredCardQuery{MerchantID: mid, Mode: mode, CustomerID: customerID, ID: cardID})
	var card paygate.StoredCard
	switch {
	case paygate.IsNotFound(err) || (err == nil && len(cards) == 0):
		err = paygate.Errorf(paygate.CodeNotFound, "", "no such stored card")
	case err == nil:
		card = cards[0]
	}
	if err != nil {
		d.fail(w, r, v, fmt.Errorf("read stored card: %w", err))
		return
	}
	if err := d.payments.DeleteCard(ctx, mid, mode, customerID, cardID); err != nil {
		d.fail(w, r, v, fmt.Errorf("delete stored card: %w", err))
		return
	}
	d.audit(ctx, r, v, mode, paygate.AuditStoredCardDeleted, cardID,
		cardBrand(card.Brand)+" •••• "+card.Last4+" of customer "+customerID)
	http.Redirect(w, r, modePath(v, "/customers/"+customerID)+"?deleted=1", http.StatusSeeOther)
}
