package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/paygate/paygate/internal/card"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/money"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
)

// pageSize is how many rows a list page shows.
const pageSize = 50

// maxFilterText is the longest merchant reference or customer external id
// (decisions.md sections 7 and 8): a longer filter can match nothing.
const maxFilterText = 255

// paymentStatuses are the statuses the payments filter offers, in the order
// of a payment's life.
var paymentStatuses = []paygate.PaymentStatus{
	paygate.PaymentCreated, paygate.PaymentPending3DS, paygate.PaymentAuthorized,
	paygate.PaymentCaptured, paygate.PaymentVoided, paygate.PaymentFailed,
}

// paymentFilter is the payments list's filter form as submitted (GET), so
// the form shows what was asked even when part of it is invalid.
type paymentFilter struct {
	Statuses []string
	From, To string // YYYY-MM-DD in the viewer's zone, inclusive
	Currency string
	Ref      string // merchantRef
	Customer string // the customer's external id
	// Search is the search box: a payment id, a card's last 4 digits, a
	// customer's email or a merchant reference (searchKind tells which).
	Search string
}

// statusOption is one checkbox of the status filter.
type statusOption struct {
	Value   string
	Checked bool
}

// paymentsData is the payments list page.
type paymentsData struct {
	Filter   paymentFilter
	Options  []statusOption
	Errors   []string
	Payments []paygate.Payment
	// Customers are the payments' customers by id (a zero Customer for
	// one that could not be read).
	Customers map[string]paygate.Customer
	// Older is the link to the next (older) page, "" on the last page;
	// Newest the link back to the first page, "" on the first page.
	Older, Newest string
	// Filtered reports whether any filter is set.
	Filtered bool
	// ExportURL is the CSV export of the filtered list; SearchKind what
	// the search box's text was taken for.
	ExportURL, SearchKind string
}

// readPaymentFilter parses the filter of a payments list request into a
// store query for (merchant, mode). Dates are days in loc: From's midnight
// is the inclusive lower bound and the midnight after To the exclusive upper
// bound, both in UTC. Invalid input yields messages for the page, never a
// query that means something else.
func readPaymentFilter(q url.Values, loc *time.Location) (paymentFilter, paygate.PaymentQuery, []string) {
	if loc == nil {
		loc = time.UTC
	}
	f := paymentFilter{
		From:     strings.TrimSpace(q.Get("from")),
		To:       strings.TrimSpace(q.Get("to")),
		Currency: strings.ToUpper(strings.TrimSpace(q.Get("currency"))),
		Ref:      strings.TrimSpace(q.Get("ref")),
		Customer: strings.TrimSpace(q.Get("customer")),
		Search:   strings.TrimSpace(q.Get("q")),
	}
	var pq paygate.PaymentQuery
	var errs []string
	for _, s := range q["status"] {
		if s == "" {
			continue
		}
		if !knownStatus(s) {
			errs = append(errs, "Unknown status “"+s+"”.")
			continue
		}
		f.Statuses = append(f.Statuses, s)
		pq.Statuses = append(pq.Statuses, paygate.PaymentStatus(s))
	}
	if f.From != "" {
		d, err := time.ParseInLocation(time.DateOnly, f.From, loc)
		if err != nil {
			errs = append(errs, "The start date must be a date like 2026-11-22.")
		} else {
			pq.CreatedFrom = d.UTC()
		}
	}
	if f.To != "" {
		d, err := time.ParseInLocation(time.DateOnly, f.To, loc)
		if err != nil {
			errs = append(errs, "The end date must be a date like 2026-11-22.")
		} else {
			pq.CreatedBefore = d.AddDate(0, 0, 1).UTC()
		}
	}
	if !pq.CreatedFrom.IsZero() && !pq.CreatedBefore.IsZero() && !pq.CreatedFrom.Before(pq.CreatedBefore) {
		errs = append(errs, "The end date must not be before the start date.")
	}
	if f.Currency != "" {
		if _, ok := money.Digits(f.Currency); !ok {
			errs = append(errs, "“"+f.Currency+"” is not a currency code such as EUR.")
		}
		pq.Currency = f.Currency
	}
	if utf8.RuneCountInString(f.Ref) > maxFilterText {
		errs = append(errs, "A merchant reference has at most 255 characters.")
	}
	pq.MerchantRef = f.Ref
	if utf8.RuneCountInString(f.Customer) > maxFilterText {
		errs = append(errs, "A customer id has at most 255 characters.")
	}
	pq.CustomerExternalID = f.Customer
	errs = append(errs, applySearch(f.Search, f.Ref, &pq)...)
	if after := q.Get("after"); after != "" {
		c, ok := parseCursor(after)
		if !ok {
			errs = append(errs, "The page link is not valid; start again from the newest payments.")
		} else {
			pq.After = &c
		}
	}
	return f, pq, errs
}

