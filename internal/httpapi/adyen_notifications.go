package httpapi

import (
	"io"
	"net/http"
	"strings"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/adyen"
)

// Adyen's notification webhook: POST /v1/providers/adyen/{providerID}/notifications.
// Adyen calls it, not a merchant: no API key (every item is authenticated
// by its HMAC signature, adyen.Provider.AcceptNotifications), no
// idempotency (Adyen repeats a notification until it is accepted, and
// settling a refund twice changes nothing). The answer is the text
// [accepted] once every item is recorded; anything else makes Adyen retry.
const adyenNotificationPrefix = "/v1/providers/adyen/"

// maxNotificationBody bounds a notification request (Adyen batches up to a
// few items).
const maxNotificationBody = 1 << 20

// adyenNotificationProvider returns the provider id of a notification path.
func adyenNotificationProvider(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, adyenNotificationPrefix)
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, "/notifications")
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}

type adyenNotifier interface {
	AcceptNotifications(body []byte) ([]adyen.Notification, error)
}

func (s *Server) serveAdyenNotification(w http.ResponseWriter, r *http.Request) {
	id, _ := adyenNotificationProvider(r.URL.Path)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.writeError(w, r, paygate.Errorf(paygate.CodeMethodNotAllowed, "", "method %s is not allowed here", r.Method))
		return
	}
	prov, ok := s.cfg.Payments.ProviderByID(id)
	an, isAdyen := prov.(adyenNotifier)
	if !ok || !isAdyen {
		s.writeError(w, r, paygate.Errorf(paygate.CodeNotFound, "", "no such Adyen provider"))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxNotificationBody+1))
	if err != nil || len(body) > maxNotificationBody {
		s.writeError(w, r, paygate.Errorf(paygate.CodeInvalidRequest, "", "the notification could not be read"))
		return
	}
	items, err := an.AcceptNotifications(body)
	if err != nil {
		s.log.Warn("Adyen notification refused", "request_id", stateOf(r.Context()).requestID, "provider", id, "error", err.Error())
		s.writeError(w, r, paygate.Errorf(paygate.CodeUnauthorized, "", "the notification is not authentic"))
		return
	}
	for _, n := range items {
		res, ok := refundOutcome(n)
		if !ok || n.MerchantReference == "" {
			continue
		}
		if err := s.cfg.Payments.SettleRefund(r.Context(), id, n.MerchantReference, n.OriginalReference, res); err != nil {
			s.log.Error("settle refund from Adyen notification", "request_id", stateOf(r.Context()).requestID,
				"provider", id, "refund", n.MerchantReference, "error", err.Error())
			s.writeError(w, r, paygate.Errorf(paygate.CodeInternal, "", "the notification could not be recorded"))
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, adyen.NotificationAccepted)
}

// refundOutcome is what a refund notification means for our refund: REFUND
// with success true succeeded, with success false failed; REFUND_FAILED
// (the refund failed after Adyen accepted it) failed.
func refundOutcome(n adyen.Notification) (paygate.RefundResult, bool) {
	switch {
	case n.EventCode == "REFUND" && n.Success:
		return paygate.RefundResult{Status: paygate.RefundSucceeded, ProviderRef: n.PSPReference}, true
	case n.EventCode == "REFUND":
		return paygate.RefundResult{Status: paygate.RefundFailed, ProviderRef: n.PSPReference, FailureReason: refundFailure(n.Reason)}, true
	case n.EventCode == "REFUND_FAILED":
		return paygate.RefundResult{Status: paygate.RefundFailed, ProviderRef: n.PSPReference, FailureReason: refundFailure(n.Reason)}, true
	}
	return paygate.RefundResult{}, false
}

func refundFailure(reason string) string {
	if reason == "" {
		return "Adyen refused the refund."
	}
	if len(reason) > 200 {
		reason = reason[:200]
	}
	return "Adyen refused the refund: " + reason
}
