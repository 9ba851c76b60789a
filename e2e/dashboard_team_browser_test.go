package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/paygate/paygate/internal/id"
)

// The dashboard for teams in a real browser (issue 22): two-step sign-in
// with TOTP, what an analyst may not do, and the screenshots of every page
// in light and dark mode (PAYGATE_UPDATE_SCREENSHOTS=1 writes them to
// docs/screenshots/; otherwise they go to the run's artifact directory
// only).

// dashboardUserRole creates a dashboard login of the role for the merchant
// with `paygate user create --role ROLE --password-stdin`.
func dashboardUserRole(t *testing.T, g *gateway, dbURL, merchantID, role string) (email, password string) {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	email = role + "-" + hex.EncodeToString(b) + "@shop.example"
	password = "correct horse " + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "user", "create", "--merchant", merchantID, "--email", email,
		"--role", role, "--password-stdin", "--database-url", dbURL)
	cmd.Env = os.Environ()
	cmd.Stdin = strings.NewReader(password + "\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("paygate user create --role %s: %v\nstdout: %s\nstderr: %s\n%s", role, err, out.String(), errb.String(), g.Logs())
	}
	return email, password
}

// totpCode is the RFC 6238 code (6 digits, 30 s, SHA-1) of secret at at.
func totpCode(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	code, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// enrolMFA turns on two-step sign-in for the signed-in user from the
// account page and returns the secret the page showed. The code entered is
// the current step's.
func enrolMFA(t *testing.T, ctx context.Context, g *gateway, shot func(string)) string {
	t.Helper()
	browserDo(t, ctx, g, "open the MFA enrolment",
		chromedp.Navigate(g.url+"/dashboard/account?mode=test"),
		chromedp.WaitVisible(chromedp.CSS("#enrol-mfa")),
		chromedp.Click(chromedp.CSS("#enrol-mfa")),
		chromedp.WaitVisible(chromedp.CSS("#totp-secret")),
		chromedp.WaitVisible(chromedp.CSS("#totp-qr")),
	)
	secret := browserText(t, ctx, "#totp-secret")
	if secret == "" {
		t.Fatal("the enrolment page shows no secret")
	}
	if shot != nil {
		shot("dashboard-mfa-enrol")
	}
	browserDo(t, ctx, g, "confirm the enrolment",
		chromedp.SendKeys(chromedp.CSS("#code"), totpCode(t, secret, time.Now())),
		chromedp.Click(chromedp.CSS("#confirm-mfa")),
		chromedp.WaitVisible(chromedp.CSS("#recovery-codes")),
	)
	if codes := browserText(t, ctx, "#recovery-codes"); len(strings.Fields(codes)) != 10 {
		t.Errorf("recovery codes shown: %q", codes)
	}
	browserDo(t, ctx, g, "leave the recovery codes",
		chromedp.Click(chromedp.CSS("#continue")),
		chromedp.WaitVisible(chromedp.CSS("#mode-banner")),
	)
	return secret
}

// passwordStep signs out and enters email and password, and waits for the
// page that asks for the code.
func passwordStep(t *testing.T, ctx context.Context, g *gateway, email, password string) {
	t.Helper()
	browserDo(t, ctx, g, "sign out, then sign in with the password",
		chromedp.Click(chromedp.CSS("#sign-out")),
		chromedp.WaitVisible(chromedp.CSS("#email")),
		chromedp.SendKeys(chromedp.CSS("#email"), email),
		chromedp.SendKeys(chromedp.CSS("#password"), password),
		chromedp.Click(chromedp.CSS("#sign-in")),
		chromedp.WaitVisible(chromedp.CSS("#verify-code")),
	)
}

// TestDashboardMFABrowser: a user turns on two-step sign-in with the code
// of an authenticator app (computed here from the secret the page shows),
// signs out, signs in with the password and then the code, and lands on
// the dashboard; a wrong code is refused and does not sign in.
func TestDashboardMFABrowser(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		dbURL, m, g := startWithMerchant(t, e, "Ada's Books")
		email, password := dashboardUser(t, g, dbURL, m.MerchantID)
		ctx := newBrowser(t)
		problems := watchConsole(t, ctx)
		browserDo(t, ctx, g, "size the window", chromedp.EmulateViewport(laptopWidth, laptopHeight))
		signIn(t, ctx, g, email, password)
		secret := enrolMFA(t, ctx, g, nil)

		passwordStep(t, ctx, g, email, password)
		// A code ten minutes old is outside the accepted steps.
		wrong := totpCode(t, secret, time.Now().Add(-10*time.Minute))
		for _, c := range []string{totpCode(t, secret, time.Now()), totpCode(t, secret, time.Now().Add(30*time.Second))} {
			if c == wrong {
				t.Skip("the old code happens to equal a current one")
			}
		}
		browserDo(t, ctx, g, "enter a wrong code",
			chromedp.SendKeys(chromedp.CSS("#code"), wrong),
			chromedp.Click(chromedp.CSS("#verify-code")),
			chromedp.WaitVisible(chromedp.CSS("#mfa-error")),
		)
		if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#mode-banner").length`)); err != nil || n != 0 {
			t.Fatalf("a wrong code signed in (%d, %v)", n, err)
		}
		// The next step's code: the enrolment used the current one, which
		// may not be used twice; the gateway accepts one step of drift.
		browserDo(t, ctx, g, "enter the right code",
			chromedp.SendKeys(chromedp.CSS("#code"), totpCode(t, secret, time.Now().Add(30*time.Second))),
			chromedp.Click(chromedp.CSS("#verify-code")),
			chromedp.WaitVisible(chromedp.CSS("#mode-banner")),
		)
		if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.HasSuffix(loc, "/dashboard/test/") {
			t.Errorf("after the code the browser is at %s", loc)
		}
		if who := browserText(t, ctx, "#account-link"); who != email {
			t.Errorf("signed in as %q, want %q", who, email)
		}
		if csp := problems.CSP(); len(csp) > 0 {
			t.Errorf("Content-Security-Policy violations:\n%s", strings.Join(csp, "\n"))
		}
	})
}