// Kinds of search box input (searchKind).
const (
	searchNone      = ""
	searchPaymentID = "payment id"
	searchLast4     = "card last 4"
	searchEmail     = "customer email"
	searchReference = "merchant reference"
)

// searchKind classifies the search box's text: a UUID is a payment id, four
// digits a card's last 4, text with an @ a customer's email, anything else
// a merchant reference (exact).
func searchKind(text string) string {
	switch {
	case text == "":
		return searchNone
	case id.Valid(text):
		return searchPaymentID
	case len(text) == 4 && strings.Trim(text, "0123456789") == "":
		return searchLast4
	case strings.Contains(text, "@"):
		return searchEmail
	default:
		return searchReference
	}
}

// applySearch sets the query's field for the search box's text, and
// returns why it cannot when it cannot.
func applySearch(text, ref string, pq *paygate.PaymentQuery) []string {
	if utf8.RuneCountInString(text) > maxFilterText {
		return []string{"A search has at most 255 characters."}
	}
	switch searchKind(text) {
	case searchPaymentID:
		pq.PaymentID = strings.ToLower(text)
	case searchLast4:
		pq.CardLast4 = text
	case searchEmail:
		pq.CustomerEmail = text
	case searchReference:
		if ref != "" && ref != text {
			return []string{"The search is a merchant reference, and the filter names another one: clear one of them."}
		}
		pq.MerchantRef = text
	}
	return nil
}

func knownStatus(s string) bool {
	for _, st := range paymentStatuses {
		if string(st) == s {
			return true
		}
	}
	return false
}

// filtered reports whether any filter is set.
func (f paymentFilter) filtered() bool {
	return len(f.Statuses) > 0 || f.From != "" || f.To != "" || f.Currency != "" || f.Ref != "" || f.Customer != "" || f.Search != ""
}

