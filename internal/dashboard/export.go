package dashboard

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// exportPageSize is how many payments the CSV export reads per query: the
// store's largest page. Each page is written and flushed before the next is
// read, so an export of a million rows holds one page in memory, and no
// query (let alone a transaction) is open while the response is written.
const exportPageSize = paygate.MaxPageLimit

// exportCustomerCache bounds the customers the export remembers between
// pages; past it the cache starts afresh, so memory stays constant however
// many customers the rows name.
const exportCustomerCache = 4096

// exportHeader is the first row of the payments CSV.
var exportHeader = []string{
	"id", "created_at", "status", "amount", "currency", "amount_captured", "amount_refunded",
	"customer_id", "email", "card_brand", "card_last4", "merchant_reference", "provider", "decline_code",
}

// exportPayments serves GET /payments.csv (and /dashboard/payments.csv):
// every payment the list's filters select, newest first, as CSV. The rows
// are read in keyset pages of exportPageSize, each written and flushed
// before the next is read. Invalid filters answer 400 with the list page
// and its messages, before anything is written; a read that fails after
// the first row aborts the response, so that a client never takes a cut
// file for a whole one.
func (d *Dashboard) exportPayments(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	ctx := r.Context()
	q := r.URL.Query()
	q.Del("after") // every row, whatever page the list was on
	f, pq, errs := readPaymentFilter(q, v.Loc)
	if len(errs) > 0 {
		d.render(w, r, v, http.StatusBadRequest, "payments", newPaymentsData(f, errs))
		return
	}
	pq.MerchantID, pq.Mode, pq.Limit = v.User.MerchantID, v.Mode, exportPageSize
	rows, err := d.store.ListPayments(ctx, pq)
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+exportFileName(v.Mode, d.now())+`"`)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	flusher, _ := w.(http.Flusher)
	cw := csv.NewWriter(w)
	customers := newCustomerCache(d.store, v.User.MerchantID, v.Mode)
	_ = cw.Write(exportHeader)
	record := make([]string, len(exportHeader))
	for {
		for _, p := range rows {
			c, err := customers.get(ctx, p.CustomerID)
			if err != nil {
				d.abortExport(r, v, err)
			}
			if err := cw.Write(exportRecord(record, p, c)); err != nil {
				return // the client has gone
			}
		}
		cw.Flush()
		if cw.Error() != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		if len(rows) < exportPageSize {
			return
		}
		last := rows[len(rows)-1]
		pq.After = &paygate.PageCursor{CreatedAt: last.CreatedAt, ID: last.ID}
		if rows, err = d.store.ListPayments(ctx, pq); err != nil {
			d.abortExport(r, v, err)
		}
	}
}

// abortExport logs why an export stopped after its first byte and aborts
// the response (the connection is cut instead of the body ending cleanly).
func (d *Dashboard) abortExport(r *http.Request, v *viewer, err error) {
	d.log.Error("dashboard: payments export failed", "path", logPath(r.URL.Path), "merchant", v.User.MerchantID, "error", err)
	panic(http.ErrAbortHandler)
}

// exportFileName names the export by mode and time (UTC).
func exportFileName(mode paygate.Mode, now time.Time) string {
	return "payments-" + string(mode) + "-" + now.UTC().Format("20060102T150405Z") + ".csv"
}

// exportRecord fills rec with the cells of a payment: times RFC 3339 UTC
// with seconds, amounts as decimals in the currency's exponent, and every
// text cell guarded against formula injection.
func exportRecord(rec []string, p paygate.Payment, c paygate.Customer) []string {
	email := c.Email
	if email == "" && p.Billing != nil {
		email = p.Billing.Email
	}
	cur := p.Amount.Currency
	rec[0] = p.ID
	rec[1] = p.CreatedAt.UTC().Format(time.RFC3339)
	rec[2] = string(p.Status)
	rec[3] = decimalMinor(p.Amount.Amount, cur)
	rec[4] = csvSafe(cur)
	rec[5] = decimalMinor(p.AmountCaptured, cur)
	rec[6] = decimalMinor(p.AmountRefunded, cur)
	rec[7] = csvSafe(c.ExternalID)
	rec[8] = csvSafe(email)
	rec[9] = csvSafe(p.Card.Brand)
	rec[10] = csvSafe(p.Card.Last4)
	rec[11] = csvSafe(p.MerchantRef)
	rec[12] = csvSafe(p.ProviderID)
	rec[13] = csvSafe(p.DeclineCode)
	return rec
}

// csvSafe keeps a spreadsheet from reading a cell as a formula (CSV
// injection, OWASP): a cell starting with = + - @ tab or carriage return
// gets a leading apostrophe.
func csvSafe(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + s
	}
	return s
}

// customerCache looks customers of one (merchant, mode) up by id for the
// export, remembering up to exportCustomerCache of them.
type customerCache struct {
	st         Store
	merchantID string
	mode       paygate.Mode
	known      map[string]paygate.Customer
}

func newCustomerCache(st Store, merchantID string, mode paygate.Mode) *customerCache {
	return &customerCache{st: st, merchantID: merchantID, mode: mode, known: map[string]paygate.Customer{}}
}

// get returns the customer, or a zero Customer when there is none of that
// id (a payment's customer always exists; a missing one shows empty cells
// rather than stopping the export).
func (c *customerCache) get(ctx context.Context, customerID string) (paygate.Customer, error) {
	if customerID == "" {
		return paygate.Customer{}, nil
	}
	if cu, ok := c.known[customerID]; ok {
		return cu, nil
	}
	cu, err := c.st.CustomerByID(ctx, c.merchantID, c.mode, customerID)
	if err != nil && !paygate.IsNotFound(err) {
		return paygate.Customer{}, fmt.Errorf("read customer %s: %w", customerID, err)
	}
	if len(c.known) >= exportCustomerCache {
		clear(c.known)
	}
	c.known[customerID] = cu
	return cu, nil
}

// decimalMinor writes minor units as a plain decimal with all of the
// currency's decimals and no grouping: 1230 KWD is "1.230", 100 JPY "100",
// 1050 EUR "10.50". An unknown currency has two decimals.
func decimalMinor(minor int64, code string) string {
	neg, s, frac := splitMinor(minor, code)
	if frac != "" {
		s += "." + frac
	}
	if neg {
		s = "-" + s
	}
	return s
}

// serveExport serves /dashboard/payments.csv, the export outside the
// /dashboard/{mode}/ tree: its mode is the query parameter mode ("live";
// test when absent or anything else), as the Account page takes it, and the
// rest of the query is the list's filters.
func (d *Dashboard) serveExport(w http.ResponseWriter, r *http.Request) {
	mode := paygate.ModeTest
	if r.URL.Query().Get("mode") == string(paygate.ModeLive) {
		mode = paygate.ModeLive
	}
	d.withSession(w, r, mode, func(v *viewer) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			d.methodNotAllowed(w, r, v, "GET, HEAD")
			return
		}
		// Outside the route table, so its access is checked here: the
		// export is a read (every role may), as declared for the route
		// under /dashboard/{mode}/.
		if !needRead.allows(v.User.Role, v.Mode) {
			d.denied(w, r, v)
			return
		}
		d.exportPayments(w, r, v, nil)
	})
}
