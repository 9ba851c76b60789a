package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
)

const termURL = "https://pay.example/gw/v1/3ds/callback/tok"

func threeDSCharge(number, paymentID string) paygate.ChargeRequest {
	return paygate.ChargeRequest{
		PaymentID: paymentID, MerchantID: "m1", Mode: paygate.ModeTest,
		Amount: paygate.Money{Amount: 1050, Currency: "EUR"},
		Card:   paygate.Card{Number: paygate.PAN(number), ExpMonth: 12, ExpYear: 2030, CVV: "123", HolderName: "Jane Doe"},
	}
}

// challengePage charges the card, renders the challenge page from the
// parameters as the merchant's page would post them, and returns the charge
// and the page.
func challengePage(t *testing.T, p *Provider, number, paymentID string) (paygate.ChargeResult, string) {
	t.Helper()
	res, err := p.Charge(context.Background(), threeDSCharge(number, paymentID))
	if err != nil {
		t.Fatal(err)
	}
	form := url.Values{"TermUrl": {termURL}}
	for k, v := range res.ThreeDS.Parameters {
		form.Set(k, v)
	}
	c, err := ParseChallenge(form)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := RenderChallenge(&b, c, ChallengeDetails{MerchantName: "Ada & Co <Books>", Amount: "10.50", Currency: "EUR"}); err != nil {
		t.Fatal(err)
	}
	return res, b.String()
}

var formPattern = regexp.MustCompile(`(?s)<form id="(threeds-[a-z]+)" method="post" action="([^"]+)">(.*?)</form>`)
var inputPattern = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// pageForms returns each form of the page: its action and hidden fields.
func pageForms(t *testing.T, page string) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, m := range formPattern.FindAllStringSubmatch(page, -1) {
		fields := map[string]string{"action": html.UnescapeString(m[2])}
		for _, in := range inputPattern.FindAllStringSubmatch(m[3], -1) {
			fields[in[1]] = html.UnescapeString(in[2])
		}
		out[m[1]] = fields
	}
	return out
}

