package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/account"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// maxBulkResend bounds the deliveries one "resend all failed" or one
// backfill queues: one unit of work, one transaction of bounded size.
const maxBulkResend = 500

// deliveryFilter is the delivery log's filter (?status=&event=), as typed.
type deliveryFilter struct {
	Status, Event string
}

// deliveryStatuses are the options of the status filter.
var deliveryStatuses = []string{string(paygate.DeliveryPending), string(paygate.DeliverySucceeded), string(paygate.DeliveryFailed)}

// deliveryEvents are the options of the event filter: every event type,
// and ping.
func deliveryEvents() []string { return append(account.EventNames(), string(paygate.EventPing)) }

// readDeliveryFilter reads the filter from the query; a value that is not
// an option is dropped with a message.
func readDeliveryFilter(q url.Values) (deliveryFilter, string) {
	f := deliveryFilter{Status: q.Get("status"), Event: q.Get("event")}
	var msgs []string
	if f.Status != "" && !slices.Contains(deliveryStatuses, f.Status) {
		msgs = append(msgs, "there is no delivery status "+strconv.Quote(f.Status))
		f.Status = ""
	}
	if f.Event != "" && !slices.Contains(deliveryEvents(), f.Event) {
		msgs = append(msgs, "there is no event "+strconv.Quote(f.Event))
		f.Event = ""
	}
	if len(msgs) == 0 {
		return f, ""
	}
	return f, "The filter was not applied in full: " + strings.Join(msgs, "; ") + "."
}

// auditEntry is an audit entry of the viewer's action in the mode, to
// commit in the action's unit.
func (d *Dashboard) auditEntry(r *http.Request, v *viewer, action, target, detail string, at time.Time) paygate.AuditEntry {
	return paygate.AuditEntry{
		ID: newID(), MerchantID: v.User.MerchantID, Mode: v.Mode, UserID: v.User.ID, Email: v.User.Email,
		Action: action, Target: target, Detail: detail, RemoteAddr: clientAddr(r), CreatedAt: at,
	}
}

// resendFailed serves POST /webhook/resend-failed: every event of the
// mode whose every delivery failed is queued again (a new delivery, same
// webhook-id, the path of a single resend), at most maxBulkResend at once,
// in one unit with its audit entry.
func (d *Dashboard) resendFailed(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	ctx := r.Context()
	// Only deliveries of events whose every delivery failed: an event
	// resent since (pending or delivered) is left out by the query, so
	// each run reaches further back. One more than a run queues: more
	// leave work for another run (said so), and the read stays bounded.
	failed, err := d.store.Deliveries(ctx, paygate.DeliveryQuery{
		MerchantID: v.User.MerchantID, Mode: v.Mode, Status: paygate.DeliveryFailed, EventAllFailed: true,
		Limit: maxBulkResend + 1,
	})
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	now := d.now()
	u := paygate.Unit{}
	seen := map[string]bool{}
	more := false
	for _, dl := range failed {
		if seen[dl.EventID] {
			continue
		}
		seen[dl.EventID] = true
		if len(u.Ops) == maxBulkResend {
			more = true
			break
		}
		u.Add(paygate.EventResend{MerchantID: v.User.MerchantID, Mode: v.Mode, EventID: dl.EventID, DeliveryID: id.New(), At: now})
	}
	if len(failed) > maxBulkResend {
		more = true
	}
	n := len(u.Ops)
	if n > 0 {
		u.Add(d.auditEntry(r, v, paygate.AuditWebhookResent, "failed deliveries", fmt.Sprintf("%d failed events queued again", n), now))
		if err := d.store.Commit(ctx, u); err != nil {
			d.webhookRefused(w, r, v, err)
			return
		}
		d.wake()
	}
	q := url.Values{"done": {"resent-failed"}, "n": {strconv.Itoa(n)}}
	if more {
		q.Set("more", "1")
	}
	http.Redirect(w, r, modePath(v, "/webhook")+"?"+q.Encode(), http.StatusSeeOther)
}

