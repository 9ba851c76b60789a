package dashboard

import "net/http"

// dataRoutes are the pages of a merchant's data: the overview, payments
// (with the refund form) and customers (with their stored cards).
func (d *Dashboard) dataRoutes() []route {
	return []route{
		{method: http.MethodGet, pattern: "/", h: d.overviewPage},
		{method: http.MethodGet, pattern: "/payments", h: d.paymentsPage},
		{method: http.MethodGet, pattern: "/payments.csv", h: d.exportPayments},
		{method: http.MethodGet, pattern: "/payments/{id}", h: d.paymentPage},
		{method: http.MethodGet, pattern: "/payments/{id}/refund", h: d.confirmRefund},
		{method: http.MethodPost, pattern: "/payments/{id}/refund", h: d.refundPayment},
		{method: http.MethodPost, pattern: "/payments/{id}/capture", h: d.capturePayment},
		{method: http.MethodGet, pattern: "/payments/{id}/void", h: d.confirmVoid},
		{method: http.MethodPost, pattern: "/payments/{id}/void", h: d.voidPayment},
		{method: http.MethodGet, pattern: "/customers", h: d.customersPage},
		{method: http.MethodGet, pattern: "/customers/{id}", h: d.customerPage},
		{method: http.MethodPost, pattern: "/customers/{id}/cards/{cardId}/delete", h: d.deleteCard},
	}
}
