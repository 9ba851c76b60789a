package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/account"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/webhook"
)

// Operator tools of webhook delivery (issue 3): the delivery log, resending
// an event, and a signed ping. Deliveries are made by the dispatcher of a
// running serve; resend and test enqueue one, and --wait waits for its
// first attempt.

// defaultDeliveriesLimit bounds the delivery log printed by default.
const defaultDeliveriesLimit = 50

// deliveryJSON is one delivery in the --json output of webhook deliveries,
// resend and test.
type deliveryJSON struct {
	ID             string        `json:"id"`
	EventID        string        `json:"eventId"`
	Event          string        `json:"event"`
	MerchantID     string        `json:"merchantId"`
	Mode           string        `json:"mode"`
	Status         string        `json:"status"`
	Attempts       int           `json:"attempts"`
	NextAttemptAt  *string       `json:"nextAttemptAt"`  // null unless pending
	LastAttemptAt  *string       `json:"lastAttemptAt"`  // null before the first attempt ends
	LastStatusCode *int          `json:"lastStatusCode"` // null when no HTTP answer came
	LastError      string        `json:"lastError"`
	CreatedAt      string        `json:"createdAt"`
	UpdatedAt      string        `json:"updatedAt"`
	History        []attemptJSON `json:"history"`
}

// attemptJSON is one recorded attempt.
type attemptJSON struct {
	Attempt    int     `json:"attempt"`
	At         string  `json:"at"`
	URL        string  `json:"url"`
	StatusCode *int    `json:"statusCode"` // null when no HTTP answer came
	LatencyMs  float64 `json:"latencyMs"`
	Response   string  `json:"response"` // the first KiB of the answer
	Error      string  `json:"error"`
}

// toDeliveryJSON renders a delivery and its attempts; an attempt's answer
// as account.ShownResponse gives it under p: at most 1 KiB, and nothing
// from a non-public address while the address guard is on.
func toDeliveryJSON(d paygate.Delivery, attempts []paygate.DeliveryAttempt, p webhook.Policy) deliveryJSON {
	out := deliveryJSON{
		ID: d.ID, EventID: d.EventID, Event: string(d.EventType), MerchantID: d.MerchantID, Mode: string(d.Mode),
		Status: string(d.Status), Attempts: d.Attempts, LastAttemptAt: formatTimePtr(d.LastAttemptAt),
		LastStatusCode: nonZero(d.LastStatusCode), LastError: d.LastError,
		CreatedAt: formatTime(d.CreatedAt), UpdatedAt: formatTime(d.UpdatedAt), History: []attemptJSON{},
	}
	if d.Status == paygate.DeliveryPending {
		out.NextAttemptAt = formatTimePtr(&d.NextAttemptAt)
	}
	for _, a := range attempts {
		out.History = append(out.History, attemptJSON{
			Attempt: a.Number, At: formatTime(a.StartedAt), URL: a.URL, StatusCode: nonZero(a.StatusCode),
			LatencyMs: float64(a.Latency.Microseconds()) / 1000, Response: account.ShownResponse(a, d.Mode, p),
			Error: a.Error,
		})
	}
	return out
}

