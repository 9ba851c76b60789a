package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/account"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/webhook"
)

// deliveriesShown is how many of the newest deliveries the webhook page
// lists.
const deliveriesShown = 50

// eventChoice is one checkbox of the subscribed events.
type eventChoice struct {
	Name    string
	Checked bool
}

// webhookData is the webhook page.
type webhookData struct {
	Endpoint *paygate.WebhookEndpointState
	// Form is what the URL field shows; Events the checkboxes. AllEvents
	// is checked when the endpoint takes every event.
	Form      string
	Events    []eventChoice
	AllEvents bool
	// Secret is the revealed signing secret ("" unless asked for).
	Secret string
	// PreviousActive reports whether a rotated-out secret still signs.
	PreviousActive bool
	Deliveries     []paygate.Delivery
	// Filter is the delivery log's filter; Statuses and EventTypes its
	// options. Since is the backfill form's date as typed.
	Filter               deliveryFilter
	Statuses, EventTypes []string
	Since                string
	// From is where a backfill cut short goes on (RFC 3339, exact), "" for a new one.
	From          string
	Error, Notice string
}

// webhookNotices are the messages after a redirect (?done=…).
var webhookNotices = map[string]string{
	"set":    "The webhook endpoint was saved.",
	"tested": "A test event (ping) was queued; it appears in the delivery log below.",
}

// loadWebhook reads the endpoint and the newest deliveries of the mode.
func (d *Dashboard) loadWebhook(r *http.Request, v *viewer) (webhookData, error) {
	ctx := r.Context()
	var data webhookData
	ep, err := d.store.WebhookEndpointState(ctx, v.User.MerchantID, v.Mode)
	switch {
	case err == nil:
		data.Endpoint = &ep
		data.Form = ep.URL
		// Whether the previous secret still signs; it stays sealed here.
		data.PreviousActive = (ep.PreviousSecret != "" || len(ep.SealedPreviousSecret) > 0) &&
			ep.PreviousSecretExpiresAt != nil && d.now().Before(*ep.PreviousSecretExpiresAt)
	case !paygate.IsNotFound(err):
		return data, err
	}
	subscribed := []string(nil)
	if data.Endpoint != nil {
		subscribed = data.Endpoint.Events
	}
	data.AllEvents = len(subscribed) == 0
	for _, n := range account.EventNames() {
		data.Events = append(data.Events, eventChoice{Name: n, Checked: slices.Contains(subscribed, n)})
	}
	data.Statuses, data.EventTypes = deliveryStatuses, deliveryEvents()
	if r.Method == http.MethodGet {
		data.Filter, data.Error = readDeliveryFilter(r.URL.Query())
	}
	data.Deliveries, err = d.store.Deliveries(ctx, paygate.DeliveryQuery{
		MerchantID: v.User.MerchantID, Mode: v.Mode, Limit: deliveriesShown,
		Status: paygate.DeliveryStatus(data.Filter.Status), EventType: paygate.EventType(data.Filter.Event),
	})
	if err != nil {
		return data, fmt.Errorf("list deliveries: %w", err)
	}
	return data, nil
}

// webhookPage serves GET /webhook.
func (d *Dashboard) webhookPage(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	data, err := d.loadWebhook(r, v)
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	data.Notice = webhookNotices[r.URL.Query().Get("done")]
	if data.Notice == "" {
		data.Notice = bulkNotice(r.URL.Query(), v.Loc)
	}
	if next, ok := backfillNext(r.URL.Query()); ok && r.URL.Query().Get("done") == "backfilled" {
		data.From, data.Since = next.UTC().Format(time.RFC3339Nano), next.In(v.Loc).Format(time.DateOnly)
	}
	d.render(w, r, v, http.StatusOK, "webhook", data)
}