// TestDashboardAnalystBrowser: an analyst (created with `paygate user
// create --role analyst`) reads payments and keys but sees no capture,
// void, refund or "Create key" button, no Team or Guard link, and a POST
// to an action route with a valid session and CSRF token is answered 403
// and changes nothing.
func TestDashboardAnalystBrowser(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		dbURL, m, g := startWithMerchant(t, e, "Ada's Books")
		email, password := dashboardUserRole(t, g, dbURL, m.MerchantID, "analyst")
		captured := g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, paymentBody("4242424242424242", "10.00", "EUR"))
		expect(t, captured, http.StatusCreated)
		authorized := g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, paymentBody("4000000000000077", "5.00", "EUR"))
		expect(t, authorized, http.StatusCreated)
		authorizedID := authorized.Data()["id"].(string)
		if authorized.Data()["status"] != "authorized" {
			t.Fatalf("payment with 4000000000000077: %s", authorized.Raw)
		}

		ctx := newBrowser(t)
		signIn(t, ctx, g, email, password)
		base := g.url + "/dashboard/test"
		absent := func(page string, sels ...string) {
			t.Helper()
			for _, sel := range sels {
				n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(sel)+`).length`))
				if err != nil || n != 0 {
					t.Errorf("%s: the analyst sees %s (%d, %v)", page, sel, n, err)
				}
			}
		}
		browserDo(t, ctx, g, "open the authorized payment",
			chromedp.Navigate(base+"/payments/"+authorizedID),
			chromedp.WaitVisible(chromedp.CSS("#amounts-heading")),
		)
		absent("authorized payment", "#capture-submit", "#void-link", "#capture-amount", "#nav-team", "#nav-guard")
		browserDo(t, ctx, g, "open the captured payment",
			chromedp.Navigate(base+"/payments/"+captured.Data()["id"].(string)),
			chromedp.WaitVisible(chromedp.CSS("#refunds-heading")),
		)
		absent("captured payment", "#refund-submit", "#refund-amount")
		browserDo(t, ctx, g, "open the developers page",
			chromedp.Navigate(base+"/developers"),
			chromedp.WaitVisible(chromedp.CSS("#secret-keys")),
		)
		absent("developers", "#create-key", `a[id^="rotate-"]`, `a[id^="revoke-"]`)

		// The capture route itself refuses, with the session's CSRF token.
		csrf, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`form[action="/dashboard/logout"] input[name="csrf"]`)))
		if err != nil || csrf == "" {
			t.Fatalf("read the CSRF token: %v", err)
		}
		for _, path := range []string{"/payments/" + authorizedID + "/capture", "/keys", "/guard"} {
			form := url.Values{"csrf": {csrf}, "amount": {"5.00"}, "idempotency_key": {id.New()},
				"rule": {"card"}, "threshold": {"1"}, "window": {"1h"}, "block": {"1h"}}
			req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(form.Encode()))
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
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("the analyst's POST %s: %d, want 403", path, resp.StatusCode)
			}
		}
		p := g.call(http.MethodGet, "/v1/payments/"+authorizedID, m.TestSecretKey, nil)
		if p.Data()["status"] != "authorized" {
			t.Errorf("the analyst's refused capture changed the payment: %s", p.Raw)
		}
	})
}