func nonZero(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

func cmdWebhookDeliveries(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("webhook deliveries", "--merchant ID [--mode test|live] [--status pending|succeeded|failed] [--event EVENT_ID] [--limit 50] [--allow-private-test-webhooks=true] [--json] [--database-url URL]")
	var dbURL, merchantID, mode, status, eventID string
	var limit int
	var asJSON, allowPrivate bool
	fs.databaseURL(&dbURL)
	allowPrivateTestWebhooksFlag(fs, &allowPrivate)
	fs.StringVar(&merchantID, "merchant", "", "merchant `ID` (required)")
	fs.Var(modeFlag{&mode}, "mode", "only this mode, `test|live` (default: both)")
	fs.StringVar(&status, "status", "", "only deliveries in this `status`: pending, succeeded or failed")
	fs.StringVar(&eventID, "event", "", "only the deliveries of this event `ID`")
	fs.IntVar(&limit, "limit", defaultDeliveriesLimit, "list at most `N` deliveries, newest first (0: all)")
	fs.BoolVar(&asJSON, "json", false, "print the deliveries, with their attempts, as one line of JSON")
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "merchant"); err != nil {
		return err
	}
	if status != "" && !paygate.DeliveryStatus(status).Valid() {
		return usageErrorf("--status %q must be pending, succeeded or failed", status)
	}
	if limit < 0 {
		return usageErrorf("--limit must not be negative")
	}
	if eventID != "" && !id.Valid(eventID) {
		return usageErrorf("--event %q is not an event id", eventID)
	}
	var out []deliveryJSON
	err := withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		m, err := findMerchant(ctx, st, dbURL, merchantID)
		if err != nil {
			return err
		}
		ds, err := st.Deliveries(ctx, paygate.DeliveryQuery{
			MerchantID: m.ID, Mode: paygate.Mode(mode), Status: paygate.DeliveryStatus(status), EventID: eventID, Limit: limit,
		})
		if err != nil {
			return fmt.Errorf("list deliveries: %w", err)
		}
		out = make([]deliveryJSON, 0, len(ds))
		for _, d := range ds {
			attempts, err := st.DeliveryAttempts(ctx, d.MerchantID, d.Mode, d.ID)
			if err != nil {
				return fmt.Errorf("list attempts of delivery %s: %w", d.ID, err)
			}
			out = append(out, toDeliveryJSON(d, attempts, webhookPolicy(allowPrivate)))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c.stdout, out)
	}
	if len(out) == 0 {
		_, err := fmt.Fprintln(c.stdout, "No deliveries.")
		return err
	}
	for _, d := range out {
		last := "-"
		if d.LastStatusCode != nil {
			last = fmt.Sprint(*d.LastStatusCode)
		}
		line := fmt.Sprintf("%s  %s  %-18s %-4s %-9s attempts=%d last=%s", d.CreatedAt, d.EventID, d.Event, d.Mode, d.Status, d.Attempts, last)
		if d.NextAttemptAt != nil {
			line += " next=" + *d.NextAttemptAt
		}
		if d.LastError != "" {
			line += "  " + d.LastError
		}
		if _, err := fmt.Fprintln(c.stdout, line); err != nil {
			return err
		}
	}
	return nil
}

func cmdWebhookResend(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("webhook resend", "--event EVENT_ID [--wait DURATION] [--allow-private-test-webhooks=true] [--json] [--database-url URL]")
	var dbURL, eventID string
	var wait time.Duration
	var asJSON, allowPrivate bool
	fs.databaseURL(&dbURL)
	allowPrivateTestWebhooksFlag(fs, &allowPrivate)
	fs.StringVar(&eventID, "event", "", "the `ID` of the event to deliver again (required)")
	fs.DurationVar(&wait, "wait", 0, "wait up to `DURATION` for the first attempt of a running serve (default: do not wait)")
	fs.BoolVar(&asJSON, "json", false, "print the new delivery as one line of JSON")
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "event"); err != nil {
		return err
	}
	if wait < 0 {
		return usageErrorf("--wait must not be negative")
	}
	policy := webhookPolicy(allowPrivate)
	return enqueue(ctx, c, dbURL, wait, asJSON, policy, func(ctx context.Context, st paygate.Store) (paygate.Delivery, error) {
		if !id.Valid(eventID) {
			return paygate.Delivery{}, notFound("event", eventID, dbURL)
		}
		// A resend to an endpoint the guard refuses is queued like any
		// delivery; the serve's dispatcher refuses to connect and records
		// why.
		t := now()
		d, err := st.ResendEvent(ctx, eventID, id.New(), t)
		if paygate.IsNotFound(err) {
			return d, fmt.Errorf("resend event %s: %s (database %s)", eventID, storeMessage(err), redactURL(dbURL))
		}
		if err != nil {
			return d, fmt.Errorf("resend event %s: %s", eventID, storeMessage(err))
		}
		// ResendEvent is its own transaction: the entry follows it (as
		// the dashboard's does), and a failure to write it says so.
		e := account.CLI.Entry(d.MerchantID, d.Mode, paygate.AuditWebhookResent, eventID, "as delivery "+d.ID, t)
		if err := st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{e}}); err != nil {
			return d, fmt.Errorf("event %s is queued again as delivery %s, but its audit entry was not written: %w", eventID, d.ID, err)
		}
		return d, nil
	})
}