// setWebhook serves POST /webhook: the URL and the subscribed events, under
// the rules of `paygate webhook set` (live: https and a public address).
// The signing secret is kept; a first endpoint gets a new one.
func (d *Dashboard) setWebhook(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	ctx := r.Context()
	data, err := d.loadWebhook(r, v)
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	raw := strings.TrimSpace(r.PostFormValue("url"))
	events := r.PostForm["events"]
	// Show what was submitted if it is refused.
	data.Form = raw
	data.AllEvents = len(events) == 0
	for i := range data.Events {
		data.Events[i].Checked = slices.Contains(events, data.Events[i].Name)
	}
	refuse := func(msg string) {
		data.Error = msg
		d.render(w, r, v, http.StatusBadRequest, "webhook", data)
	}
	if raw == "" {
		refuse("Enter the URL of your endpoint.")
		return
	}
	u, err := account.ParseWebhookURL(raw)
	if err != nil {
		refuse("The URL is refused: " + err.Error() + ".")
		return
	}
	if err := account.CheckWebhookTarget(u, v.Mode, d.cfg.Webhooks); err != nil {
		refuse("The URL is " + err.Error() + ".")
		return
	}
	subscribed, err := account.CheckEvents(events)
	if err != nil {
		refuse("The events are refused: " + err.Error() + ".")
		return
	}
	ep, err := account.SetWebhook(ctx, d.store, d.cfg.Vault, v.User.MerchantID, v.Mode, raw, subscribed, false, d.now())
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	detail := "every event"
	if len(ep.Events) > 0 {
		detail = strings.Join(ep.Events, ", ")
	}
	d.audit(ctx, r, v, v.Mode, paygate.AuditWebhookChanged, auditURL(ep.URL), detail)
	http.Redirect(w, r, modePath(v, "/webhook")+"?done=set", http.StatusSeeOther)
}

// revealSecret serves POST /webhook/secret: the page with the signing
// secret shown (a POST, so it is audited and never in a URL or a cache).
func (d *Dashboard) revealSecret(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	data, err := d.loadWebhook(r, v)
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	if data.Endpoint == nil {
		d.fail(w, r, v, paygate.Errorf(paygate.CodeNotFound, "", "no webhook endpoint is set in %s mode", v.Mode))
		return
	}
	ep := *data.Endpoint
	if err := webhook.OpenSecrets(d.cfg.Vault, &ep); err != nil {
		d.fail(w, r, v, err)
		return
	}
	data.Secret = ep.Secret
	d.audit(r.Context(), r, v, v.Mode, paygate.AuditWebhookSecretShown, auditURL(data.Endpoint.URL), "")
	d.render(w, r, v, http.StatusOK, "webhook", data)
}

// rotateSecret serves POST /webhook/rotate: a new signing secret, shown at
// once; the old one keeps signing beside it for 24 hours.
func (d *Dashboard) rotateSecret(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	ctx := r.Context()
	ep, err := d.store.WebhookEndpointState(ctx, v.User.MerchantID, v.Mode)
	if err != nil {
		if paygate.IsNotFound(err) {
			err = paygate.Errorf(paygate.CodeNotFound, "", "no webhook endpoint is set in %s mode", v.Mode)
		}
		d.fail(w, r, v, err)
		return
	}
	next, err := account.SetWebhook(ctx, d.store, d.cfg.Vault, v.User.MerchantID, v.Mode, ep.URL, ep.Events, true, d.now())
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	detail := "old secret signs too for 24h"
	if next.PreviousSecretExpiresAt != nil {
		detail = "old secret signs too until " + formatTime(*next.PreviousSecretExpiresAt, time.UTC)
	}
	d.audit(ctx, r, v, v.Mode, paygate.AuditWebhookRotated, auditURL(next.URL), detail)
	data, err := d.loadWebhook(r, v)
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	data.Secret = next.Secret
	data.Notice = "The signing secret was replaced. The previous one keeps signing deliveries beside it for 24 hours: switch your receiver to the new one."
	d.render(w, r, v, http.StatusOK, "webhook", data)
}

// testWebhook serves POST /webhook/test: a ping event queued to the
// endpoint; the dispatcher sends it at once.
func (d *Dashboard) testWebhook(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	ctx := r.Context()
	ping := paygate.WebhookPing{Event: webhook.PingEvent(v.User.MerchantID, v.Mode, d.now()), DeliveryID: id.New()}
	if err := d.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{ping}}); err != nil {
		d.webhookRefused(w, r, v, err)
		return
	}
	d.wake()
	d.audit(ctx, r, v, v.Mode, paygate.AuditWebhookTested, ping.DeliveryID, "ping event")
	http.Redirect(w, r, modePath(v, "/webhook")+"?done=tested", http.StatusSeeOther)
}

