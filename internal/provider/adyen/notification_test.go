package adyen

import (
	"context"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// Adyen's documented example of the notification HMAC (Webhooks > Verify
// HMAC signatures): the key, the item and the signature it must give. The
// signature was computed independently of this package (Python's hmac).
const (
	docHMACKey   = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
	docSignature = "coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0="
)

func notifier(t *testing.T, merchant string) *Provider {
	t.Helper()
	p, err := New(Config{ID: "adyen-eu", APIKey: "k", MerchantAccount: merchant, HMACKey: docHMACKey})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func notificationBody(psp, orig, merchant, ref string, value int64, currency, event string, success bool, sig string) []byte {
	return fmt.Appendf(nil, `{"live":"false","notificationItems":[{"NotificationRequestItem":{
		"additionalData":{"hmacSignature":%q},"amount":{"currency":%q,"value":%d},"eventCode":%q,
		"eventDate":"2026-11-22T04:00:00+01:00","merchantAccountCode":%q,"merchantReference":%q,
		"originalReference":%q,"paymentMethod":"visa","pspReference":%q,"reason":"","success":"%v"}}]}`,
		sig, currency, value, event, merchant, ref, orig, psp, success)
}

func TestNotificationSignatureKnownVector(t *testing.T) {
	key, _ := hex.DecodeString(docHMACKey)
	n := Notification{PSPReference: "7914073381342284", MerchantAccountCode: "TestMerchant",
		MerchantReference: "TestPayment-1407325143704", Value: 1130, Currency: "EUR", EventCode: "AUTHORISATION", Success: true}
	if got := NotificationSignature(key, n); got != docSignature {
		t.Fatalf("signature %s, want %s", got, docSignature)
	}
	p := notifier(t, "TestMerchant")
	items, err := p.AcceptNotifications(notificationBody("7914073381342284", "", "TestMerchant", "TestPayment-1407325143704", 1130, "EUR", "AUTHORISATION", true, docSignature))
	if err != nil || len(items) != 1 || !items[0].Success || items[0].Value != 1130 {
		t.Fatalf("items %+v, %v", items, err)
	}
	// The AUTHORISATION is now what an inquiry answers.
	if q, err := p.Inquire(context.Background(), "TestPayment-1407325143704"); err != nil || q.Status != paygate.InquiryAnswered ||
		q.Result.Status != paygate.PaymentCaptured || q.Result.ProviderRef != "7914073381342284" {
		t.Fatalf("inquiry %+v, %v", q, err)
	}
}

func TestNotificationTamperedRefused(t *testing.T) {
	p := notifier(t, "TestMerchant")
	for name, body := range map[string][]byte{
		"amount changed":  notificationBody("7914073381342284", "", "TestMerchant", "TestPayment-1407325143704", 1131, "EUR", "AUTHORISATION", true, docSignature),
		"success flipped": notificationBody("7914073381342284", "", "TestMerchant", "TestPayment-1407325143704", 1130, "EUR", "AUTHORISATION", false, docSignature),
		"no signature":    notificationBody("7914073381342284", "", "TestMerchant", "TestPayment-1407325143704", 1130, "EUR", "AUTHORISATION", true, ""),
		"not JSON":        []byte("eventCode=AUTHORISATION"),
	} {
		if _, err := p.AcceptNotifications(body); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := p.Inquire(context.Background(), "TestPayment-1407325143704"); err == nil {
		t.Fatal("a refused notification was recorded")
	}
	// Right signature, another merchant account than configured.
	other := notifier(t, "OtherMerchant")
	if _, err := other.AcceptNotifications(notificationBody("7914073381342284", "", "TestMerchant", "TestPayment-1407325143704", 1130, "EUR", "AUTHORISATION", true, docSignature)); err == nil {
		t.Fatal("an item of another merchant account was accepted")
	}
	// No HMAC key configured: nothing is accepted.
	nokey, _ := New(Config{ID: "a", APIKey: "k", MerchantAccount: "TestMerchant", Timeout: time.Second})
	if _, err := nokey.AcceptNotifications(notificationBody("7914073381342284", "", "TestMerchant", "TestPayment-1407325143704", 1130, "EUR", "AUTHORISATION", true, docSignature)); err == nil {
		t.Fatal("accepted without a key")
	}
}

func TestRefundNotification(t *testing.T) {
	p := notifier(t, "TestMerchant")
	// Computed independently (Python's hmac) over
	// 8816178914004522:7914073381342284:TestMerchant:0192f3c4-0000-7000-8000-000000000001:300:EUR:REFUND:false
	const sig = "YNApqh9u5B6Ie5ynBDXeWW30MZKBkhIaPOxexCML8PM="
	items, err := p.AcceptNotifications(notificationBody("8816178914004522", "7914073381342284", "TestMerchant",
		"0192f3c4-0000-7000-8000-000000000001", 300, "EUR", "REFUND", false, sig))
	if err != nil || len(items) != 1 {
		t.Fatalf("items %+v, %v", items, err)
	}
	n := items[0]
	if n.EventCode != "REFUND" || n.Success || n.MerchantReference != "0192f3c4-0000-7000-8000-000000000001" || n.OriginalReference != "7914073381342284" {
		t.Fatalf("item %+v", n)
	}
}
