package adyen

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/paygate/paygate/internal/paygate"
)

// NotificationAccepted is the answer Adyen expects to a notification
// request it may consider delivered.
const NotificationAccepted = "[accepted]"

// Notification is one NotificationRequestItem of Adyen's standard webhook.
type Notification struct {
	EventCode           string
	PSPReference        string
	OriginalReference   string
	MerchantAccountCode string
	MerchantReference   string
	Currency            string
	Value               int64
	Success             bool
	Reason              string
}

type notificationRequest struct {
	Live              string `json:"live"`
	NotificationItems []struct {
		Item notificationItem `json:"NotificationRequestItem"`
	} `json:"notificationItems"`
}

type notificationItem struct {
	AdditionalData map[string]string `json:"additionalData"`
	Amount         struct {
		Currency string `json:"currency"`
		Value    int64  `json:"value"`
	} `json:"amount"`
	EventCode           string `json:"eventCode"`
	MerchantAccountCode string `json:"merchantAccountCode"`
	MerchantReference   string `json:"merchantReference"`
	OriginalReference   string `json:"originalReference"`
	PSPReference        string `json:"pspReference"`
	Reason              string `json:"reason"`
	Success             string `json:"success"`
}

// ErrNotificationSignature is the error of a notification whose HMAC
// signature is missing or wrong, or of a connector without an HMAC key.
var ErrNotificationSignature = errors.New("adyen notification: HMAC signature missing or invalid")

// NotificationSignature computes Adyen's HMAC signature of a notification
// item: HMAC-SHA256, keyed with the hex-decoded HMAC key, over
// pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:eventCode:success
// (empty strings for absent fields), base64-encoded.
func NotificationSignature(key []byte, n Notification) string {
	success := "false"
	if n.Success {
		success = "true"
	}
	payload := strings.Join([]string{
		n.PSPReference, n.OriginalReference, n.MerchantAccountCode, n.MerchantReference,
		strconv.FormatInt(n.Value, 10), n.Currency, n.EventCode, success,
	}, ":")
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// AcceptNotifications verifies a notification request's body: every item
// must carry a valid additionalData.hmacSignature and belong to the
// configured merchant account, or the whole request is refused (an error,
// nothing recorded). The AUTHORISATION items are recorded for Inquire (the
// outcome of a charge whose answer never came); every item is returned so
// that the caller can act on the others (REFUND).
func (p *Provider) AcceptNotifications(body []byte) ([]Notification, error) {
	if len(p.hmacKey) == 0 {
		return nil, ErrNotificationSignature
	}
	var req notificationRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, errors.New("adyen notification: the body is not a notification request")
	}
	out := make([]Notification, 0, len(req.NotificationItems))
	for _, wrapped := range req.NotificationItems {
		it := wrapped.Item
		n := Notification{
			EventCode: it.EventCode, PSPReference: it.PSPReference, OriginalReference: it.OriginalReference,
			MerchantAccountCode: it.MerchantAccountCode, MerchantReference: it.MerchantReference,
			Currency: it.Amount.Currency, Value: it.Amount.Value, Success: it.Success == "true", Reason: it.Reason,
		}
		want := NotificationSignature(p.hmacKey, n)
		got := it.AdditionalData["hmacSignature"]
		if got == "" || !hmac.Equal([]byte(got), []byte(want)) {
			return nil, ErrNotificationSignature
		}
		if n.MerchantAccountCode != p.merchant {
			return nil, errors.New("adyen notification: an item of another merchant account")
		}
		out = append(out, n)
	}
	for _, n := range out {
		if n.EventCode == "AUTHORISATION" && n.MerchantReference != "" {
			p.noteAuthorisation(n)
		}
	}
	return out, nil
}

// noteAuthorisation records the outcome an AUTHORISATION notification
// brings: success is captured (every charge asks for immediate capture),
// failure a decline with the reason mapped as a Refused answer's.
func (p *Provider) noteAuthorisation(n Notification) {
	res := paygate.ChargeResult{ProviderRef: n.PSPReference, Status: paygate.PaymentCaptured}
	if !n.Success {
		res.Status = paygate.PaymentFailed
		// The reason of a refused authorisation is Adyen's refusal reason.
		res.DeclineCode, res.Message = declineOf("", n.Reason)
	}
	p.journal.put(n.MerchantReference, entry{sent: true, done: true, result: res})
}
