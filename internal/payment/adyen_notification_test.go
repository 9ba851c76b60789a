package payment_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider/adyen"
	"github.com/paygate/paygate/internal/provider/connector"
	"github.com/paygate/paygate/internal/ratelimit"
)

const adyenHMACKey = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"

// TestAdyenRefundNotification: a refund the Adyen connector left pending is
// settled by Adyen's REFUND notification posted to
// /v1/providers/adyen/{id}/notifications, without an API key; a tampered
// notification changes nothing.
func TestAdyenRefundNotification(t *testing.T) {
	t.Parallel()
	n := 0
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v71/payments" {
			_, _ = io.WriteString(w, `{"pspReference":"PSP0000000000001","resultCode":"Authorised"}`)
			return
		}
		n++
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"merchantAccount":"M","paymentPspReference":"PSP0000000000001","pspReference":"RFD%013d","status":"received","amount":{"currency":"EUR","value":100}}`, n)
	}))
	defer upstream.Close()
	prov, err := adyen.New(adyen.Config{ID: "adyen-eu", APIKey: "k", MerchantAccount: "M", BaseURL: upstream.URL + "/v71", HMACKey: adyenHMACKey})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, 2*time.Second, prov)
	_, p := f.create(t)
	if p.Status != paygate.PaymentCaptured || p.ProviderRef != "PSP0000000000001" {
		t.Fatalf("payment %+v", p)
	}
	ctx := context.Background()
	var refundIDs []string
	for i, key := range []string{"ik-r1", "ik-r2"} {
		f.req.IdempotencyKey = key
		f.reserve(t, key, key)
		if _, err := f.svc.Refund(ctx, f.req, payment.RefundInput{PaymentID: p.ID, Amount: paygate.Money{Amount: 100, Currency: "EUR"}, AmountText: "1.00"}); err != nil {
			t.Fatalf("refund %d: %v", i, err)
		}
	}
	if got := f.svc.NewRefundWorker(time.Hour, time.Hour).RunOnce(ctx); got != 0 {
		t.Fatalf("the worker finished %d refunds; Adyen refunds stay pending", got)
	}
	refunds, _ := f.st.RefundsByPayment(ctx, "m1", paygate.ModeTest, p.ID)
	for _, r := range refunds {
		if r.Status != paygate.RefundPending {
			t.Fatalf("refund %+v, want pending", r)
		}
		refundIDs = append(refundIDs, r.ID)
	}

	srv := httptest.NewServer(httpapi.New(httpapi.Config{
		Store: f.st, Payments: f.svc, Auth: &auth.Authenticator{Store: f.st}, Limiter: ratelimit.NewMemory(),
		RateLimitTest: 100, RateLimitLive: 100, RateLimitUnauthenticated: 100,
		Endpoints: adyen.Connector.Endpoints(connector.Services{Payments: f.svc, Logger: slog.New(slog.DiscardHandler)}),
	}))
	defer srv.Close()
	key, _ := hex.DecodeString(adyenHMACKey)
	reason := "" // Adyen's reason field of the next notification
	post := func(refundID string, success bool, sig string) (int, string) {
		item := adyen.Notification{PSPReference: "RFD0000000000009", OriginalReference: p.ProviderRef, MerchantAccountCode: "M",
			MerchantReference: refundID, Value: 100, Currency: "EUR", EventCode: "REFUND", Success: success}
		if sig == "" {
			sig = adyen.NotificationSignature(key, item)
		}
		body := fmt.Sprintf(`{"live":"false","notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":%q},`+
			`"amount":{"currency":"EUR","value":100},"eventCode":"REFUND","merchantAccountCode":"M","merchantReference":%q,`+
			`"originalReference":%q,"pspReference":"RFD0000000000009","reason":%q,"success":"%v"}}]}`, sig, refundID, p.ProviderRef, reason, success)
		resp, err := http.Post(srv.URL+"/v1/providers/adyen/adyen-eu/notifications", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status := func(id string) paygate.RefundStatus {
		r, err := f.st.RefundByID(ctx, "m1", paygate.ModeTest, id)
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}

	// Tampered: signed as a success, sent as a failure.
	good := adyen.NotificationSignature(key, adyen.Notification{PSPReference: "RFD0000000000009", OriginalReference: p.ProviderRef,
		MerchantAccountCode: "M", MerchantReference: refundIDs[0], Value: 100, Currency: "EUR", EventCode: "REFUND", Success: true})
	if code, _ := post(refundIDs[0], false, good); code != http.StatusUnauthorized {
		t.Fatalf("tampered notification: HTTP %d", code)
	}
	if s := status(refundIDs[0]); s != paygate.RefundPending {
		t.Fatalf("a tampered notification changed the refund to %s", s)
	}

	if code, body := post(refundIDs[0], true, ""); code != http.StatusOK || body != "[accepted]" {
		t.Fatalf("success notification: HTTP %d %q", code, body)
	}
	// The failure gives Adyen's reason, with anything that could be a
	// card number masked.
	reason = "Refund rejected for card 4111 1111 1111 1111 by the issuer"
	if code, body := post(refundIDs[1], false, ""); code != http.StatusOK || body != "[accepted]" {
		t.Fatalf("failure notification: HTTP %d %q", code, body)
	}
	reason = ""
	const wantMessage = "Adyen refused the refund: Refund rejected for card [redacted] by the issuer"
	if r, err := f.st.RefundByID(ctx, "m1", paygate.ModeTest, refundIDs[1]); err != nil ||
		r.ErrorCode != "PROVIDER_ERROR" || r.ErrorMessage != wantMessage || strings.Contains(r.FailureReason, "1111") {
		t.Fatalf("failed refund %+v %v; want PROVIDER_ERROR %q", r, err, wantMessage)
	}
	if r, err := f.st.RefundByID(ctx, "m1", paygate.ModeTest, refundIDs[0]); err != nil || r.ErrorCode != "" || r.ErrorMessage != "" {
		t.Fatalf("succeeded refund %+v %v; want no error", r, err)
	}
	if s := status(refundIDs[0]); s != paygate.RefundSucceeded {
		t.Fatalf("refund 0 is %s, want succeeded", s)
	}
	if s := status(refundIDs[1]); s != paygate.RefundFailed {
		t.Fatalf("refund 1 is %s, want failed", s)
	}
	// A repeated notification is accepted and changes nothing.
	if code, _ := post(refundIDs[1], true, ""); code != http.StatusOK || status(refundIDs[1]) != paygate.RefundFailed {
		t.Fatalf("repeated notification: HTTP %d, status %s", code, status(refundIDs[1]))
	}
	events, err := f.st.Events(ctx, paygate.EventQuery{MerchantID: "m1", Mode: paygate.ModeTest})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, e := range events {
		if strings.HasPrefix(string(e.Type), "refund.") {
			seen = append(seen, string(e.Type))
		}
		if e.Type == paygate.EventRefundFailed && (!strings.Contains(string(e.Payload), `"errorCode":"PROVIDER_ERROR","errorMessage":"`+wantMessage+`"`) ||
			strings.Contains(string(e.Payload), "1111")) {
			t.Fatalf("refund.failed payload %s", e.Payload)
		}
	}
	if got := strings.Join(seen, ","); !strings.Contains(got, "refund.succeeded") || !strings.Contains(got, "refund.failed") {
		t.Fatalf("refund events %s", got)
	}
	// An unknown provider id, or one that is not Adyen.
	resp, err := http.Post(srv.URL+"/v1/providers/adyen/nope/notifications", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown provider: HTTP %d", resp.StatusCode)
	}
}
