package dashboard

import "net/http"

// adminRoutes are the pages of the Developers section (API keys, the
// webhook endpoint and its deliveries), the audit log, the guard and the
// Routing page (routing_page.go), which every role may read.
func (d *Dashboard) adminRoutes() []route {
	return []route{
		{method: http.MethodGet, pattern: "/developers", need: needRead, h: d.developers},
		{method: http.MethodPost, pattern: "/keys", need: needDeveloper, h: d.createKey},
		{method: http.MethodPost, pattern: "/origins", need: needDeveloper, h: d.setOrigins},
		{method: http.MethodGet, pattern: "/keys/{id}/rotate", need: needDeveloper, h: d.rotateKey},
		{method: http.MethodPost, pattern: "/keys/{id}/rotate", need: needDeveloper, h: d.rotateKey},
		{method: http.MethodGet, pattern: "/keys/{id}/revoke", need: needDeveloper, h: d.revokeKey},
		{method: http.MethodPost, pattern: "/keys/{id}/revoke", need: needDeveloper, h: d.revokeKey},
		{method: http.MethodGet, pattern: "/webhook", need: needRead, h: d.webhookPage},
		{method: http.MethodPost, pattern: "/webhook", need: needDeveloper, h: d.setWebhook},
		{method: http.MethodPost, pattern: "/webhook/secret", need: needDeveloper, h: d.revealSecret},
		{method: http.MethodPost, pattern: "/webhook/rotate", need: needDeveloper, h: d.rotateSecret},
		{method: http.MethodPost, pattern: "/webhook/test", need: needDeveloper, h: d.testWebhook},
		{method: http.MethodPost, pattern: "/webhook/resend-failed", need: needDeveloper, h: d.resendFailed},
		{method: http.MethodPost, pattern: "/webhook/backfill", need: needDeveloper, h: d.backfillWebhook},
		{method: http.MethodGet, pattern: "/webhook/deliveries/{id}", need: needRead, h: d.deliveryPage},
		{method: http.MethodPost, pattern: "/webhook/deliveries/{id}/resend", need: needDeveloper, h: d.resendDelivery},
		{method: http.MethodGet, pattern: "/audit", need: needRead, h: d.auditPage},
		{method: http.MethodGet, pattern: "/guard", need: needAdmin, h: d.guardPage},
		{method: http.MethodPost, pattern: "/guard", need: needAdmin, h: d.setGuard},
		{method: http.MethodGet, pattern: "/routing", need: needRead, h: d.routingPage},
	}
}