// values is the filter as a query string, for the pagination links.
func (f paymentFilter) values() url.Values {
	v := url.Values{}
	for _, s := range f.Statuses {
		v.Add("status", s)
	}
	for k, s := range map[string]string{"from": f.From, "to": f.To, "currency": f.Currency, "ref": f.Ref, "customer": f.Customer, "q": f.Search} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// formatCursor writes a keyset position as "createdAt,id" with the time in
// RFC 3339 with nanoseconds, UTC.
func formatCursor(at time.Time, rowID string) string {
	return at.UTC().Format(time.RFC3339Nano) + "," + rowID
}

// parseCursor reads formatCursor's output.
func parseCursor(s string) (paygate.PageCursor, bool) {
	ts, rowID, ok := strings.Cut(s, ",")
	if !ok || !id.Valid(rowID) {
		return paygate.PageCursor{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return paygate.PageCursor{}, false
	}
	return paygate.PageCursor{CreatedAt: at.UTC(), ID: strings.ToLower(rowID)}, true
}

// pageLinks returns the links of a keyset-paginated list at base: rows is
// what the store returned for a limit of pageSize+1, so a row beyond
// pageSize means there is an older page. It returns the rows to show.
func pageLinks[T any](base string, filter url.Values, after string, rows []T, key func(T) (time.Time, string)) (shown []T, older, newest string) {
	shown = rows
	if len(rows) > pageSize {
		shown = rows[:pageSize]
		at, rowID := key(shown[pageSize-1])
		v := url.Values{}
		for k, vs := range filter {
			v[k] = vs
		}
		v.Set("after", formatCursor(at, rowID))
		older = base + "?" + v.Encode()
	}
	if after != "" {
		newest = base
		if len(filter) > 0 {
			newest += "?" + filter.Encode()
		}
	}
	return shown, older, newest
}

// modePath is the path of a page of the viewer's mode.
func modePath(v *viewer, rest string) string {
	return "/dashboard/" + string(v.Mode) + rest
}

// newPaymentsData is the list page's data before its rows: the filter as
// submitted, its status checkboxes and its messages.
func newPaymentsData(f paymentFilter, errs []string) paymentsData {
	data := paymentsData{Filter: f, Errors: errs, Filtered: f.filtered(), SearchKind: searchKind(f.Search)}
	for _, s := range paymentStatuses {
		o := statusOption{Value: string(s)}
		for _, c := range f.Statuses {
			o.Checked = o.Checked || c == string(s)
		}
		data.Options = append(data.Options, o)
	}
	return data
}

// paymentsPage serves GET /payments: the list with its filters.
func (d *Dashboard) paymentsPage(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	f, pq, errs := readPaymentFilter(r.URL.Query(), v.Loc)
	data := newPaymentsData(f, errs)
	data.ExportURL = modePath(v, "/payments.csv")
	if q := f.values().Encode(); q != "" {
		data.ExportURL += "?" + q
	}
	if len(errs) > 0 {
		d.render(w, r, v, http.StatusBadRequest, "payments", data)
		return
	}
	pq.MerchantID, pq.Mode, pq.Limit = v.User.MerchantID, v.Mode, pageSize+1
	rows, err := d.store.ListPayments(r.Context(), pq)
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	data.Payments, data.Older, data.Newest = pageLinks(modePath(v, "/payments"), f.values(), r.URL.Query().Get("after"), rows,
		func(p paygate.Payment) (time.Time, string) { return p.CreatedAt, p.ID })
	data.Customers = map[string]paygate.Customer{}
	customers := newCustomerCache(d.store, v.User.MerchantID, v.Mode)
	for _, p := range data.Payments {
		c, err := customers.get(r.Context(), p.CustomerID)
		if err != nil {
			d.fail(w, r, v, err)
			return
		}
		data.Customers[p.CustomerID] = c
	}
	d.render(w, r, v, http.StatusOK, "payments", data)
}

// refundKeyPrefix marks the idempotency keys of dashboard refunds. They live
// in the (merchant, mode) scope of the API's keys; the prefix and the random
// UUID after it keep them from meeting a key an API client chose.
const refundKeyPrefix = "dashboard:"

// paymentData is the payment detail page.
type paymentData struct {
	P paygate.Payment
	// Customer is the payment's customer; nil if it could not be found.
	Customer *paygate.Customer
	Refunds  []paygate.Refund
	Timeline []timelineEntry
	Events   []eventRow
	ThreeDS  string
	Metadata []metaEntry
	// Remaining is what can still be refunded, in minor units.
	Remaining int64
	CanRefund bool
	Form      refundForm
	// Error is why the last refund attempt was refused; Notice says what
	// the last action did.
	Error, Notice string
	// CanSettle reports whether the payment can be captured or voided
	// (it is authorized); SettleKey is the capture form's idempotency key
	// and CaptureAmount its amount, everything authorized. ActionError is
	// why the last capture or void was refused.
	CanSettle                             bool
	SettleKey, CaptureAmount, ActionError string
}

// timelineEntry is one step of a payment's history.
type timelineEntry struct {
	At     time.Time
	Label  string
	Status string // a badge; "" for none
}

// eventRow is an event with its webhook deliveries.
type eventRow struct {
	Event      paygate.Event
	Deliveries []paygate.Delivery
}

// metaEntry is one key of a metadata object, its value as JSON text (a
// string without its quotes).
type metaEntry struct {
	Key, Value string
}

// refundForm is the refund form's fields.
type refundForm struct {
	Amount, Reason string
	// Key is the idempotency key minted when the page was rendered, so
	// that a double submit refunds once.
	Key string
}

// paymentPage serves GET /payments/{id}.
func (d *Dashboard) paymentPage(w http.ResponseWriter, r *http.Request, v *viewer, params []string) {
	data, err := d.loadPayment(r.Context(), v, params[0])
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	switch done := r.URL.Query().Get("done"); {
	case done == "capture" && data.P.Status == paygate.PaymentCaptured:
		data.Notice = "Payment captured: " + formatMinor(data.P.AmountCaptured, data.P.Amount.Currency) + "."
	case done == "void" && data.P.Status == paygate.PaymentVoided:
		data.Notice = "Payment voided."
	case (done == "capture" || done == "void") && data.P.Status == paygate.PaymentAuthorized:
		data.ActionError = "The provider did not " + done + " the payment; it is still authorized. Try again in a moment."
	}
	if rid := r.URL.Query().Get("refunded"); rid != "" {
		for _, rf := range data.Refunds {
			if rf.ID == rid {
				data.Notice = "Refund of " + formatSubmitted(rf.AmountText, rf.Amount.Currency) +
					" created. It goes to the provider in the background; its status below follows."
			}
		}
	}
	d.render(w, r, v, http.StatusOK, "payment", data)
}

// loadPayment reads everything the payment page shows, each read filtered
// by the viewer's merchant and mode. NOT_FOUND when the payment is not
// theirs.
func (d *Dashboard) loadPayment(ctx context.Context, v *viewer, paymentID string) (paymentData, error) {
	mid, mode := v.User.MerchantID, v.Mode
	if !id.Valid(paymentID) {
		return paymentData{}, paygate.Errorf(paygate.CodeNotFound, "", "no such payment")
	}
	p, err := d.store.PaymentByID(ctx, mid, mode, strings.ToLower(paymentID))
	if err != nil {
		return paymentData{}, fmt.Errorf("read payment: %w", err)
	}
	challenges, err := d.store.ThreeDSChallenges(ctx, paygate.ThreeDSChallengeQuery{MerchantID: mid, Mode: mode, PaymentID: p.ID})
	if err != nil {
		return paymentData{}, fmt.Errorf("read 3-D Secure challenges: %w", err)
	}
	data := paymentData{P: p, ThreeDS: threeDSSummary(p, challenges)}
	if c, err := d.store.CustomerByID(ctx, mid, mode, p.CustomerID); err == nil {
		data.Customer = &c
	} else if !paygate.IsNotFound(err) {
		return paymentData{}, fmt.Errorf("read customer: %w", err)
	}
	if data.Refunds, err = d.store.RefundsByPayment(ctx, mid, mode, p.ID); err != nil {
		return paymentData{}, fmt.Errorf("read refunds: %w", err)
	}
	events, err := d.store.Events(ctx, paygate.EventQuery{MerchantID: mid, Mode: mode, PaymentID: p.ID})
	if err != nil {
		return paymentData{}, fmt.Errorf("read events: %w", err)
	}
	deliveries, err := d.store.Deliveries(ctx, paygate.DeliveryQuery{MerchantID: mid, Mode: mode, PaymentID: p.ID})
	if err != nil {
		return paymentData{}, fmt.Errorf("read deliveries: %w", err)
	}
	byEvent := map[string][]paygate.Delivery{}
	for _, dl := range deliveries {
		byEvent[dl.EventID] = append(byEvent[dl.EventID], dl)
	}
	for _, ev := range events {
		data.Events = append(data.Events, eventRow{Event: ev, Deliveries: byEvent[ev.ID]})
	}
	data.Timeline = timeline(p, events, data.Refunds, challenges)
	data.Metadata = metadataEntries(p.Metadata)
	if p.Status == paygate.PaymentCaptured {
		data.Remaining = max(p.AmountCaptured-p.AmountRefunded, 0)
		data.CanRefund = data.Remaining > 0
	}
	data.Form = refundForm{Amount: money.Format(data.Remaining, p.Amount.Currency), Key: id.New()}
	if p.Status == paygate.PaymentAuthorized {
		data.CanSettle, data.SettleKey = true, id.New()
		// As an amount is entered: at most two decimals (decisions.md
		// section 3), which a three-decimal currency's input has too.
		data.CaptureAmount = money.Format(p.Amount.Amount, p.Amount.Currency)
	}
	return data, nil
}

// eventLabels name the events in a payment's history.
var eventLabels = map[paygate.EventType]string{
	paygate.EventPaymentCaptured:   "Captured",
	paygate.EventPaymentFailed:     "Failed",
	paygate.EventPaymentAuthorized: "Authorized",
	paygate.EventPaymentVoided:     "Voided",
	paygate.EventRefundCreated:     "Refund created",
	paygate.EventRefundSucceeded:   "Refund succeeded",
	paygate.EventRefundFailed:      "Refund failed",
}

// timeline is the payment's history: its creation, then each of its events
// (refund events name their amount), then where it waits, if it does.
func timeline(p paygate.Payment, events []paygate.Event, refunds []paygate.Refund, challenges []paygate.ThreeDSChallenge) []timelineEntry {
	amounts := map[string]string{}
	for _, rf := range refunds {
		amounts[rf.ID] = formatSubmitted(rf.AmountText, rf.Amount.Currency)
	}
	out := []timelineEntry{{At: p.CreatedAt, Label: "Payment created", Status: string(paygate.PaymentCreated)}}
	for _, c := range challenges {
		out = append(out, timelineEntry{At: c.CreatedAt, Label: "3-D Secure challenge sent to the customer", Status: string(paygate.PaymentPending3DS)})
		if c.ConsumedAt != nil {
			out = append(out, timelineEntry{At: *c.ConsumedAt, Label: "3-D Secure challenge " + challengeEnd(p, c)})
		}
	}
	for _, ev := range events {
		label, ok := eventLabels[ev.Type]
		if !ok {
			label = string(ev.Type)
		}
		if a := amounts[ev.RefundID]; ev.RefundID != "" && a != "" {
			label += " (" + a + ")"
		}
		status := ""
		if s, ok := strings.CutPrefix(string(ev.Type), "payment."); ok {
			status = s
		}
		out = append(out, timelineEntry{At: ev.CreatedAt, Label: label + " · " + string(ev.Type), Status: status})
	}
	switch p.Status {
	case paygate.PaymentPending3DS:
		out = append(out, timelineEntry{At: p.UpdatedAt, Label: "Waiting for the customer's 3-D Secure challenge", Status: string(p.Status)})
	case paygate.PaymentCreated:
		if len(events) == 0 {
			out = append(out, timelineEntry{At: p.UpdatedAt, Label: "Waiting for the provider's answer", Status: string(p.Status)})
		}
	}
	return out
}

// threeDSSummary says how the payment went through 3-D Secure, from its
// recorded challenges (the last one decides) and its outcome.
func threeDSSummary(p paygate.Payment, challenges []paygate.ThreeDSChallenge) string {
	if len(challenges) == 0 {
		return "Not challenged."
	}
	c := challenges[len(challenges)-1]
	if c.ConsumedAt == nil {
		return "Challenged: waiting for the customer to complete the challenge."
	}
	return "Challenged: " + challengeEnd(p, c) + "."
}

// challengeEnd says how a consumed challenge ended, from the payment's
// outcome.
func challengeEnd(p paygate.Payment, c paygate.ThreeDSChallenge) string {
	switch {
	case p.ErrorCode == string(paygate.CodeAuthenticationExpired) || (c.ConsumedAt != nil && !c.ConsumedAt.Before(c.ExpiresAt)):
		return "expired before the customer completed it"
	case p.ErrorCode == string(paygate.CodeAuthenticationFailed):
		return "failed: the customer did not authenticate"
	case p.Status == paygate.PaymentFailed:
		return "completed; the provider then refused the payment"
	default:
		return "completed: the customer authenticated"
	}
}

// metadataEntries lists a metadata object's keys in order, values as JSON
// text (strings shown bare). Anything that is not an object shows as one
// entry with an empty key.
func metadataEntries(raw []byte) []metaEntry {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return []metaEntry{{Value: string(raw)}}
	}
	out := make([]metaEntry, 0, len(m))
	for k, v := range m {
		val := string(v)
		var s string
		if json.Unmarshal(v, &s) == nil {
			val = s
		}
		out = append(out, metaEntry{Key: k, Value: val})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// refundPayment serves POST /payments/{id}/refund: the dashboard's refund
// runs through the payment service's idempotent-operation runner and the
// refund use case, as the API's does, with a key minted when the form was
// rendered.
func (d *Dashboard) refundPayment(w http.ResponseWriter, r *http.Request, v *viewer, params []string) {
	ctx := r.Context()
	if !id.Valid(params[0]) {
		d.fail(w, r, v, paygate.Errorf(paygate.CodeNotFound, "", "no such payment"))
		return
	}
	p, err := d.store.PaymentByID(ctx, v.User.MerchantID, v.Mode, strings.ToLower(params[0]))
	if err != nil {
		d.fail(w, r, v, fmt.Errorf("read payment: %w", err))
		return
	}
	form := refundForm{
		Amount: strings.TrimSpace(r.PostFormValue("amount")),
		Reason: r.PostFormValue("reason"),
		Key:    r.PostFormValue("idempotency_key"),
	}
	// refused shows the page again, as it is now, with the message and
	// the submitted values under a fresh key.
	refused := func(msg string) {
		data, err := d.loadPayment(ctx, v, p.ID)
		if err != nil {
			d.fail(w, r, v, err)
			return
		}
		data.Error = msg
		data.Form = refundForm{Amount: form.Amount, Reason: form.Reason, Key: id.New()}
		if card.ContainsNumber(form.Reason) {
			data.Form.Reason = "" // refused for it: never shown back
		}
		d.render(w, r, v, http.StatusBadRequest, "payment", data)
	}
	if !id.Valid(form.Key) {
		refused("The form has expired; check the amount and submit it again.")
		return
	}
	out, err := d.payments.Run(ctx, payment.IdempotentRequest{
		MerchantID: p.MerchantID, Mode: p.Mode, Key: refundKeyPrefix + strings.ToLower(form.Key),
		Method: http.MethodPost, Path: refundFingerprintPath,
		Body: func() ([]byte, error) { return refundFingerprint(p, form) },
	}, func([]byte) (payment.Operation, error) {
		if form.Amount == "" {
			return nil, paygate.Errorf(paygate.CodeInvalidRequest, "amount", "amount is required")
		}
		amount, e := money.Parse(form.Amount, p.Amount.Currency)
		if e != nil {
			return nil, e
		}
		in, e := payment.NewRefundInput(p.ID, amount, form.Amount, form.Reason)
		if e != nil {
			return nil, e
		}
		return func(ctx context.Context, req payment.Request) (payment.Result, error) {
			return d.payments.Refund(ctx, req, in)
		}, nil
	})
	var pe *paygate.Error
	var re *payment.ReleaseError
	switch {
	case errors.As(err, &re):
		d.fail(w, r, v, errors.Join(re.Err, fmt.Errorf("release refund key: %w", re.Release)))
	case errors.Is(err, payment.ErrInFlight):
		refused("This refund is still being processed. Reload the page in a moment to see it.")
	case paygate.ErrorCode(err) == paygate.CodeDuplicateRequest:
		refused("This form was already submitted with other values. Check the refunds below before refunding again.")
	case errors.As(err, &pe) && pe.Code != paygate.CodeInternal && pe.Code != paygate.CodeServiceUnavailable:
		refused(refundMessage(pe))
	case err != nil:
		d.fail(w, r, v, fmt.Errorf("refund: %w", err))
	case out.Replayed:
		// A second submit of the same form: the refund exists once.
		http.Redirect(w, r, refundedURL(v, p.ID, d.payments.ResourceID(out)), http.StatusSeeOther)
	default:
		refundID := out.Result.Refund.ID
		d.audit(ctx, r, v, v.Mode, paygate.AuditRefundIssued, refundID, form.Amount+" "+p.Amount.Currency+" of payment "+p.ID)
		http.Redirect(w, r, refundedURL(v, p.ID, refundID), http.StatusSeeOther)
	}
}

// refundFingerprintPath is the path a dashboard refund is fingerprinted
// under, with refundFingerprint's body: those of the API request that
// would ask for the same refund, so that a re-submitted form is the same
// request.
const refundFingerprintPath = "/v1/refunds"

// refundFingerprint is the body a refund form is fingerprinted by: the
// form's values as an API client would send them (an empty reason left
// out), the same bytes for the same values every time.
func refundFingerprint(p paygate.Payment, form refundForm) ([]byte, error) {
	m := map[string]string{"transactionId": p.ID, "amount": form.Amount, "currency": p.Amount.Currency}
	if form.Reason != "" {
		m["reason"] = form.Reason
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode refund fingerprint: %w", err)
	}
	return b, nil
}

// refundMessage words an API error of a refund for the page.
func refundMessage(e *paygate.Error) string {
	switch e.Param {
	case "amount":
		return "Amount: " + e.Message
	case "reason":
		return "Reason: " + e.Message
	case "":
		return e.Message
	default:
		return e.Message + " (" + e.Param + ")"
	}
}

// refundedURL is the payment page announcing the refund.
func refundedURL(v *viewer, paymentID, refundID string) string {
	u := modePath(v, "/payments/"+paymentID)
	if refundID != "" {
		u += "?" + url.Values{"refunded": {refundID}}.Encode()
	}
	return u
}