// backfillWebhook serves POST /webhook/backfill: the events of the mode
// created from a date (in the viewer's zone) until the endpoint was
// created, which it never received, are queued to it as new deliveries,
// those of the types it subscribes to, oldest first, at most
// maxBulkResend at once, in one unit with its audit entry.
func (d *Dashboard) backfillWebhook(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	ctx := r.Context()
	refuse := func(status int, msg string) {
		data, err := d.loadWebhook(r, v)
		if err != nil {
			d.fail(w, r, v, err)
			return
		}
		data.Since = r.PostFormValue("since")
		data.From = r.PostFormValue("from")
		data.Error = msg
		d.render(w, r, v, status, "webhook", data)
	}
	ep, err := d.store.WebhookEndpointState(ctx, v.User.MerchantID, v.Mode)
	if err != nil {
		d.webhookRefused(w, r, v, err)
		return
	}
	day, err := time.ParseInLocation(time.DateOnly, strings.TrimSpace(r.PostFormValue("since")), v.Loc)
	if err != nil {
		refuse(http.StatusBadRequest, "The date is refused: give a day as YYYY-MM-DD.")
		return
	}
	if !day.Before(ep.CreatedAt) {
		refuse(http.StatusBadRequest, "The endpoint was created at "+formatTime(ep.CreatedAt, v.Loc)+
			": give an earlier day. Events since then were already sent to it.")
		return
	}
	from := day
	// A run cut at maxBulkResend goes on from where it stopped: the form
	// carries the exact time of the first event not sent (?from=).
	if after, err := time.Parse(time.RFC3339Nano, r.PostFormValue("from")); err == nil && after.After(from) {
		from = after
	}
	now := d.now()
	u := paygate.Unit{}
	var sentAt []time.Time // of u.Ops, in order
	var next *time.Time
	seen := map[string]bool{}
	// Bounded reads, a page at a time (events not subscribed to are
	// skipped, so one page may not fill a run).
read:
	for {
		events, err := d.store.Events(ctx, paygate.EventQuery{
			MerchantID: v.User.MerchantID, Mode: v.Mode, CreatedFrom: from, CreatedBefore: ep.CreatedAt, Limit: maxBulkResend + 1,
		})
		if err != nil {
			d.fail(w, r, v, err)
			return
		}
		progressed := false
		for _, e := range events {
			if seen[e.ID] {
				continue
			}
			seen[e.ID], progressed = true, true
			if e.Type == paygate.EventPing || !ep.Subscribed(e.Type) {
				continue
			}
			if len(u.Ops) == maxBulkResend {
				next = &e.CreatedAt
				break read
			}
			u.Add(paygate.EventResend{MerchantID: v.User.MerchantID, Mode: v.Mode, EventID: e.ID, DeliveryID: id.New(), At: now})
			sentAt = append(sentAt, e.CreatedAt)
		}
		if len(events) <= maxBulkResend || !progressed {
			break
		}
		from = events[len(events)-1].CreatedAt
	}
	if next != nil {
		// The next run starts at the first event not sent, inclusive: the
		// events of that same instant wait for it too, so that the next
		// run begins strictly after the last event sent.
		keep := len(sentAt)
		for keep > 0 && sentAt[keep-1].Equal(*next) {
			keep--
		}
		if keep > 0 {
			u.Ops = u.Ops[:keep]
		}
	}
	n := len(u.Ops)
	if n > 0 {
		u.Add(d.auditEntry(r, v, paygate.AuditWebhookBackfill, auditURL(ep.URL),
			fmt.Sprintf("%d events created since %s queued", n, day.Format(time.DateOnly)), now))
		if err := d.store.Commit(ctx, u); err != nil {
			d.webhookRefused(w, r, v, err)
			return
		}
		d.wake()
	}
	q := url.Values{"done": {"backfilled"}, "n": {strconv.Itoa(n)}}
	if next != nil {
		q.Set("next", next.UTC().Format(time.RFC3339Nano))
	}
	http.Redirect(w, r, modePath(v, "/webhook")+"?"+q.Encode(), http.StatusSeeOther)
}

// backfillNext is where a backfill cut at maxBulkResend goes on, from the
// redirect's query (?next=, the exact time of the first event not sent);
// false when there is none.
func backfillNext(q url.Values) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, q.Get("next"))
	return t, err == nil
}

// bulkNotice is the message after a resend of the failed deliveries or a
// backfill, from the redirect's query; "" for other pages. loc is the
// viewer's zone.
func bulkNotice(q url.Values, loc *time.Location) string {
	n, err := strconv.Atoi(q.Get("n"))
	if err != nil || n < 0 {
		return ""
	}
	plural := func(n int, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return strconv.Itoa(n) + " " + many
	}
	switch q.Get("done") {
	case "resent-failed":
		if n == 0 {
			return "There was no failed delivery to resend."
		}
		msg := plural(n, "failed event was", "failed events were") + " queued again, each as a new delivery with the same webhook-id."
		if q.Get("more") != "" {
			msg += fmt.Sprintf(" At most %d are queued at once: resend again for the others.", maxBulkResend)
		}
		return msg
	case "backfilled":
		if n == 0 {
			return "No event of the subscribed types was created in that period."
		}
		msg := plural(n, "event created before the endpoint existed was", "events created before the endpoint existed were") + " queued to it."
		if next, ok := backfillNext(q); ok {
			msg += fmt.Sprintf(" At most %d are queued at once; the next was created at %s: send again to go on from it.", maxBulkResend, formatTime(next, loc))
		}
		return msg
	}
	return ""
}

// eventPayload is the event's JSON body as delivered, indented for
// reading; the template escapes it. A body that is not JSON is shown as
// it is.
func eventPayload(body []byte) string {
	var b bytes.Buffer
	if err := json.Indent(&b, body, "", "  "); err != nil {
		return string(body)
	}
	return b.String()
}