// jsString quotes s for a JavaScript expression.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// setDark turns the browser's prefers-color-scheme to dark, or back to
// the default (light).
func setDark(ctx context.Context, dark bool) error {
	_, err := chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) (cdp.Empty, error) {
		p := emulation.SetEmulatedMediaParams{}
		if dark {
			p.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}
		} else {
			p.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}}
		}
		return cdp.Call(ctx, tg, emulation.SetEmulatedMedia, p)
	})
	return err
}

// TestDashboardScreenshots visits every dashboard page and captures it in
// light and in dark mode, as dashboard-<page>.png and
// dashboard-<page>-dark.png (docs/screenshots/ with
// PAYGATE_UPDATE_SCREENSHOTS=1). It runs on SQLite only: the pages are the
// same on both engines. No page may trip the Content-Security-Policy.
func TestDashboardScreenshots(t *testing.T) {
	e := sqliteEngine()
	dbURL, m, g := startWithMerchant(t, e, "Ada's Books")
	email, password := dashboardUser(t, g, dbURL, m.MerchantID)
	seedPastPayments(t, dbURL, m.MerchantID)

	// Data for every page: a customer with a stored card, captured,
	// declined and authorized payments.
	run := randomTag(t)
	cust := g.call(http.MethodPost, "/v1/customers", m.TestSecretKey, map[string]any{
		"externalId": "reader-" + run, "email": "reader-" + run + "@example.com", "metadata": map[string]any{"tier": "gold"},
	})
	expect(t, cust, http.StatusCreated)
	customerID := cust.Data()["id"].(string)
	expect(t, g.call(http.MethodPost, "/v1/customers/"+customerID+"/cards", m.TestSecretKey, map[string]any{
		"card": map[string]any{"number": "5555555555554444", "expiryMonth": "04", "expiryYear": futureYear(), "holderName": "Ada Reader"},
	}), http.StatusCreated)
	pay := func(number, amount, currency, ref string) response {
		t.Helper()
		body := paymentBody(number, amount, currency)
		body["customerId"] = "reader-" + run
		if ref != "" {
			body["merchantRef"] = ref
		}
		return g.call(http.MethodPost, "/v1/payments", m.TestSecretKey, body)
	}
	captured := pay("4242424242424242", "42.50", "EUR", "order-"+run)
	expect(t, captured, http.StatusCreated)
	expect(t, pay("4000000000000002", "25.00", "EUR", ""), http.StatusBadRequest, "CARD_DECLINED")
	expect(t, pay("4242424242424242", "1200", "JPY", ""), http.StatusCreated)
	authorized := pay("4000000000000077", "18.00", "EUR", "order-"+run+"-b")
	expect(t, authorized, http.StatusCreated)

	ctx := newBrowser(t)
	problems := watchConsole(t, ctx)
	base := g.url + "/dashboard/test"
	// shot captures the page as it is in light mode, and again in dark
	// mode.
	shot := func(name string) {
		t.Helper()
		if err := setDark(ctx, false); err != nil {
			t.Fatal(err)
		}
		dashboardScreenshot(t, ctx, name)
		if err := setDark(ctx, true); err != nil {
			t.Fatal(err)
		}
		dashboardScreenshot(t, ctx, name+"-dark")
		if err := setDark(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	visit := func(what, path, sel string) {
		t.Helper()
		browserDo(t, ctx, g, what, chromedp.Navigate(g.url+path), chromedp.WaitVisible(chromedp.CSS(sel)))
	}

	browserDo(t, ctx, g, "open the sign-in page",
		chromedp.EmulateViewport(laptopWidth, laptopHeight),
		chromedp.Navigate(g.url+"/dashboard/login"),
		chromedp.WaitVisible(chromedp.CSS("#email")),
	)
	shot("dashboard-signin")
	signIn(t, ctx, g, email, password)

	visit("overview", "/dashboard/test/", "svg.chart")
	shot("dashboard-overview")
	visit("payments", "/dashboard/test/payments", "#f-ref")
	shot("dashboard-payments")
	visit("authorized payment", "/dashboard/test/payments/"+authorized.Data()["id"].(string), "#capture-submit")
	shot("dashboard-payment")
	browserDo(t, ctx, g, "refund confirmation",
		chromedp.Navigate(base+"/payments/"+captured.Data()["id"].(string)),
		chromedp.WaitVisible(chromedp.CSS("#refund-amount")),
		chromedp.SetValue(chromedp.CSS("#refund-amount"), "12.50"),
		chromedp.Click(chromedp.CSS("#refund-submit")),
		chromedp.WaitVisible(chromedp.CSS("#confirm-refund")),
	)
	shot("dashboard-refund-confirm")
	visit("customers", "/dashboard/test/customers", "#c-q")
	shot("dashboard-customers")
	visit("customer", "/dashboard/test/customers/"+customerID, "main h1")
	shot("dashboard-customer")
	visit("developers", "/dashboard/test/developers", "#secret-keys")
	shot("dashboard-developers")
	visit("routing", "/dashboard/test/routing", "svg.rate-chart")
	shot("dashboard-routing")

	rcv := newReceiver(t)
	browserDo(t, ctx, g, "set the webhook endpoint and send a test event",
		chromedp.Navigate(base+"/webhook"),
		chromedp.WaitVisible(chromedp.CSS("#webhook-url")),
		chromedp.SendKeys(chromedp.CSS("#webhook-url"), rcv.url),
		chromedp.Click(chromedp.CSS("#save-webhook")),
		chromedp.WaitVisible(chromedp.CSS("#webhook-notice")),
		chromedp.Click(chromedp.CSS("#send-test")),
		chromedp.WaitVisible(chromedp.CSS("#webhook-notice")),
	)
	eventually(t, 20*time.Second, "the ping delivered", func() bool {
		_ = chromedp.Do(ctx, chromedp.Navigate(base+"/webhook"), chromedp.WaitVisible(chromedp.CSS("#deliveries")))
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#deliveries")))
		return err == nil && strings.Contains(s, "succeeded")
	})
	shot("dashboard-webhook")
	browserDo(t, ctx, g, "open a delivery",
		chromedp.Click(chromedp.CSS("#deliveries a")),
		chromedp.WaitVisible(chromedp.CSS("#resend")),
	)
	shot("dashboard-delivery")

	visit("guard", "/dashboard/live/guard", "#save-card_ip")
	shot("dashboard-guard")
	dashboardScreenshot(t, ctx, "dashboard-guard-phone")
	visit("team", "/dashboard/test/team", "#invite-email")
	browserDo(t, ctx, g, "invite an analyst",
		chromedp.SendKeys(chromedp.CSS("#invite-email"), "analyst-"+run+"@shop.example"),
		chromedp.SetValue(chromedp.CSS("#invite-role"), "analyst"),
		chromedp.Click(chromedp.CSS("#invite")),
		chromedp.WaitVisible(chromedp.CSS("#invite-link")),
	)
	inviteLink, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#invite-link")))
	if err != nil || !strings.Contains(inviteLink, "/dashboard/") {
		t.Fatalf("invitation link %q: %v", inviteLink, err)
	}
	visit("team", "/dashboard/test/team", "#team-invitations")
	shot("dashboard-team")
	visit("account", "/dashboard/account?mode=test", "#tz")
	shot("dashboard-account")

	secret := enrolMFA(t, ctx, g, shot)
	visit("audit log", "/dashboard/test/audit", "#audit-log")
	shot("dashboard-audit")

	passwordStep(t, ctx, g, email, password)
	shot("dashboard-mfa")
	browserDo(t, ctx, g, "enter the code",
		chromedp.SendKeys(chromedp.CSS("#code"), totpCode(t, secret, time.Now().Add(30*time.Second))),
		chromedp.Click(chromedp.CSS("#verify-code")),
		chromedp.WaitVisible(chromedp.CSS("#mode-banner")),
		chromedp.Click(chromedp.CSS("#sign-out")),
		chromedp.WaitVisible(chromedp.CSS("#email")),
	)
	// The invitation as its receiver sees it (relative to the gateway the
	// test runs, whatever base URL the link names).
	u, err := url.Parse(inviteLink)
	if err != nil {
		t.Fatal(err)
	}
	visit("invitation", u.RequestURI(), "#accept-invite")
	shot("dashboard-invite")

	if csp := problems.CSP(); len(csp) > 0 {
		t.Errorf("Content-Security-Policy violations:\n%s", strings.Join(csp, "\n"))
	}
}