func TestThreeDSCharge(t *testing.T) {
	t.Parallel()
	p := New("sandbox-eu", []string{"EUR"})
	for _, number := range []string{Card3DS, Card3DSCaptureDeclined} {
		res, err := p.Charge(context.Background(), threeDSCharge(number, "pay-1"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != paygate.PaymentPending3DS || !strings.HasPrefix(res.ProviderRef, "sbx3ds_") {
			t.Fatalf("result %+v, want pending_3ds with a challenge reference", res)
		}
		a := res.ThreeDS
		if a == nil || a.RedirectURL != ChallengePath || a.Method != "POST" || a.Parameters["creq"] == "" || a.Parameters["threeDSSessionData"] == "" {
			t.Fatalf("action %+v", a)
		}
		if _, ok := a.Parameters["TermUrl"]; ok {
			t.Fatal("the sandbox sets TermUrl; paygate owns it")
		}
		for k, v := range a.Parameters {
			if strings.Contains(v, number) || strings.Contains(v, number[12:]) {
				t.Fatalf("parameter %s names the card", k)
			}
		}
	}
}

func TestChallengePage(t *testing.T) {
	t.Parallel()
	p := New("sandbox-eu", []string{"EUR"})
	_, page := challengePage(t, p, Card3DS, "pay-1")
	for _, want := range []string{"Ada &amp; Co &lt;Books&gt;", "10.50 EUR", `lang="en"`, `name="viewport"`, "Complete authentication", "Fail authentication"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, banned := range []string{"<script", "http://", "src=", "<link", "style=\"", Card3DS, "3220"} {
		if strings.Contains(page, banned) {
			t.Errorf("page contains %q", banned)
		}
	}
	forms := pageForms(t, page)
	if len(forms) != 2 || forms["threeds-complete"] == nil || forms["threeds-fail"] == nil {
		t.Fatalf("forms %v", forms)
	}
	for id, f := range forms {
		if f["action"] != termURL || f["cres"] == "" || f["threeDSSessionData"] == "" {
			t.Errorf("form %s: %v", id, f)
		}
	}
	if forms["threeds-complete"]["cres"] == forms["threeds-fail"]["cres"] {
		t.Error("both forms post the same answer")
	}
	// The one inline style is what the CSP hash allows.
	m := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no style element")
	}
	h := sha256.Sum256([]byte(m[1]))
	if want := "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"; ChallengeStyleSource() != want {
		t.Errorf("style source %s, want %s", ChallengeStyleSource(), want)
	}
}

func TestParseChallengeRefusesForeignRequests(t *testing.T) {
	t.Parallel()
	p := New("sandbox-eu", []string{"EUR"})
	res, err := p.Charge(context.Background(), threeDSCharge(Card3DS, "pay-1"))
	if err != nil {
		t.Fatal(err)
	}
	good := url.Values{"TermUrl": {termURL}, "creq": {res.ThreeDS.Parameters["creq"]}, "threeDSSessionData": {res.ThreeDS.Parameters["threeDSSessionData"]}}
	for name, edit := range map[string]func(url.Values){
		"NoCReq":      func(v url.Values) { v.Del("creq") },
		"GarbageCReq": func(v url.Values) { v.Set("creq", "not base64 json") },
		"ForgedCReq": func(v url.Values) {
			v.Set("creq", encodeMessage(creq{MessageType: "CReq", ThreeDSServerTransID: "pay-2", ACSTransID: "x"}))
		},
		"OtherSession": func(v url.Values) { v.Set("threeDSSessionData", sessionData("pay-2")) },
		"NoTermURL":    func(v url.Values) { v.Del("TermUrl") },
		"UnknownCReqKey": func(v url.Values) {
			v.Set("creq", base64.RawURLEncoding.EncodeToString([]byte(`{"messageType":"CReq","x":1}`)))
		},
	} {
		t.Run(name, func(t *testing.T) {
			v := url.Values{}
			for k, vs := range good {
				v[k] = append([]string(nil), vs...)
			}
			edit(v)
			if _, err := ParseChallenge(v); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestCompleteThreeDS(t *testing.T) {
	t.Parallel()
	p := New("sandbox-eu", []string{"EUR"})
	cases := []struct {
		name, number, form string
		want               paygate.ThreeDSResult
	}{
		{"Complete", Card3DS, "threeds-complete", paygate.ThreeDSResult{Authenticated: true, Status: paygate.PaymentCaptured}},
		{"Fail", Card3DS, "threeds-fail", paygate.ThreeDSResult{Authenticated: false}},
		{"CaptureDeclined", Card3DSCaptureDeclined, "threeds-complete", paygate.ThreeDSResult{Authenticated: true, Status: paygate.PaymentFailed, DeclineCode: paygate.DeclineGeneric}},
		{"CaptureDeclinedFail", Card3DSCaptureDeclined, "threeds-fail", paygate.ThreeDSResult{Authenticated: false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pid := "pay-" + c.name
			res, page := challengePage(t, p, c.number, pid)
			f := pageForms(t, page)[c.form]
			req := paygate.ThreeDSCompletion{PaymentID: pid, ProviderRef: res.ProviderRef, Amount: paygate.Money{Amount: 1050, Currency: "EUR"},
				Response: map[string]string{"cres": f["cres"], "threeDSSessionData": f["threeDSSessionData"]}}
			got, err := p.CompleteThreeDS(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if got.Authenticated != c.want.Authenticated || got.Status != c.want.Status || got.DeclineCode != c.want.DeclineCode {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			if got.Authenticated && !strings.HasPrefix(got.ProviderRef, "sbx_") {
				t.Fatalf("provider ref %q, want a payment reference", got.ProviderRef)
			}
			if got.Status == paygate.PaymentFailed && got.Message == "" {
				t.Fatal("decline without a message")
			}
			again, err := p.CompleteThreeDS(context.Background(), req)
			if err != nil || again != got {
				t.Fatalf("repeated completion: %+v, %v; want %+v", again, err, got)
			}
		})
	}
}

func TestCompleteThreeDSRefusesForgedResponses(t *testing.T) {
	t.Parallel()
	p := New("sandbox-eu", []string{"EUR"})
	res, page := challengePage(t, p, Card3DS, "pay-1")
	f := pageForms(t, page)["threeds-complete"]
	_, otherPage := challengePage(t, p, Card3DS, "pay-2")
	other := pageForms(t, otherPage)["threeds-complete"]
	good := paygate.ThreeDSCompletion{PaymentID: "pay-1", ProviderRef: res.ProviderRef,
		Response: map[string]string{"cres": f["cres"], "threeDSSessionData": f["threeDSSessionData"]}}
	for name, edit := range map[string]func(*paygate.ThreeDSCompletion){
		"NoCRes": func(r *paygate.ThreeDSCompletion) {
			r.Response = map[string]string{"threeDSSessionData": f["threeDSSessionData"]}
		},
		"OtherPaymentCRes": func(r *paygate.ThreeDSCompletion) {
			r.Response = map[string]string{"cres": other["cres"], "threeDSSessionData": other["threeDSSessionData"]}
		},
		"OtherStatus": func(r *paygate.ThreeDSCompletion) {
			r.Response = map[string]string{"threeDSSessionData": f["threeDSSessionData"], "cres": encodeMessage(cres{
				MessageType: "CRes", ThreeDSServerTransID: "pay-1", ACSTransID: acsTransID("pay-1"), TransStatus: "A"})}
		},
		"UnknownRef":     func(r *paygate.ThreeDSCompletion) { r.ProviderRef = "sbx_00" },
		"CapturedRef":    func(r *paygate.ThreeDSCompletion) { r.ProviderRef = p.paymentRef("pay-1", fateNone) },
		"OtherPaymentID": func(r *paygate.ThreeDSCompletion) { r.PaymentID = "pay-2" },
	} {
		t.Run(name, func(t *testing.T) {
			req := good
			edit(&req)
			_, err := p.CompleteThreeDS(context.Background(), req)
			if pe := providerErr(t, err); pe.Kind != paygate.ProviderFailed {
				t.Fatalf("error %+v, want ProviderFailed", pe)
			}
		})
	}
}
