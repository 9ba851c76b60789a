package adyen

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/connector"
	"github.com/paygate/paygate/internal/web"
)

// Connector describes Adyen to the generic provider layer: kind adyen,
// credentials api_key and hmac_key, merchant_account and base_url (required
// live: Adyen's live endpoints are account-specific), and the notification
// webhook.
var Connector = connector.Connector{
	Kind:        "adyen",
	Credentials: []string{"api_key", "hmac_key"},
	Settings:    func() any { return new(Settings) },
	Check:       check,
	New: func(e connector.Entry, _ connector.Env) (paygate.Provider, error) {
		s := e.Settings.(*Settings)
		var merchant, baseURL string
		if s.MerchantAccount != nil {
			merchant = *s.MerchantAccount
		}
		if s.BaseURL != nil {
			baseURL = *s.BaseURL
		}
		return New(Config{
			ID: e.ID, APIKey: e.Credentials["api_key"].Reveal(), MerchantAccount: merchant,
			BaseURL: baseURL, HMACKey: e.Credentials["hmac_key"].Reveal(),
			Currencies: e.Currencies, Timeout: e.Timeout,
		})
	},
	Endpoints: func(s connector.Services) map[string]http.Handler {
		return map[string]http.Handler{NotificationPattern: notificationEndpoint{s}}
	},
}

// Settings are an Adyen provider's own keys of its entry.
type Settings struct {
	// MerchantAccount is required (nil: not given).
	MerchantAccount *string `yaml:"merchant_account"`
	// BaseURL is the Checkout API base; nil (not given) is DefaultBaseURL
	// (Adyen's test endpoint).
	BaseURL *string `yaml:"base_url"`
}

func check(e connector.Entry) error {
	s := e.Settings.(*Settings)
	switch {
	case s.MerchantAccount == nil:
		return &connector.KeyError{Msg: fmt.Sprintf("provider %q: kind adyen needs merchant_account", e.ID)}
	case strings.TrimSpace(*s.MerchantAccount) == "":
		return &connector.KeyError{Key: "merchant_account", Msg: fmt.Sprintf("provider %q: merchant_account is empty", e.ID)}
	case e.Mode == paygate.ModeLive && s.BaseURL == nil:
		return &connector.KeyError{Msg: fmt.Sprintf("provider %q: a live adyen provider needs base_url (https://<prefix>-checkout-live.adyenpayments.com/checkout/v71)", e.ID)}
	}
	return connector.CheckBaseURL(e.ID, s.BaseURL)
}

// NotificationPattern is Adyen's notification webhook. Adyen calls it, not
// a merchant: no API key (every item is authenticated by its HMAC
// signature, Provider.AcceptNotifications), no idempotency (Adyen repeats
// a notification until it is accepted, and settling a refund twice changes
// nothing). The answer is the text [accepted] once every item is recorded;
// anything else makes Adyen retry.
const NotificationPattern = "/v1/providers/adyen/{provider}/notifications"

// maxNotificationBody bounds a notification request (Adyen batches up to a
// few items).
const maxNotificationBody = 1 << 20

// notificationEndpoint serves NotificationPattern: it settles the refunds
// the notification's items report.
type notificationEndpoint struct{ s connector.Services }

func (h notificationEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := web.FromContext(r.Context())
	id := r.PathValue("provider")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		req.WriteError(w, r, paygate.Errorf(paygate.CodeMethodNotAllowed, "", "method %s is not allowed here", r.Method))
		return
	}
	prov, ok := h.s.Payments.ProviderByID(id)
	adyen, isAdyen := prov.(interface {
		AcceptNotifications(body []byte) ([]Notification, error)
	})
	if !ok || !isAdyen {
		req.WriteError(w, r, paygate.Errorf(paygate.CodeNotFound, "", "no such Adyen provider"))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxNotificationBody+1))
	if err != nil || len(body) > maxNotificationBody {
		req.WriteError(w, r, paygate.Errorf(paygate.CodeInvalidRequest, "", "the notification could not be read"))
		return
	}
	items, err := adyen.AcceptNotifications(body)
	if err != nil {
		h.s.Logger.Warn("Adyen notification refused", "request_id", req.ID, "provider", id, "error", err.Error())
		req.WriteError(w, r, paygate.Errorf(paygate.CodeUnauthorized, "", "the notification is not authentic"))
		return
	}
	for _, n := range items {
		res, ok := refundOutcome(n)
		if !ok || n.MerchantReference == "" {
			continue
		}
		if err := h.s.Payments.SettleRefund(r.Context(), id, n.MerchantReference, n.OriginalReference, res); err != nil {
			h.s.Logger.Error("settle refund from Adyen notification", "request_id", req.ID,
				"provider", id, "refund", n.MerchantReference, "error", err.Error())
			req.WriteError(w, r, paygate.Errorf(paygate.CodeInternal, "", "the notification could not be recorded"))
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, NotificationAccepted)
}

// refundOutcome is what a refund notification means for our refund: REFUND
// with success true succeeded, with success false failed; REFUND_FAILED
// (the refund failed after Adyen accepted it) failed.
func refundOutcome(n Notification) (paygate.RefundResult, bool) {
	switch {
	case n.EventCode == "REFUND" && n.Success:
		return paygate.RefundResult{Status: paygate.RefundSucceeded, ProviderRef: n.PSPReference}, true
	case n.EventCode == "REFUND" || n.EventCode == "REFUND_FAILED":
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
