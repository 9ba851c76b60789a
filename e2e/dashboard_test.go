package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The dashboard's Developers section in a real browser (Debian's Chromium):
// sign in, create a key and pay with it, rotate it with no grace and see the
// old one refused, revoke the new one and see it refused, set the webhook
// endpoint to a receiver on loopback and send a test event that arrives
// signed, read the audit log, sign out. No page may trip the
// Content-Security-Policy. The SQLite run also takes the screenshots of
// the README (PAYGATE_UPDATE_SCREENSHOTS=1 writes docs/screenshots/).
func TestDashboardDevelopersBrowser(t *testing.T) {
	for _, e := range engines() {
		t.Run(e.name, func(t *testing.T) {
			testDashboardDevelopers(t, e)
		})
	}
}

// browserText reads the text of the first element matching sel.
func browserText(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	var (
		s   string
		err error
	)
	// The node found by the wait before may be replaced when the page's
	// document is updated under a loaded machine ("No node with given id
	// found"): read it again, a few times, before calling it a failure.
	for range 5 {
		if err = chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err == nil {
			s, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		}
		if err == nil || !strings.Contains(err.Error(), "No node with given id") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("read %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// browserDo runs browser steps and fails the test, naming what it was doing
// and where the browser is, when one fails.
func browserDo(t *testing.T, ctx context.Context, g *gateway, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		body, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("main")))
		t.Fatalf("%s: %v (at %s)\n%s\n%s", what, err, loc, body, g.Logs())
	}
}

