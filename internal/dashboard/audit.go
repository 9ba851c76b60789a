package dashboard

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// auditData is the audit log page.
type auditData struct {
	Entries       []auditRow
	Older, Newest string
	Error         string
	// Filter is the filter as typed; Actions the options of its action
	// list; Filtered whether any filter applies.
	Filter   auditFilter
	Actions  []auditAction
	Filtered bool
}

// auditRow is an entry with the page of its target, "" when it has none.
type auditRow struct {
	paygate.AuditEntry
	Link string
}

// auditFilter is the audit log's filter (?actor=&action=&from=&to=).
type auditFilter struct {
	Actor, Action, From, To string
}

// values is the filter as query parameters, for the pager's links.
func (f auditFilter) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"actor": f.Actor, "action": f.Action, "from": f.From, "to": f.To} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// auditAction is one option of the action filter.
type auditAction struct {
	Value, Label string
	Selected     bool
}

// auditLabels word the audit actions for people.
var auditLabels = map[string]string{
	paygate.AuditSignIn:             "Signed in",
	paygate.AuditSignInFailed:       "Sign-in failed",
	paygate.AuditSignOut:            "Signed out",
	paygate.AuditPasswordChanged:    "Password changed",
	paygate.AuditKeyCreated:         "API key created",
	paygate.AuditKeyRotated:         "API key rotated",
	paygate.AuditKeyRevoked:         "API key revoked",
	paygate.AuditWebhookChanged:     "Webhook endpoint changed",
	paygate.AuditWebhookSecretShown: "Webhook secret revealed",
	paygate.AuditWebhookRotated:     "Webhook secret rotated",
	paygate.AuditWebhookTested:      "Test event sent",
	paygate.AuditWebhookResent:      "Event resent",
	paygate.AuditWebhookBackfill:    "Earlier events sent",
	paygate.AuditRefundIssued:       "Refund issued",
	paygate.AuditStoredCardDeleted:  "Stored card deleted",
	paygate.AuditMerchantCreated:    "Merchant created",
	paygate.AuditPaymentCaptured:    "Payment captured",
	paygate.AuditPaymentVoided:      "Payment voided",
	paygate.AuditGuardChanged:       "Card-testing guard changed",
	paygate.AuditOriginsChanged:     "Card field origins changed",
	paygate.AuditUserCreated:        "User created",
	paygate.AuditUserRoleChanged:    "Role changed",
	paygate.AuditUserPasswordReset:  "Password reset",
	paygate.AuditUserDisabled:       "User disabled",
	paygate.AuditUserUnlocked:       "Account unlocked",
	paygate.AuditUserLocked:         "Account locked",
	paygate.AuditUserInvited:        "User invited",
	paygate.AuditUserRemoved:        "User removed",
	paygate.AuditUserMFAEnabled:     "Two-step sign-in turned on",
	paygate.AuditUserMFADisabled:    "Two-step sign-in turned off",
	paygate.AuditInvitationRevoked:  "Invitation revoked",
}

// auditLabel words an action; an unknown one is shown as stored.
func auditLabel(action string) string {
	if l, ok := auditLabels[action]; ok {
		return l
	}
	return action
}

// readAuditFilter turns the query into a store query for the merchant,
// with a message per value it could not use (that filter then does not
// apply). Dates are days in loc, both included.
func readAuditFilter(q url.Values, merchantID string, loc *time.Location) (auditFilter, paygate.AuditQuery, []string) {
	f := auditFilter{
		Actor:  strings.ToLower(strings.TrimSpace(q.Get("actor"))),
		Action: q.Get("action"),
		From:   strings.TrimSpace(q.Get("from")),
		To:     strings.TrimSpace(q.Get("to")),
	}
	aq := paygate.AuditQuery{MerchantID: merchantID, Actor: f.Actor}
	var errs []string
	if len(f.Actor) > 254 {
		errs = append(errs, "the actor is an email address or cli")
		f.Actor, aq.Actor = "", ""
	}
	if f.Action != "" {
		if _, ok := auditLabels[f.Action]; !ok {
			errs = append(errs, "there is no action "+strconv.Quote(f.Action))
			f.Action = ""
		}
		aq.Action = f.Action
	}
	day := func(s, name string) (time.Time, bool) {
		if s == "" {
			return time.Time{}, false
		}
		t, err := time.ParseInLocation(time.DateOnly, s, loc)
		if err != nil {
			errs = append(errs, "the "+name+" date is not a day as YYYY-MM-DD")
			return time.Time{}, false
		}
		return t, true
	}
	if t, ok := day(f.From, "from"); ok {
		aq.CreatedFrom = t
	} else {
		f.From = ""
	}
	if t, ok := day(f.To, "to"); ok {
		aq.CreatedBefore = t.AddDate(0, 0, 1) // the whole day
	} else {
		f.To = ""
	}
	return f, aq, errs
}

