package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
)

// The dashboard's data pages in a real browser, against the real binary:
// payments made through the API are found in the list and opened, refunded
// from the dashboard (and the API sees the refund succeed), a stored card
// is deleted, and a merchant's user who edits ids in the address bar to
// another merchant's payment or customer, or to the other mode, gets 404.
// With PAYGATE_UPDATE_SCREENSHOTS=1 the pages' screenshots replace the
// README's in docs/screenshots/.
func TestDashboardDataPages(t *testing.T) {
	forEachEngine(t, dashboardDataPages)
}

func dashboardDataPages(t *testing.T, e engine) {
	dbURL := e.url(t)
	// The README's screenshots come from one engine; the pages are the same.
	screenshot := func(t *testing.T, ctx context.Context, name string) {
		t.Helper()
		if e.name == "sqlite" {
			dashboardScreenshot(t, ctx, name)
		}
	}
	a := createMerchant(t, dbURL, "Ada's Books")
	b := createMerchant(t, dbURL, "Bob's Bikes")
	seedPastPayments(t, dbURL, a.MerchantID)
	g := startGateway(t, dbURL)
	email, password := dashboardUser(t, g, dbURL, a.MerchantID)

	run := randomTag(t)
	ref := "order-" + run
	// Ada's shop: today's payments, one declined, one 3-D Secure left
	// waiting, a customer with a stored card.
	customerRef := "reader-" + run
	cust := g.call(http.MethodPost, "/v1/customers", a.TestSecretKey, map[string]any{
		"externalId": customerRef, "email": "reader-" + run + "@example.com", "metadata": map[string]any{"tier": "gold"},
	})
	expect(t, cust, http.StatusCreated)
	customerID := cust.Data()["id"].(string)
	card := g.call(http.MethodPost, "/v1/customers/"+customerID+"/cards", a.TestSecretKey, map[string]any{
		"card": map[string]any{"number": "5555555555554444", "expiryMonth": "04", "expiryYear": futureYear(), "holderName": "Ada Reader"},
	})
	expect(t, card, http.StatusCreated)
	cardID := card.Data()["id"].(string)

	pay := func(key, number, amount, currency, merchantRef, customer string) response {
		t.Helper()
		body := paymentBody(number, amount, currency)
		body["customerId"] = customer
		if merchantRef != "" {
			body["merchantRef"] = merchantRef
		}
		return g.call(http.MethodPost, "/v1/payments", key, body)
	}
	first := pay(a.TestSecretKey, "4242424242424242", "10.50", "EUR", ref, customerRef)
	expect(t, first, http.StatusCreated)
	paymentID := first.Data()["id"].(string)
	expect(t, pay(a.TestSecretKey, "4000000000000002", "25.00", "EUR", ref+"-declined", customerRef), http.StatusBadRequest, "CARD_DECLINED")
	expect(t, pay(a.TestSecretKey, "4242424242424242", "1200", "JPY", "", customerRef), http.StatusCreated)
	expect(t, pay(a.TestSecretKey, "4000000000003220", "7.99", "GBP", "", "walk-in-"+run), http.StatusCreated)
	for i := range 4 {
		expect(t, pay(a.TestSecretKey, "4242424242424242", fmt.Sprintf("%d.00", 3+i), "EUR", "", "walk-in-"+run), http.StatusCreated)
	}
	// Bob's data, which Ada's user must never reach.
	bobPay := pay(b.TestSecretKey, "4242424242424242", "99.00", "EUR", ref, "bob-customer")
	expect(t, bobPay, http.StatusCreated)
	bobPaymentID := bobPay.Data()["id"].(string)
	bobPayment := g.call(http.MethodGet, "/v1/payments/"+bobPaymentID, b.TestSecretKey, nil)
	expect(t, bobPayment, http.StatusOK)
	bobCustomerID := bobPayment.Data()["customerId"].(string)

	ctx := newBrowser(t)
	console := watchConsole(t, ctx)
	signIn(t, ctx, g, email, password)
	base := g.url + "/dashboard/test"

	t.Run("Overview", func(t *testing.T) {
		err := chromedp.Do(ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("svg.chart")))
		if err != nil {
			t.Fatalf("overview: %v", err)
		}
		text := mainText(t, ctx)
		for _, want := range []string{"The last 30 days in your time zone", "EUR", "JPY", "Success rate", "Daily volume and declines in EUR"} {
			if !strings.Contains(text, want) {
				t.Errorf("overview does not say %q:\n%s", want, text)
			}
		}
		screenshot(t, ctx, "dashboard-overview")
	})

	t.Run("FindPaymentInList", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+"/payments"), chromedp.WaitVisible(chromedp.CSS("#f-ref"))); err != nil {
			t.Fatalf("payments list: %v", err)
		}
		// The full list first, for the screenshots.
		screenshot(t, ctx, "dashboard-payments")
		screenshot(t, ctx, "dashboard-payments-phone")
		link := chromedp.CSS(`a[href="/dashboard/test/payments/` + paymentID + `"]`)
		err := chromedp.Do(ctx,
			chromedp.SendKeys(chromedp.CSS("#f-ref"), ref),
			chromedp.Click(chromedp.CSS("#filter-submit")),
			chromedp.WaitVisible(chromedp.CSS("#clear-filters")),
			chromedp.WaitVisible(link),
		)
		if err != nil {
			t.Fatalf("filter by merchantRef: %v", err)
		}
		// Only Ada's payment with exactly this reference: not Bob's, not
		// the declined one's "-declined" reference.
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("table.payments tbody tr").length`))
		if err != nil || rows != 1 {
			t.Fatalf("the filter by merchantRef shows %d rows (%v), want 1", rows, err)
		}
		if err := chromedp.Do(ctx, chromedp.Click(link), chromedp.WaitVisible(chromedp.CSS("#refund-amount"))); err != nil {
			t.Fatalf("open the payment: %v", err)
		}
		text := mainText(t, ctx)
		for _, want := range []string{paymentID, "€10.50", "sandbox-eu", "Visa •••• 4242", customerRef, ref, "payment.captured"} {
			if !strings.Contains(text, want) {
				t.Errorf("the payment page does not show %q", want)
			}
		}
		screenshot(t, ctx, "dashboard-payment")
	})

	t.Run("RefundFromDashboard", func(t *testing.T) {
		err := chromedp.Do(ctx,
			chromedp.Navigate(base+"/payments/"+paymentID),
			chromedp.WaitVisible(chromedp.CSS("#refund-amount")),
			chromedp.SetValue(chromedp.CSS("#refund-amount"), "4.00"),
			chromedp.Click(chromedp.CSS("#refund-submit")),
			chromedp.WaitVisible(chromedp.CSS("#confirm-refund")),
		)
		if err != nil {
			t.Fatalf("refund confirmation: %v", err)
		}
		// The confirmation restates amount and currency before anything
		// is refunded.
		if text := mainText(t, ctx); !strings.Contains(text, "Refund €4.00 (EUR)?") {
			t.Errorf("the refund confirmation says:\n%s", text)
		}
		screenshot(t, ctx, "dashboard-refund-confirm")
		err = chromedp.Do(ctx,
			chromedp.SendKeys(chromedp.CSS("#refund-reason"), "one book returned"),
			chromedp.Click(chromedp.CSS("#confirm-refund")),
			chromedp.WaitVisible(chromedp.CSS("main .notice, main .error")),
		)
		if err != nil {
			t.Fatalf("refund: %v", err)
		}
		if text := mainText(t, ctx); !strings.Contains(text, "Refund of €4.00 created.") {
			t.Fatalf("after the refund the page says:\n%s", text)
		}
		loc, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(loc)
		if err != nil {
			t.Fatal(err)
		}
		refundID := u.Query().Get("refunded")
		if !id.Valid(refundID) {
			t.Fatalf("after the refund the browser is at %s", loc)
		}
		// The API sees the refund, and the refund worker takes it to
		// succeeded exactly like a refund made through the API.
		eventually(t, 20*time.Second, "the dashboard's refund to succeed", func() bool {
			r := g.call(http.MethodGet, "/v1/refunds/"+refundID, a.TestSecretKey, nil)
			return r.Status == http.StatusOK && r.Data()["status"] == "succeeded"
		})
		r := g.call(http.MethodGet, "/v1/refunds/"+refundID, a.TestSecretKey, nil)
		if r.Data()["amount"] != "4.00" || r.Data()["transactionId"] != paymentID || r.Data()["reason"] != "one book returned" {
			t.Errorf("refund through the API: %s", r.Raw)
		}
		p := g.call(http.MethodGet, "/v1/payments/"+paymentID, a.TestSecretKey, nil)
		if p.Data()["amountRefunded"] != "4.00" {
			t.Errorf("amountRefunded after the dashboard's refund: %s", p.Raw)
		}
		list := g.call(http.MethodGet, "/v1/payments/"+paymentID+"/refunds", a.TestSecretKey, nil)
		if arr, _ := list.Body["data"].([]any); len(arr) != 1 {
			t.Errorf("refunds of the payment: %s", list.Raw)
		}
		// The page now offers what is left, under a fresh key.
		if err := chromedp.Do(ctx, chromedp.Navigate(base+"/payments/"+paymentID), chromedp.WaitVisible(chromedp.CSS("#refund-amount"))); err != nil {
			t.Fatal(err)
		}
		amount, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#refund-amount")))
		if err != nil || amount != "6.50" {
			t.Errorf("the refund form offers %q (%v) after refunding 4.00 of 10.50", amount, err)
		}
	})

	t.Run("CaptureAndVoid", func(t *testing.T) {
		capture := pay(a.TestSecretKey, "4000000000000077", "5.00", "EUR", "", customerRef)
		expect(t, capture, http.StatusCreated)
		void := pay(a.TestSecretKey, "4000000000000077", "6.00", "EUR", "", customerRef)
		expect(t, void, http.StatusCreated)
		err := chromedp.Do(ctx,
			chromedp.Navigate(base+"/payments/"+capture.Data()["id"].(string)),
			chromedp.WaitVisible(chromedp.CSS("#capture-submit")),
			chromedp.Click(chromedp.CSS("#capture-submit")),
			chromedp.WaitVisible(chromedp.CSS("main .notice, main .error")),
		)
		if err != nil {
			t.Fatalf("capture: %v", err)
		}
		if text := mainText(t, ctx); !strings.Contains(text, "Payment captured: €5.00.") {
			t.Errorf("after the capture the page says:\n%s", text)
		}
		err = chromedp.Do(ctx,
			chromedp.Navigate(base+"/payments/"+void.Data()["id"].(string)),
			chromedp.WaitVisible(chromedp.CSS("#void-link")),
			chromedp.Click(chromedp.CSS("#void-link")),
			chromedp.WaitVisible(chromedp.CSS("#confirm-void")),
		)
		if err != nil {
			t.Fatalf("void confirmation: %v", err)
		}
		screenshot(t, ctx, "dashboard-void-confirm")
		err = chromedp.Do(ctx,
			chromedp.Click(chromedp.CSS("#confirm-void")),
			chromedp.WaitVisible(chromedp.CSS("main .notice, main .error")),
		)
		if err != nil {
			t.Fatalf("void: %v", err)
		}
		if text := mainText(t, ctx); !strings.Contains(text, "Payment voided.") {
			t.Errorf("after the void the page says:\n%s", text)
		}
		p := g.call(http.MethodGet, "/v1/payments/"+void.Data()["id"].(string), a.TestSecretKey, nil)
		if p.Data()["status"] != "voided" {
			t.Errorf("the API sees the voided payment as %s", p.Raw)
		}
	})

	t.Run("ExportCSV", func(t *testing.T) {
		err := chromedp.Do(ctx, chromedp.Navigate(base+"/payments?ref="+ref), chromedp.WaitVisible(chromedp.CSS("#export-csv")))
		if err != nil {
			t.Fatalf("payments list: %v", err)
		}
		href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#export-csv").getAttribute("href")`))
		if err != nil || href != "/dashboard/test/payments.csv?ref="+ref {
			t.Fatalf("export link %q (%v)", href, err)
		}
		// The browser's session downloads the file, as a click would.
		for _, path := range []string{href, "/dashboard/payments.csv?ref=" + ref} {
			req, _ := http.NewRequest(http.MethodGet, g.url+path, nil)
			for _, c := range browserCookies(t, ctx, g.url) {
				req.AddCookie(c)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Disposition"), "attachment;") {
				t.Fatalf("%s: %d %v", path, res.StatusCode, res.Header)
			}
			lines := strings.Split(strings.TrimSpace(string(body)), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "id,created_at,status,amount,currency") ||
				!strings.HasPrefix(lines[1], paymentID+",") || strings.Contains(string(body), bobPaymentID) {
				t.Errorf("%s:\n%s", path, body)
			}
		}
	})

	t.Run("CustomerAndStoredCard", func(t *testing.T) {
		link := chromedp.CSS(`a[href="/dashboard/test/customers/` + customerID + `"]`)
		err := chromedp.Do(ctx,
			chromedp.Navigate(base+"/customers"),
			chromedp.WaitVisible(chromedp.CSS("#c-q")),
			chromedp.SendKeys(chromedp.CSS("#c-q"), "reader-"),
			chromedp.Click(chromedp.CSS("#search-submit")),
			chromedp.WaitVisible(link),
			chromedp.Click(link),
			chromedp.WaitVisible(chromedp.CSS("#delete-card-"+cardID)),
		)
		if err != nil {
			t.Fatalf("find and open the customer: %v", err)
		}
		text := mainText(t, ctx)
		for _, want := range []string{customerRef, "Mastercard •••• 4444", "tier", "gold", paymentID} {
			if !strings.Contains(text, want) {
				t.Errorf("the customer page does not show %q", want)
			}
		}
		screenshot(t, ctx, "dashboard-customer")
		err = chromedp.Do(ctx,
			chromedp.Click(chromedp.CSS("#delete-card-"+cardID)),
			chromedp.WaitVisible(chromedp.CSS("#confirm-delete-"+cardID)),
			chromedp.Click(chromedp.CSS("#confirm-delete-"+cardID)),
			chromedp.WaitVisible(chromedp.CSS(".notice")),
		)
		if err != nil {
			t.Fatalf("delete the stored card: %v", err)
		}
		cards := g.call(http.MethodGet, "/v1/customers/"+customerID+"/cards", a.TestSecretKey, nil)
		if arr, _ := cards.Body["data"].([]any); cards.Status != http.StatusOK || len(arr) != 0 {
			t.Errorf("stored cards after the dashboard deleted one: %s", cards.Raw)
		}
	})

	t.Run("OtherMerchantsIDsAre404", func(t *testing.T) {
		for _, path := range []string{
			"/dashboard/test/payments/" + bobPaymentID,
			"/dashboard/test/customers/" + bobCustomerID,
			"/dashboard/live/payments/" + paymentID, // Ada's own payment, in the other mode
			"/dashboard/live/customers/" + customerID,
		} {
			resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(g.url+path))
			if err != nil {
				t.Fatalf("open %s: %v", path, err)
			}
			if resp.Status != http.StatusNotFound {
				t.Errorf("%s with Ada's session: %d, want 404", path, resp.Status)
			}
			h1, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("h1")))
			if err != nil {
				t.Fatal(err)
			}
			text := mainText(t, ctx)
			if !strings.Contains(h1, "Not found") || strings.Contains(text, "99.00") || strings.Contains(text, "bob-customer") {
				t.Errorf("%s shows %q: %s", path, h1, text)
			}
		}
		// A refund of Bob's payment posted with Ada's session and her valid
		// CSRF token is 404 too, and refunds nothing.
		if err := chromedp.Do(ctx, chromedp.Navigate(base+"/payments/"+paymentID), chromedp.WaitVisible(chromedp.CSS("#refund-amount"))); err != nil {
			t.Fatal(err)
		}
		// The refund form is a GET to its confirmation now; the sign-out
		// form carries the session's token.
		csrf, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`form[action="/dashboard/logout"] input[name="csrf"]`)))
		if err != nil || csrf == "" {
			t.Fatalf("read the CSRF token: %v", err)
		}
		form := url.Values{"csrf": {csrf}, "amount": {"1.00"}, "idempotency_key": {id.New()}}
		req, _ := http.NewRequest(http.MethodPost, base+"/payments/"+bobPaymentID+"/refund", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", g.url)
		for _, c := range browserCookies(t, ctx, g.url) {
			req.AddCookie(c)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("refund of Bob's payment with Ada's session: %d, want 404", resp.StatusCode)
		}
		refunds := g.call(http.MethodGet, "/v1/payments/"+bobPaymentID+"/refunds", b.TestSecretKey, nil)
		if arr, _ := refunds.Body["data"].([]any); len(arr) != 0 {
			t.Errorf("Bob's payment was refunded: %s", refunds.Raw)
		}
	})

	if csp := console.CSP(); len(csp) > 0 {
		t.Errorf("the browser reported Content-Security-Policy problems:\n%s", strings.Join(csp, "\n"))
	}
}

