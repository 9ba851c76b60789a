package dashboard

import "net/http"

// dataRoutes are the pages of a merchant's data: the overview, payments
// (with the refund form) and customers (with their stored cards).
func (d *Dashboard) dataRoutes() []route {
	return []route{
		{method: http.MethodGet, pattern: "/", need: needRead, h: d.overviewPage},
		{method: http.MethodGet, pattern: "/payments", need: needRead, h: d.paymentsPage},
		{method: http.MethodGet, pattern: "/payments.csv", need: needRead, h: d.exportPayments},
		{method: http.MethodGet, pattern: "/payments/{id}", need: needRead, h: d.paymentPage},
		{method: http.MethodGet, pattern: "/payments/{id}/refund", need: needPaymentAction, h: d.confirmRefund},
		{method: http.MethodPost, pattern: "/payments/{id}/refund", need: needPaymentAction, h: d.refundPayment},
		{method: http.MethodPost, pattern: "/payments/{id}/capture", need: needPaymentAction, h: d.capturePayment},
		{method: http.MethodGet, pattern: "/payments/{id}/void", need: needPaymentAction, h: d.confirmVoid},
		{method: http.MethodPost, pattern: "/payments/{id}/void", need: needPaymentAction, h: d.voidPayment},
		{method: http.MethodGet, pattern: "/customers", need: needRead, h: d.customersPage},
		{method: http.MethodGet, pattern: "/customers/{id}", need: needRead, h: d.customerPage},
		{method: http.MethodPost, pattern: "/customers/{id}/cards/{cardId}/delete", need: needPaymentAction, h: d.deleteCard},
	}
}