// auditLink is the page of an entry's target where there is one: a key
// (its row on the Developers page), a delivery, the webhook endpoint, the
// payment of a refund. Pages of a mode are the entry's mode's.
func auditLink(e paygate.AuditEntry) string {
	if e.Mode != paygate.ModeTest && e.Mode != paygate.ModeLive {
		return ""
	}
	base := "/dashboard/" + string(e.Mode)
	// trailingID is the id that ends a detail such as "as delivery ID"
	// or "... of payment ID", written by this package and the CLI.
	trailingID := func(prefix string) string {
		i := strings.LastIndex(e.Detail, prefix)
		if i < 0 {
			return ""
		}
		if s := e.Detail[i+len(prefix):]; id.Valid(s) {
			return s
		}
		return ""
	}
	switch e.Action {
	case paygate.AuditKeyCreated, paygate.AuditKeyRotated, paygate.AuditKeyRevoked:
		if id.Valid(e.Target) {
			return base + "/developers#key-" + e.Target
		}
	case paygate.AuditWebhookTested:
		if id.Valid(e.Target) {
			return base + "/webhook/deliveries/" + e.Target
		}
	case paygate.AuditWebhookResent:
		if d := trailingID("as delivery "); d != "" {
			return base + "/webhook/deliveries/" + d
		}
		return base + "/webhook"
	case paygate.AuditWebhookChanged, paygate.AuditWebhookSecretShown, paygate.AuditWebhookRotated, paygate.AuditWebhookBackfill:
		return base + "/webhook"
	case paygate.AuditRefundIssued:
		if p := trailingID("of payment "); p != "" {
			return base + "/payments/" + p
		}
	}
	return ""
}

// auditPage serves GET /audit: the merchant's audit log of every mode,
// newest first, filtered by actor, action and days, pageSize entries a
// page, "Older" following the keyset with the filter kept.
func (d *Dashboard) auditPage(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	f, q, errs := readAuditFilter(r.URL.Query(), v.User.MerchantID, v.Loc)
	q.Limit = pageSize + 1
	after := r.URL.Query().Get("after")
	if after != "" {
		c, ok := parseCursor(after)
		if !ok {
			d.fail(w, r, v, paygate.Errorf(paygate.CodeInvalidRequest, "after", "the page link is damaged"))
			return
		}
		q.Before = &c
	}
	rows, err := d.store.AuditLog(r.Context(), q)
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	data := auditData{Filter: f}
	if len(errs) > 0 {
		data.Error = "The filter was not applied in full: " + strings.Join(errs, "; ") + "."
	}
	filter := f.values()
	data.Filtered = len(filter) > 0
	var shown []paygate.AuditEntry
	shown, data.Older, data.Newest = pageLinks(modePath(v, "/audit"), filter, after, rows,
		func(e paygate.AuditEntry) (time.Time, string) { return e.CreatedAt, e.ID })
	for _, e := range shown {
		data.Entries = append(data.Entries, auditRow{AuditEntry: e, Link: auditLink(e)})
	}
	for a, l := range auditLabels {
		data.Actions = append(data.Actions, auditAction{Value: a, Label: l, Selected: a == f.Action})
	}
	slices.SortFunc(data.Actions, func(a, b auditAction) int { return strings.Compare(a.Label, b.Label) })
	d.render(w, r, v, http.StatusOK, "audit", data)
}
