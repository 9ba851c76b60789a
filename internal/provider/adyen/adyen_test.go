package adyen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

const (
	testPAN      = "4111111111111111"
	testPayment  = "0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b"
	testPSP      = "QFQTPCQ8HXSKGK82"
	testMerchant = "PaygateECOM"
)

func newProvider(t *testing.T, base string, timeout time.Duration) *Provider {
	t.Helper()
	p, err := New(Config{ID: "adyen-eu", APIKey: "AQE_test_key", MerchantAccount: testMerchant, BaseURL: base,
		Currencies: []string{"eur", "GBP"}, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func chargeReq(id string) paygate.ChargeRequest {
	return paygate.ChargeRequest{
		PaymentID: id, MerchantID: "m_1", Mode: paygate.ModeLive,
		Amount: paygate.Money{Amount: 1050, Currency: "EUR"},
		Card:   paygate.Card{Number: testPAN, ExpMonth: 3, ExpYear: 2030, CVV: "737", HolderName: "Jane Doe"},
		Billing: &paygate.Billing{FirstName: "Jane", LastName: "Doe", Email: "jane@example.com", Phone: "+49 30 1234567",
			Country: "DE", Address: "Hauptstrasse 1", City: "Berlin", PostalCode: "10115", IPAddress: "192.0.2.7", DOB: "1990-05-17"},
		DeviceFingerprint: "fp_abc",
		ReturnURL:         "https://shop.example/return",
	}
}

func paymentJSON(resultCode, extra string) string {
	s := fmt.Sprintf(`{"pspReference":%q,"resultCode":%q,"merchantReference":%q`, testPSP, resultCode, testPayment)
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

func one(status int, body string) func(string, map[string]any) reply {
	return func(string, map[string]any) reply { return reply{status: status, body: body} }
}

func providerErr(t *testing.T, err error, kind paygate.ProviderErrorKind) *paygate.ProviderError {
	t.Helper()
	var pe *paygate.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *paygate.ProviderError", err)
	}
	if pe.Kind != kind {
		t.Fatalf("kind %d (%s), want %d", pe.Kind, pe.Message, kind)
	}
	if strings.Contains(pe.Error(), testPAN) {
		t.Fatalf("the error carries the card number: %s", pe.Error())
	}
	return pe
}

func TestNewConfig(t *testing.T) {
	for _, c := range []Config{
		{APIKey: "k", MerchantAccount: "m"},
		{ID: "a", MerchantAccount: "m"},
		{ID: "a", APIKey: "k"},
		{ID: "a", APIKey: "k", MerchantAccount: "m", BaseURL: "not a url"},
		{ID: "a", APIKey: "k", MerchantAccount: "m", HMACKey: "xyz"},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		} else if strings.Contains(err.Error(), "k\"") {
			t.Errorf("error shows a credential: %v", err)
		}
	}
	p, err := New(Config{ID: "a", APIKey: "k", MerchantAccount: "m"})
	if err != nil || p.base != DefaultBaseURL || p.timeout != DefaultTimeout || !p.Serves("JPY") || p.Currencies() != nil {
		t.Fatalf("defaults: %+v, %v", p, err)
	}
	p = newProvider(t, "", 0)
	if !p.Serves("EUR") || p.Serves("USD") || strings.Join(p.Currencies(), ",") != "EUR,GBP" {
		t.Fatalf("currencies %v", p.Currencies())
	}
}

func TestChargeAuthorisedSendsWhatTheSpecAccepts(t *testing.T) {
	f := newFake(t, one(200, paymentJSON("Authorised", `"amount":{"currency":"EUR","value":1050}`)))
	p := newProvider(t, f.url(), 5*time.Second)
	res, err := p.Charge(context.Background(), chargeReq(testPayment))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != paygate.PaymentCaptured || res.ProviderRef != testPSP {
		t.Fatalf("result %+v", res)
	}
	reqs := f.requests()
	if len(reqs) != 1 || reqs[0].path != "/payments" {
		t.Fatalf("requests %+v", reqs)
	}
	r := reqs[0]
	if r.header.Get("X-API-Key") != "AQE_test_key" || r.header.Get("Idempotency-Key") != "paygate-pay-"+testPayment {
		t.Fatalf("headers %v", r.header)
	}
	b := r.body
	pm := b["paymentMethod"].(map[string]any)
	if pm["type"] != "scheme" || pm["number"] != testPAN || pm["expiryMonth"] != "03" || pm["expiryYear"] != "2030" ||
		pm["cvc"] != "737" || pm["holderName"] != "Jane Doe" {
		t.Fatalf("paymentMethod %v", pm)
	}
	amt := b["amount"].(map[string]any)
	if b["merchantAccount"] != testMerchant || b["reference"] != testPayment || amt["currency"] != "EUR" || amt["value"] != float64(1050) ||
		b["returnUrl"] != "https://shop.example/return" || b["captureDelayHours"] != float64(0) ||
		b["shopperEmail"] != "jane@example.com" || b["shopperIP"] != "192.0.2.7" || b["deviceFingerprint"] != "fp_abc" ||
		b["dateOfBirth"] != "1990-05-17T00:00:00Z" || b["telephoneNumber"] != "+49 30 1234567" {
		t.Fatalf("body %v", b)
	}
	ba := b["billingAddress"].(map[string]any)
	if ba["country"] != "DE" || ba["street"] != "Hauptstrasse 1" || ba["city"] != "Berlin" || ba["postalCode"] != "10115" {
		t.Fatalf("billingAddress %v", ba)
	}
	if _, ok := b["metadata"]; ok {
		t.Fatal("metadata was forwarded")
	}
	q, err := p.Inquire(context.Background(), testPayment)
	if err != nil || q.Status != paygate.InquiryAnswered || q.Result.Status != paygate.PaymentCaptured || q.Result.ProviderRef != testPSP {
		t.Fatalf("inquiry %+v, %v", q, err)
	}
}

func TestChargeWithoutBillingOrReturnURL(t *testing.T) {
	f := newFake(t, one(200, paymentJSON("Authorised", "")))
	p := newProvider(t, f.url(), 5*time.Second)
	req := chargeReq(testPayment)
	req.Billing, req.ReturnURL, req.DeviceFingerprint = nil, "", ""
	if _, err := p.Charge(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	b := f.requests()[0].body
	if b["returnUrl"] != NoReturnURL || b["billingAddress"] != nil || b["shopperEmail"] != nil || b["redirectFromIssuerMethod"] != nil {
		t.Fatalf("body %v", b)
	}
}

func TestChargeReturnsToTheCallback(t *testing.T) {
	f := newFake(t, one(200, paymentJSON("Authorised", "")))
	p := newProvider(t, f.url(), 5*time.Second)
	req := chargeReq(testPayment)
	req.ThreeDSReturnURL = "https://pay.example/v1/3ds/callback/tok"
	if _, err := p.Charge(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	b := f.requests()[0].body
	if b["returnUrl"] != req.ThreeDSReturnURL || b["redirectFromIssuerMethod"] != "POST" {
		t.Fatalf("body %v", b)
	}
}

func TestChargeRefusedMapsReasons(t *testing.T) {
	for _, c := range []struct{ code, reason, want string }{
		{"2", "Refused", paygate.DeclineGeneric},
		{"12", "Not enough balance", paygate.DeclineInsufficientFunds},
		{"6", "Expired Card", paygate.DeclineExpiredCard},
		{"24", "CVC Declined", paygate.DeclineIncorrectCVC},
		{"5", "Blocked Card", paygate.DeclineGeneric},
		{"20", "FRAUD", paygate.DeclineGeneric},
		{"", "Not enough balance", paygate.DeclineInsufficientFunds},
	} {
		extra := fmt.Sprintf(`"refusalReason":%q`, c.reason)
		if c.code != "" {
			extra += fmt.Sprintf(`,"refusalReasonCode":%q`, c.code)
		}
		f := newFake(t, one(200, paymentJSON("Refused", extra)))
		p := newProvider(t, f.url(), 5*time.Second)
		res, err := p.Charge(context.Background(), chargeReq(testPayment))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != paygate.PaymentFailed || res.DeclineCode != c.want || !strings.Contains(res.Message, c.reason) || res.ProviderRef != testPSP {
			t.Errorf("%s %s: %+v, want %s", c.code, c.reason, res, c.want)
		}
		q, err := p.Inquire(context.Background(), testPayment)
		if err != nil || q.Status != paygate.InquiryAnswered || q.Result.DeclineCode != c.want {
			t.Errorf("inquiry %+v, %v", q, err)
		}
	}
}

func TestChargeErrorAndUndecided(t *testing.T) {
	f := newFake(t, one(200, paymentJSON("Error", `"refusalReason":"Acquirer Error"`)))
	p := newProvider(t, f.url(), 5*time.Second)
	_, err := p.Charge(context.Background(), chargeReq(testPayment))
	pe := providerErr(t, err, paygate.ProviderFailed)
	if !strings.Contains(pe.Message, "Acquirer Error") {
		t.Fatalf("message %q", pe.Message)
	}
	if q, err := p.Inquire(context.Background(), testPayment); err != nil || q.Status != paygate.InquiryErrored || q.Message == "" {
		t.Fatalf("inquiry %+v, %v", q, err)
	}
	for _, code := range []string{"Received", "Pending"} {
		f := newFake(t, one(200, paymentJSON(code, "")))
		p := newProvider(t, f.url(), 5*time.Second)
		_, err := p.Charge(context.Background(), chargeReq(testPayment))
		providerErr(t, err, paygate.ProviderUnknownOutcome)
		if q, err := p.Inquire(context.Background(), testPayment); err != nil || q.Status != paygate.InquiryPending {
			t.Fatalf("%s: inquiry %+v, %v", code, q, err)
		}
	}
}

func TestThreeDSRedirectAndDetails(t *testing.T) {
	for _, method := range []string{"GET", "POST"} {
		data := ""
		if method == "POST" {
			data = `,"data":{"MD":"bWQ=","PaReq":"cGFyZXE=","TermUrl":"https://checkoutshopper-test.adyen.com/checkoutshopper/threeDS/return"}`
		}
		var detailsResult string
		f := newFake(t, func(path string, body map[string]any) reply {
			if path == "/payments" {
				return reply{200, fmt.Sprintf(`{"resultCode":"RedirectShopper","action":{"type":"redirect","paymentMethodType":"scheme","method":%q,"url":"https://checkoutshopper-test.adyen.com/checkoutshopper/threeDS/redirect?MD=abc"%s}}`, method, data)}
			}
			return reply{200, detailsResult}
		})
		p := newProvider(t, f.url(), 5*time.Second)
		res, err := p.Charge(context.Background(), chargeReq(testPayment))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != paygate.PaymentPending3DS || res.ThreeDS == nil || res.ThreeDS.Method != method ||
			!strings.HasPrefix(res.ThreeDS.RedirectURL, "https://checkoutshopper-test.adyen.com/") {
			t.Fatalf("%s: result %+v", method, res)
		}
		if method == "POST" && res.ThreeDS.Parameters["MD"] != "bWQ=" {
			t.Fatalf("parameters %v", res.ThreeDS.Parameters)
		}
		comp := paygate.ThreeDSCompletion{PaymentID: testPayment, Amount: res2money(), Response: map[string]string{"redirectResult": "X6XtfGC3!Y...", "ignored": "x"}}
		if method == "POST" {
			comp.Response = map[string]string{"MD": "bWQ=", "PaRes": "cGFyZXM="}
		}

		detailsResult = paymentJSON("Authorised", "")
		got, err := p.CompleteThreeDS(context.Background(), comp)
		if err != nil || !got.Authenticated || got.Status != paygate.PaymentCaptured || got.ProviderRef != testPSP {
			t.Fatalf("authorised: %+v, %v", got, err)
		}
		detailsResult = paymentJSON("Refused", `"refusalReason":"3D Not Authenticated","refusalReasonCode":"11"`)
		if got, err := p.CompleteThreeDS(context.Background(), comp); err != nil || got.Authenticated {
			t.Fatalf("not authenticated: %+v, %v", got, err)
		}
		detailsResult = paymentJSON("Refused", `"refusalReason":"Not enough balance","refusalReasonCode":"12"`)
		if got, err := p.CompleteThreeDS(context.Background(), comp); err != nil || !got.Authenticated || got.Status != paygate.PaymentFailed || got.DeclineCode != paygate.DeclineInsufficientFunds {
			t.Fatalf("declined: %+v, %v", got, err)
		}
		detailsResult = `{"pspReference":"X","resultCode":"Authorised","merchantReference":"another-payment"}`
		if _, err := p.CompleteThreeDS(context.Background(), comp); err == nil {
			t.Fatal("a details answer of another payment was accepted")
		}
		detailsResult = paymentJSON("Error", `"refusalReason":"Internal error"`)
		_, err = p.CompleteThreeDS(context.Background(), comp)
		providerErr(t, err, paygate.ProviderFailed)

		for _, r := range f.requests()[1:] {
			if r.path != "/payments/details" || r.header.Get("Idempotency-Key") != "paygate-3ds-"+testPayment {
				t.Fatalf("details request %s %v", r.path, r.header)
			}
			d := r.body["details"].(map[string]any)
			if _, ok := d["ignored"]; ok {
				t.Fatalf("forwarded an unknown field: %v", d)
			}
		}
	}
	p := newProvider(t, "http://127.0.0.1:1/v71", time.Second)
	_, err := p.CompleteThreeDS(context.Background(), paygate.ThreeDSCompletion{PaymentID: testPayment, Response: map[string]string{}})
	providerErr(t, err, paygate.ProviderFailed)
}

func res2money() paygate.Money { return paygate.Money{Amount: 1050, Currency: "EUR"} }

func TestUnsupportedAction(t *testing.T) {
	f := newFake(t, one(200, `{"resultCode":"IdentifyShopper","action":{"type":"threeDS2","paymentMethodType":"scheme","subtype":"fingerprint","token":"abc"}}`))
	p := newProvider(t, f.url(), 5*time.Second)
	_, err := p.Charge(context.Background(), chargeReq(testPayment))
	providerErr(t, err, paygate.ProviderFailed)
}

func TestCaptureCancelRefund(t *testing.T) {
	f := newFake(t, func(path string, body map[string]any) reply {
		kind := path[strings.LastIndex(path, "/")+1:]
		amt := ""
		if a, ok := body["amount"].(map[string]any); ok {
			amt = fmt.Sprintf(`"amount":{"currency":%q,"value":%v},`, a["currency"], a["value"])
		}
		return reply{201, fmt.Sprintf(`{%s"merchantAccount":%q,"paymentPspReference":%q,"pspReference":"MOD%s","reference":%q,"status":"received"}`,
			amt, testMerchant, testPSP, strings.ToUpper(kind[:3]), body["reference"])}
	})
	p := newProvider(t, f.url(), 5*time.Second)
	ctx := context.Background()
	op := paygate.PaymentOp{PaymentID: testPayment, ProviderRef: testPSP, Amount: paygate.Money{Amount: 500, Currency: "EUR"}}
	if err := p.Capture(ctx, op); err != nil {
		t.Fatal(err)
	}
	if err := p.Void(ctx, op); err != nil {
		t.Fatal(err)
	}
	refundID := "0192f3c4-0000-7000-8000-000000000001"
	rr, err := p.Refund(ctx, paygate.RefundRequest{RefundID: refundID, PaymentID: testPayment, ProviderRef: testPSP, Amount: paygate.Money{Amount: 300, Currency: "EUR"}})
	if err != nil || rr.Status != paygate.RefundPending || rr.ProviderRef != "MODREF" {
		t.Fatalf("refund %+v, %v", rr, err)
	}
	reqs := f.requests()
	want := []struct{ path, key string }{
		{"/payments/" + testPSP + "/captures", "paygate-cap-" + testPayment},
		{"/payments/" + testPSP + "/cancels", "paygate-can-" + testPayment},
		{"/payments/" + testPSP + "/refunds", "paygate-ref-" + refundID},
	}
	for i, w := range want {
		if reqs[i].path != w.path || reqs[i].header.Get("Idempotency-Key") != w.key || reqs[i].body["merchantAccount"] != testMerchant {
			t.Fatalf("request %d: %s %v %v", i, reqs[i].path, reqs[i].header, reqs[i].body)
		}
	}
	if reqs[2].body["reference"] != refundID {
		t.Fatalf("refund reference %v", reqs[2].body)
	}
	if err := p.Capture(ctx, paygate.PaymentOp{PaymentID: testPayment, Amount: op.Amount}); err == nil {
		t.Fatal("captured without a reference")
	}
}

func TestHTTPErrors(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		kind   paygate.ProviderErrorKind
	}{
		{422, `{"status":422,"errorCode":"101","message":"Invalid card number 4111111111111111","errorType":"validation"}`, paygate.ProviderFailed},
		{401, `{"status":401,"errorCode":"000","message":"HTTP Status Response - Unauthorized","errorType":"security"}`, paygate.ProviderFailed},
		{400, `{"status":400,"errorCode":"702","message":"Structure error","errorType":"validation"}`, paygate.ProviderFailed},
		{500, `{"status":500,"errorCode":"905","message":"Payment details are not supported","errorType":"configuration"}`, paygate.ProviderUnknownOutcome},
	} {
		f := newFake(t, one(c.status, c.body))
		p := newProvider(t, f.url(), 5*time.Second)
		_, err := p.Charge(context.Background(), chargeReq(testPayment))
		providerErr(t, err, c.kind)
	}
}

func TestRateLimitedIsUnavailable(t *testing.T) {
	// 429 is not in Adyen's spec for /payments: a plain local server.
	srv := httpServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTooManyRequests) })
	p := newProvider(t, srv, 5*time.Second)
	_, err := p.Charge(context.Background(), chargeReq(testPayment))
	providerErr(t, err, paygate.ProviderUnavailable)
}