// seedPastPayments gives the overview a few earlier days: the API makes
// payments only at the present time, so these are written through the
// store's own methods (as the payment service does), dated in the past.
// It runs before the gateway starts.
func seedPastPayments(t *testing.T, dbURL, merchantID string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	today := time.Now().UTC().Truncate(24 * time.Hour)
	for day := 1; day <= 12; day++ {
		at := today.AddDate(0, 0, -day).Add(10 * time.Hour)
		for i := range day%4 + 1 {
			amount := int64(1500 + 700*day + 300*i)
			status, code := paygate.PaymentCaptured, ""
			if (day+i)%5 == 0 {
				status, code = paygate.PaymentFailed, string(paygate.CodeCardDeclined)
			}
			p, err := st.CreatePayment(ctx, paygate.NewPayment{
				Payment: paygate.Payment{
					ID: id.New(), MerchantID: merchantID, Mode: paygate.ModeTest, Status: paygate.PaymentCreated,
					Amount: paygate.Money{Amount: amount, Currency: "EUR"}, AmountText: fmt.Sprintf("%d.%02d", amount/100, amount%100),
					Method: paygate.MethodCard, Metadata: []byte("{}"), IdempotencyKey: "seed-" + id.New(),
					Card:      paygate.CardSummary{Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: time.Now().Year() + 3},
					CreatedAt: at, UpdatedAt: at, LeaseUntil: at,
				},
				CustomerExternalID: "seed-customer", NewCustomerID: id.New(),
			})
			if err != nil {
				t.Fatalf("seed payment: %v", err)
			}
			tr := paygate.PaymentTransition{
				ID: p.ID, MerchantID: merchantID, Mode: paygate.ModeTest, From: []paygate.PaymentStatus{paygate.PaymentCreated},
				To: status, ProviderID: "sandbox-eu", ErrorCode: code, UpdatedAt: at,
			}
			if status == paygate.PaymentCaptured {
				tr.AmountCaptured = &amount
			} else {
				tr.ErrorMessage, tr.DeclineCode = "The card was declined.", paygate.DeclineGeneric
			}
			if err := st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{tr}}); err != nil {
				t.Fatalf("seed payment status: %v", err)
			}
		}
	}
}

// browserCookies returns the browser's cookies for the gateway, so that a
// Go client can make requests with the browser's session.
func browserCookies(t *testing.T, ctx context.Context, gatewayURL string) []*http.Cookie {
	t.Helper()
	res, err := chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) (network.GetCookiesResult, error) {
		return cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{gatewayURL + "/dashboard/"}})
	})
	if err != nil || len(res.Cookies) == 0 {
		t.Fatalf("read the browser's cookies: %v (%d cookies)", err, len(res.Cookies))
	}
	out := make([]*http.Cookie, 0, len(res.Cookies))
	for _, c := range res.Cookies {
		out = append(out, &http.Cookie{Name: c.Name, Value: c.Value})
	}
	return out
}

// mainText is the text of the page's <main>.
func mainText(t *testing.T, ctx context.Context) string {
	t.Helper()
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	if err != nil {
		t.Fatalf("read the page: %v", err)
	}
	return text
}

// randomTag is a short random string that keeps one run's references apart.
func randomTag(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
