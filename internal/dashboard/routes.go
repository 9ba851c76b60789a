package dashboard

import "net/http"

// adminRoutes are the pages of the Developers section (API keys, the
// webhook endpoint and its deliveries) and the audit log.
func (d *Dashboard) adminRoutes() []route {
	return []route{
		{method: http.MethodGet, pattern: "/developers", h: d.developers},
		{method: http.MethodPost, pattern: "/keys", h: d.createKey},
		{method: http.MethodGet, pattern: "/keys/{id}/rotate", h: d.rotateKey},
		{method: http.MethodPost, pattern: "/keys/{id}/rotate", h: d.rotateKey},
		{method: http.MethodGet, pattern: "/keys/{id}/revoke", h: d.revokeKey},
		{method: http.MethodPost, pattern: "/keys/{id}/revoke", h: d.revokeKey},
		{method: http.MethodGet, pattern: "/webhook", h: d.webhookPage},
		{method: http.MethodPost, pattern: "/webhook", h: d.setWebhook},
		{method: http.MethodPost, pattern: "/webhook/secret", h: d.revealSecret},
		{method: http.MethodPost, pattern: "/webhook/rotate", h: d.rotateSecret},
		{method: http.MethodPost, pattern: "/webhook/test", h: d.testWebhook},
		{method: http.MethodPost, pattern: "/webhook/resend-failed", h: d.resendFailed},
		{method: http.MethodPost, pattern: "/webhook/backfill", h: d.backfillWebhook},
		{method: http.MethodGet, pattern: "/webhook/deliveries/{id}", h: d.deliveryPage},
		{method: http.MethodPost, pattern: "/webhook/deliveries/{id}/resend", h: d.resendDelivery},
		{method: http.MethodGet, pattern: "/audit", h: d.auditPage},
	}
}