// webhookRefused answers a store refusal to queue a delivery: no endpoint
// (NOT_FOUND) or a disabled one (ErrStateConflict) are told on the page.
func (d *Dashboard) webhookRefused(w http.ResponseWriter, r *http.Request, v *viewer, err error) {
	var msg string
	switch {
	case paygate.IsNotFound(err):
		msg = "There is no webhook endpoint in " + string(v.Mode) + " mode: set one first."
	case errors.Is(err, paygate.ErrStateConflict):
		msg = "The endpoint is disabled (it answered 410 Gone). Save it again to enable it."
	default:
		d.fail(w, r, v, err)
		return
	}
	data, lerr := d.loadWebhook(r, v)
	if lerr != nil {
		d.fail(w, r, v, lerr)
		return
	}
	data.Error = msg
	d.render(w, r, v, http.StatusConflict, "webhook", data)
}

// auditURL is an endpoint URL as the audit log keeps it: a password in
// it (https://user:password@host/) is masked, since the log outlives the
// endpoint and an audit entry never holds a secret.
func auditURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Redacted()
}

// wake asks the dispatcher, when there is one, to send now.
func (d *Dashboard) wake() {
	if d.cfg.Wake != nil {
		d.cfg.Wake()
	}
}

// deliveryData is a delivery's page.
type deliveryData struct {
	Delivery paygate.Delivery
	Attempts []paygate.DeliveryAttempt
	Notice   string
	// Payload is the event's JSON body, indented; PaymentID the payment
	// the event is about ("" when none: a ping).
	Payload   string
	PaymentID string
}

// deliveryOf loads the viewer's delivery named by rawID (any case). When
// there is none, or the store fails, it has answered and returns false: an
// id that cannot be one is not found without asking the store.
func (d *Dashboard) deliveryOf(w http.ResponseWriter, r *http.Request, v *viewer, rawID string) (paygate.Delivery, bool) {
	did := strings.ToLower(rawID)
	if !id.Valid(did) {
		d.fail(w, r, v, paygate.Errorf(paygate.CodeNotFound, "", "no such delivery"))
		return paygate.Delivery{}, false
	}
	dl, err := paygate.DeliveryByID(r.Context(), d.store, v.User.MerchantID, v.Mode, did)
	if err != nil {
		d.fail(w, r, v, err)
		return paygate.Delivery{}, false
	}
	return dl, true
}

// deliveryPage serves GET /webhook/deliveries/{id}: the delivery and each
// attempt.
func (d *Dashboard) deliveryPage(w http.ResponseWriter, r *http.Request, v *viewer, params []string) {
	ctx := r.Context()
	dl, ok := d.deliveryOf(w, r, v, params[0])
	if !ok {
		return
	}
	attempts, err := d.store.DeliveryAttempts(ctx, v.User.MerchantID, v.Mode, dl.ID)
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	// At most 1 KiB of an answer, and nothing of one from a non-public
	// address while the address guard is on (decisions.md section 15).
	for i := range attempts {
		attempts[i].Response = []byte(account.ShownResponse(attempts[i], dl.Mode, d.cfg.Webhooks))
	}
	data := deliveryData{Delivery: dl, Attempts: attempts}
	evs, err := d.store.Events(ctx, paygate.EventQuery{MerchantID: v.User.MerchantID, Mode: v.Mode, ID: dl.EventID, Limit: 1})
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	if len(evs) == 1 {
		data.Payload, data.PaymentID = eventPayload(evs[0].Payload), evs[0].PaymentID
	}
	if r.URL.Query().Get("resent") != "" {
		data.Notice = "The event was queued again as this new delivery, with the same webhook-id."
	}
	d.render(w, r, v, http.StatusOK, "delivery", data)
}

// resendDelivery serves POST /webhook/deliveries/{id}/resend: the
// delivery's event is queued again (a new delivery, same webhook-id).
func (d *Dashboard) resendDelivery(w http.ResponseWriter, r *http.Request, v *viewer, params []string) {
	ctx := r.Context()
	dl, ok := d.deliveryOf(w, r, v, params[0])
	if !ok {
		return
	}
	next := paygate.EventResend{MerchantID: v.User.MerchantID, Mode: v.Mode, EventID: dl.EventID, DeliveryID: id.New(), At: d.now()}
	if err := d.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{next}}); err != nil {
		d.webhookRefused(w, r, v, err)
		return
	}
	d.wake()
	d.audit(ctx, r, v, v.Mode, paygate.AuditWebhookResent, dl.EventID, "as delivery "+next.DeliveryID)
	http.Redirect(w, r, modePath(v, "/webhook/deliveries/"+next.DeliveryID)+"?resent=1", http.StatusSeeOther)
}