func testDashboardDevelopers(t *testing.T, e engine) {
	dbURL := e.url(t)
	g := startGateway(t, dbURL)
	m := createMerchant(t, dbURL, "Ada's Books")
	email, password := dashboardUser(t, g, dbURL, m.MerchantID)
	shots := e.name == "sqlite"
	shot := func(ctx context.Context, name string) {
		if shots {
			dashboardScreenshot(t, ctx, name)
		}
	}

	ctx := newBrowser(t)
	problems := watchConsole(t, ctx)
	browserDo(t, ctx, g, "open the sign-in page",
		chromedp.EmulateViewport(laptopWidth, laptopHeight),
		chromedp.Navigate(g.url+"/dashboard/test/developers"),
		chromedp.WaitVisible(chromedp.CSS("#email")),
	)
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.Contains(loc, "/dashboard/login?next=") {
		t.Fatalf("signed out, the developers page led to %s", loc)
	}
	shot(ctx, "dashboard-signin")
	signIn(t, ctx, g, email, password)

	// Create a key: its secret is shown once, and it pays.
	browserDo(t, ctx, g, "create a key",
		chromedp.Navigate(g.url+"/dashboard/test/developers"),
		chromedp.WaitVisible(chromedp.CSS("#create-key")),
		chromedp.Click(chromedp.CSS("#create-key")),
		chromedp.WaitVisible(chromedp.CSS("#new-secret")),
	)
	secret := browserText(t, ctx, "#new-secret")
	keyID := browserText(t, ctx, "#new-key-id")
	shot(ctx, "dashboard-key-created")
	if !strings.HasPrefix(secret, "smtgw_sk_test_") {
		t.Fatalf("new secret %q", secret)
	}
	expect(t, g.call(http.MethodPost, "/v1/payments", secret, paymentBody("4242424242424242", "12.50", "EUR")), http.StatusCreated)

	// Rotate with no grace: the old key stops at once, the new one pays.
	browserDo(t, ctx, g, "rotate the key",
		chromedp.Navigate(g.url+"/dashboard/test/developers"),
		chromedp.WaitVisible(chromedp.CSS("#rotate-"+keyID)),
		chromedp.Click(chromedp.CSS("#rotate-"+keyID)),
		chromedp.WaitVisible(chromedp.CSS("#grace")),
		chromedp.SetValue(chromedp.CSS("#grace"), "0s"),
		chromedp.Click(chromedp.CSS("#rotate-key")),
		chromedp.WaitVisible(chromedp.CSS("#new-secret")),
	)
	rotated := browserText(t, ctx, "#new-secret")
	rotatedID := browserText(t, ctx, "#new-key-id")
	if rotated == secret || !strings.HasPrefix(rotated, "smtgw_sk_test_") {
		t.Fatalf("rotated secret %q", rotated)
	}
	expect(t, g.call(http.MethodPost, "/v1/payments", secret, paymentBody("4242424242424242", "1.00", "EUR")), http.StatusUnauthorized)
	expect(t, g.call(http.MethodPost, "/v1/payments", rotated, paymentBody("4242424242424242", "2.00", "EUR")), http.StatusCreated)

	// Revoke after confirming: the key stops at once.
	browserDo(t, ctx, g, "revoke the key",
		chromedp.Navigate(g.url+"/dashboard/test/developers"),
		chromedp.WaitVisible(chromedp.CSS("#revoke-"+rotatedID)),
		chromedp.Click(chromedp.CSS("#revoke-"+rotatedID)),
		chromedp.WaitVisible(chromedp.CSS("#confirm-revoke")),
	)
	expect(t, g.call(http.MethodPost, "/v1/payments", rotated, paymentBody("4242424242424242", "3.00", "EUR")), http.StatusCreated)
	browserDo(t, ctx, g, "confirm the revocation",
		chromedp.Click(chromedp.CSS("#confirm-revoke")),
		chromedp.WaitVisible(chromedp.CSS("#developers-notice")),
	)
	expect(t, g.call(http.MethodPost, "/v1/payments", rotated, paymentBody("4242424242424242", "4.00", "EUR")), http.StatusUnauthorized)
	if shots {
		browserDo(t, ctx, g, "show the keys", chromedp.Navigate(g.url+"/dashboard/test/developers"), chromedp.WaitVisible(chromedp.CSS("#secret-keys")))
		shot(ctx, "dashboard-developers")
		shot(ctx, "dashboard-developers-phone")
	}

	// The webhook endpoint: a receiver on loopback gets a signed test event.
	rcv := newReceiver(t)
	browserDo(t, ctx, g, "set the webhook endpoint",
		chromedp.Navigate(g.url+"/dashboard/test/webhook"),
		chromedp.WaitVisible(chromedp.CSS("#webhook-url")),
		chromedp.SendKeys(chromedp.CSS("#webhook-url"), rcv.url),
		chromedp.Click(chromedp.CSS("#save-webhook")),
		chromedp.WaitVisible(chromedp.CSS("#webhook-notice")),
		chromedp.Click(chromedp.CSS("#reveal-secret")),
		chromedp.WaitVisible(chromedp.CSS("#webhook-secret")),
	)
	whSecret := browserText(t, ctx, "#webhook-secret")
	if !strings.HasPrefix(whSecret, "whsec_") {
		t.Fatalf("revealed secret %q", whSecret)
	}
	browserDo(t, ctx, g, "send a test event",
		chromedp.Click(chromedp.CSS("#send-test")),
		chromedp.WaitVisible(chromedp.CSS("#webhook-notice")),
	)
	eventually(t, 20*time.Second, "the test event at the receiver", func() bool { return len(rcv.all()) > 0 })
	h := rcv.all()[0]
	if p := verify(t, h, whSecret); p["event"] != "ping" || p["mode"] != "test" {
		t.Fatalf("test event %v", p)
	}
	if shots {
		// The delivery log shows the ping once it succeeded.
		eventually(t, 10*time.Second, "the ping marked succeeded", func() bool {
			_ = chromedp.Do(ctx, chromedp.Navigate(g.url+"/dashboard/test/webhook"), chromedp.WaitVisible(chromedp.CSS("#deliveries")))
			s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#deliveries")))
			return err == nil && strings.Contains(s, "succeeded")
		})
		shot(ctx, "dashboard-webhook")
	}

	// Resend from the delivery's page: the same webhook-id arrives again.
	browserDo(t, ctx, g, "resend the test event",
		chromedp.Navigate(g.url+"/dashboard/test/webhook"),
		chromedp.WaitVisible(chromedp.CSS("#deliveries a")),
		chromedp.Click(chromedp.CSS("#deliveries a")),
		chromedp.WaitVisible(chromedp.CSS("#resend")),
		chromedp.Click(chromedp.CSS("#resend")),
		chromedp.WaitVisible(chromedp.CSS("#delivery-notice")),
	)
	eventually(t, 20*time.Second, "the resent event at the receiver", func() bool { return len(rcv.byID(h.ID)) >= 2 })
	verify(t, rcv.byID(h.ID)[1], whSecret)

	// The account page: the time zone is chosen without JavaScript.
	browserDo(t, ctx, g, "choose a time zone",
		chromedp.Click(chromedp.CSS("#account-link")),
		chromedp.WaitVisible(chromedp.CSS("#tz")),
		chromedp.SetValue(chromedp.CSS("#tz"), "Asia/Tokyo"),
		chromedp.Click(chromedp.CSS("#set-zone")),
		chromedp.WaitVisible(chromedp.CSS("#account-notice")),
	)

	// The audit log names every action, with the address it came from.
	browserDo(t, ctx, g, "read the audit log",
		chromedp.Navigate(g.url+"/dashboard/test/audit"),
		chromedp.WaitVisible(chromedp.CSS("#audit-log")),
	)
	log := browserText(t, ctx, "#audit-log")
	for _, want := range []string{"Signed in", "API key created", "API key rotated", "API key revoked", "Webhook endpoint changed",
		"Webhook secret revealed", "Test event sent", "Event resent", email, "127.0.0.1", "JST"} {
		if !strings.Contains(log, want) {
			t.Errorf("the audit log lacks %q:\n%s", want, log)
		}
	}
	shot(ctx, "dashboard-audit")

	// Sign out: the session is over, pages lead to the sign-in form.
	browserDo(t, ctx, g, "sign out",
		chromedp.Click(chromedp.CSS("#sign-out")),
		chromedp.WaitVisible(chromedp.CSS("#email")),
		chromedp.Navigate(g.url+"/dashboard/test/developers"),
		chromedp.WaitVisible(chromedp.CSS("#email")),
	)
	if csp := problems.CSP(); len(csp) > 0 {
		t.Errorf("Content-Security-Policy violations:\n%s", strings.Join(csp, "\n"))
	}
}