func TestTimeoutAfterSendIsUnknown(t *testing.T) {
	release := make(chan struct{})
	f := newFake(t, func(string, map[string]any) reply {
		<-release
		return reply{200, paymentJSON("Authorised", "")}
	})
	defer close(release)
	p := newProvider(t, f.url(), 200*time.Millisecond)
	start := time.Now()
	_, err := p.Charge(context.Background(), chargeReq(testPayment))
	providerErr(t, err, paygate.ProviderUnknownOutcome)
	if time.Since(start) > 3*time.Second {
		t.Fatalf("the timeout took %s", time.Since(start))
	}
	if q, err := p.Inquire(context.Background(), testPayment); err != nil || q.Status != paygate.InquiryPending {
		t.Fatalf("inquiry %+v, %v", q, err)
	}
}

func TestConnectionRefusedIsUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p := newProvider(t, "http://"+addr+"/v71", 2*time.Second)
	_, err = p.Charge(context.Background(), chargeReq(testPayment))
	providerErr(t, err, paygate.ProviderUnavailable)
	if q, err := p.Inquire(context.Background(), testPayment); err != nil || q.Status != paygate.InquiryUnknown {
		t.Fatalf("inquiry %+v, %v", q, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.Charge(ctx, chargeReq("0192f3c4-5d6e-7f80-9a1b-000000000002"))
	providerErr(t, err, paygate.ProviderUnavailable)
	// A payment this process never sent cannot be asked about.
	if _, err := p.Inquire(context.Background(), "0192f3c4-5d6e-7f80-9a1b-999999999999"); err == nil {
		t.Fatal("an inquiry of a payment never seen answered")
	}
}

func TestMinorUnits(t *testing.T) {
	for _, c := range []struct {
		amount   int64
		currency string
		want     int64
		ok       bool
	}{
		{1050, "EUR", 1050, true},
		{1050, "JPY", 1050, true}, // 0 decimals at both
		{1050, "KWD", 1050, true}, // 3 decimals at both
		{1050, "BHD", 1050, true},
		{500, "CLP", 50000, true}, // ISO 0, Adyen 2
		{12, "ISK", 1200, true},   // ISO 0, Adyen 2
		{150000, "IDR", 1500, true},
		{150050, "IDR", 0, false}, // a fraction Adyen cannot take
		{700, "CVE", 7, true},
		{1, "XXX", 0, false},
	} {
		got, ok := minorUnits(paygate.Money{Amount: c.amount, Currency: c.currency})
		if got != c.want || ok != c.ok {
			t.Errorf("%d %s: %d %v, want %d %v", c.amount, c.currency, got, ok, c.want, c.ok)
		}
	}
	f := newFake(t, one(200, paymentJSON("Authorised", "")))
	p := newProvider(t, f.url(), 5*time.Second)
	req := chargeReq(testPayment)
	req.Amount = paygate.Money{Amount: 12, Currency: "ISK"}
	if _, err := p.Charge(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if a := f.requests()[0].body["amount"].(map[string]any); a["value"] != float64(1200) || a["currency"] != "ISK" {
		t.Fatalf("amount %v", a)
	}
}

func TestIdempotencyKeyLength(t *testing.T) {
	if k := idemKey("pay", testPayment); k != "paygate-pay-"+testPayment {
		t.Fatal(k)
	}
	if k := idemKey("ref", strings.Repeat("x", 100)); len(k) != 64 || !strings.HasPrefix(k, "paygate-ref-") {
		t.Fatal(k)
	}
}