func cmdWebhookTest(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("webhook test", "--merchant ID --mode test|live [--wait DURATION] [--allow-private-test-webhooks=true] [--json] [--database-url URL]")
	var dbURL, merchantID, mode string
	var wait time.Duration
	var asJSON, allowPrivate bool
	fs.databaseURL(&dbURL)
	allowPrivateTestWebhooksFlag(fs, &allowPrivate)
	fs.StringVar(&merchantID, "merchant", "", "merchant `ID` (required)")
	fs.Var(modeFlag{&mode}, "mode", "the endpoint's mode, `test|live` (required)")
	fs.DurationVar(&wait, "wait", 0, "wait up to `DURATION` for the first attempt of a running serve (default: do not wait)")
	fs.BoolVar(&asJSON, "json", false, "print the ping's delivery as one line of JSON")
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "merchant", "mode"); err != nil {
		return err
	}
	if wait < 0 {
		return usageErrorf("--wait must not be negative")
	}
	policy := webhookPolicy(allowPrivate)
	return enqueue(ctx, c, dbURL, wait, asJSON, policy, func(ctx context.Context, st paygate.Store) (paygate.Delivery, error) {
		m, err := findMerchant(ctx, st, dbURL, merchantID)
		if err != nil {
			return paygate.Delivery{}, err
		}
		// An endpoint the address guard refuses gets its ping queued like
		// any delivery: serve's dispatcher refuses to connect, and the
		// refusal is the attempt's error (as for a live endpoint).
		t := now()
		ping := paygate.WebhookPing{Event: webhook.PingEvent(m.ID, paygate.Mode(mode), t), DeliveryID: id.New()}
		audit := account.CLI.Entry(m.ID, paygate.Mode(mode), paygate.AuditWebhookTested, ping.DeliveryID, "ping event", t)
		if err := st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{ping, audit}}); err != nil {
			return paygate.Delivery{}, fmt.Errorf("send a ping to the %s endpoint of merchant %s: %s", mode, m.ID, storeMessage(err))
		}
		d, err := paygate.DeliveryByID(ctx, st, m.ID, paygate.Mode(mode), ping.DeliveryID)
		if err != nil {
			return d, fmt.Errorf("read delivery %s: %w", ping.DeliveryID, err)
		}
		return d, nil
	})
}

// enqueue runs add (which inserts a delivery), waits up to wait for its
// first attempt to finish, and prints the delivery.
func enqueue(ctx context.Context, c *cli, dbURL string, wait time.Duration, asJSON bool, p webhook.Policy, add func(context.Context, paygate.Store) (paygate.Delivery, error)) error {
	var out deliveryJSON
	err := withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		d, err := add(ctx, st)
		if err != nil {
			return err
		}
		deadline := time.Now().Add(wait)
		for d.Status == paygate.DeliveryPending && d.LastAttemptAt == nil && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
			if d, err = paygate.DeliveryByID(ctx, st, d.MerchantID, d.Mode, d.ID); err != nil {
				return fmt.Errorf("read delivery %s: %w", d.ID, err)
			}
		}
		attempts, err := st.DeliveryAttempts(ctx, d.MerchantID, d.Mode, d.ID)
		if err != nil {
			return fmt.Errorf("list attempts of delivery %s: %w", d.ID, err)
		}
		out = toDeliveryJSON(d, attempts, p)
		return nil
	})
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c.stdout, out)
	}
	msg := fmt.Sprintf("Delivery %s of event %s (%s) is %s", out.ID, out.EventID, out.Event, out.Status)
	switch {
	case out.LastAttemptAt != nil && out.LastStatusCode != nil:
		msg += fmt.Sprintf("; the endpoint answered %d", *out.LastStatusCode)
	case out.LastAttemptAt != nil:
		msg += "; the attempt failed: " + out.LastError
	case out.Status == string(paygate.DeliveryPending):
		msg += "; a running serve sends it"
	}
	_, err = fmt.Fprintln(c.stdout, msg+".")
	return err
}

// storeMessage renders a store error for an operator: the message of a
// NOT_FOUND or of a conflict (a disabled endpoint), the error otherwise.
func storeMessage(err error) string {
	var pe *paygate.Error
	switch {
	case errors.As(err, &pe) && pe.Code == paygate.CodeNotFound && pe.Message != "":
		return strings.TrimSuffix(strings.ToLower(pe.Message[:1])+pe.Message[1:], ".")
	case errors.Is(err, paygate.ErrStateConflict):
		// "the webhook endpoint is disabled since ...; set it again to enable it"
		return strings.TrimPrefix(err.Error(), paygate.ErrStateConflict.Error()+": ")
	default:
		return err.Error()
	}
}
