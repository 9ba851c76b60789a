package dashboard

import (
	"net/http"
	"net/url"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// auditData is the audit log page.
type auditData struct {
	Entries       []paygate.AuditEntry
	Older, Newest string
	Error         string
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
	paygate.AuditRefundIssued:       "Refund issued",
	paygate.AuditStoredCardDeleted:  "Stored card deleted",
}

// auditLabel words an action; an unknown one is shown as stored.
func auditLabel(action string) string {
	if l, ok := auditLabels[action]; ok {
		return l
	}
	return action
}

// auditPage serves GET /audit: the merchant's audit log of every mode,
// newest first, pageSize entries a page, "Older" following the keyset.
func (d *Dashboard) auditPage(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	q := paygate.AuditQuery{MerchantID: v.User.MerchantID, Limit: pageSize + 1}
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
	var data auditData
	data.Entries, data.Older, data.Newest = pageLinks(modePath(v, "/audit"), url.Values{}, after, rows,
		func(e paygate.AuditEntry) (time.Time, string) { return e.CreatedAt, e.ID })
	d.render(w, r, v, http.StatusOK, "audit", data)
}
