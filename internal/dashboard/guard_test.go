package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// TestGuardShowsDefaults: the page shows the four rules with the mode's
// defaults (on in live mode, off in test mode) and says what they count.
func TestGuardShowsDefaults(t *testing.T) {
	t.Parallel()
	_, b := signedInSite(t)
	live := b.get(root + "/live/guard")
	if live.code != http.StatusOK {
		t.Fatalf("GET live guard: %d\n%s", live.code, live.body)
	}
	for _, want := range []string{"card_ip", "card", "customer", "ip_cards", `id="card_ip-enabled" checked`,
		`id="card_ip-threshold" name="threshold" type="number" min="1" max="10000" required value="3"`,
		`id="ip_cards-window" name="window" type="text" required maxlength="20" value="10m"`,
		`id="customer-block" name="block" type="text" required maxlength="20" value="1h"`,
		"CARD_DECLINED", "next payment, on every node", `id="nav-guard"`} {
		if !strings.Contains(live.body, want) {
			t.Errorf("live guard page lacks %q", want)
		}
	}
	test := b.get(root + "/test/guard")
	if test.code != http.StatusOK || strings.Contains(test.body, "-enabled\" checked") {
		t.Errorf("test guard page: %d, a rule is on by default", test.code)
	}
}

// TestGuardChange: a change is stored for the mode only, audited with the
// acting user, and shown on the page.
func TestGuardChange(t *testing.T) {
	t.Parallel()
	s, b := signedInSite(t)
	p := b.post(root+"/test/guard", root+"/test/guard", url.Values{
		"rule": {"card"}, "enabled": {"on"}, "threshold": {"7"}, "window": {"30m"}, "block": {"2h"}})
	if p.code != http.StatusSeeOther || p.location != root+"/test/guard?done=card" {
		t.Fatalf("POST guard: %d %q\n%s", p.code, p.location, p.body)
	}
	ctx := context.Background()
	set, err := s.st.GuardSettings(ctx, s.a.id, paygate.ModeTest)
	if err != nil {
		t.Fatal(err)
	}
	want := paygate.GuardRuleSettings{Rule: paygate.GuardCard, Enabled: true, Threshold: 7, Window: 30 * time.Minute, Block: 2 * time.Hour}
	if got := set.Rule(paygate.GuardCard); got != want {
		t.Errorf("stored %+v, want %+v", got, want)
	}
	if got := set.Rule(paygate.GuardCardIP); got != paygate.DefaultGuardRule(paygate.ModeTest, paygate.GuardCardIP) {
		t.Errorf("another rule changed: %+v", got)
	}
	live, _ := s.st.GuardSettings(ctx, s.a.id, paygate.ModeLive)
	if got := live.Rule(paygate.GuardCard); got != paygate.DefaultGuardRule(paygate.ModeLive, paygate.GuardCard) {
		t.Errorf("live mode changed: %+v", got)
	}
	other, _ := s.st.GuardSettings(ctx, s.b.id, paygate.ModeTest)
	if got := other.Rule(paygate.GuardCard); got != paygate.DefaultGuardRule(paygate.ModeTest, paygate.GuardCard) {
		t.Errorf("merchant B changed: %+v", got)
	}
	es, err := s.st.AuditLog(ctx, paygate.AuditQuery{MerchantID: s.a.id})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, e := range es {
		if e.Action == paygate.AuditGuardChanged {
			found = true
			if e.Target != "card" || e.Email != s.a.email || e.UserID == "" ||
				e.Detail != "card: enabled=true threshold=7 window=30m0s block=2h0m0s" {
				t.Errorf("audit entry %+v", e)
			}
		}
	}
	if !found {
		t.Errorf("no %s audit entry: %v", paygate.AuditGuardChanged, s.auditActions(s.a.id))
	}
	page := b.get(p.location)
	for _, want := range []string{`id="guard-notice"`, `id="card-threshold" name="threshold" type="number" min="1" max="10000" required value="7"`,
		`id="card-window" name="window" type="text" required maxlength="20" value="30m"`, `id="card-enabled" checked`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("page after the change lacks %q", want)
		}
	}
	// Turning a rule off: the unchecked box is not sent.
	p = b.post(root+"/live/guard", root+"/live/guard", url.Values{
		"rule": {"ip_cards"}, "threshold": {"5"}, "window": {"10m"}, "block": {"1h"}})
	if p.code != http.StatusSeeOther {
		t.Fatalf("POST guard off: %d\n%s", p.code, p.body)
	}
	live, _ = s.st.GuardSettings(ctx, s.a.id, paygate.ModeLive)
	if live.Rule(paygate.GuardIPCards).Enabled {
		t.Error("ip_cards still on in live mode")
	}
}

// TestGuardRefusesInvalid: invalid values show the page again with the
// error (400), as typed, and change nothing.
func TestGuardRefusesInvalid(t *testing.T) {
	t.Parallel()
	s, b := signedInSite(t)
	for _, tc := range []struct {
		name string
		form url.Values
		msg  string
	}{
		{"zero threshold", url.Values{"rule": {"card_ip"}, "threshold": {"0"}, "window": {"1h"}, "block": {"1h"}}, "threshold must be between 1 and 10000"},
		{"not a number", url.Values{"rule": {"card_ip"}, "threshold": {"x"}, "window": {"1h"}, "block": {"1h"}}, "threshold must be a whole number"},
		{"bad window", url.Values{"rule": {"card_ip"}, "threshold": {"3"}, "window": {"soon"}, "block": {"1h"}}, "window must be a duration"},
		{"long block", url.Values{"rule": {"card_ip"}, "threshold": {"3"}, "window": {"1h"}, "block": {"1000h"}}, "block must be between 1s and 720h0m0s"},
		{"unknown rule", url.Values{"rule": {"bin"}, "threshold": {"3"}, "window": {"1h"}, "block": {"1h"}}, "Choose one of the rules"},
	} {
		p := b.post(root+"/live/guard", root+"/live/guard", tc.form)
		if p.code != http.StatusBadRequest || !strings.Contains(p.body, tc.msg) || !strings.Contains(p.body, `id="guard-error"`) {
			t.Errorf("%s: %d, want 400 with %q\n%s", tc.name, p.code, tc.msg, p.body)
		}
		if tc.name == "bad window" && !strings.Contains(p.body, `value="soon"`) {
			t.Errorf("%s: the page does not show what was typed", tc.name)
		}
	}
	set, _ := s.st.GuardSettings(context.Background(), s.a.id, paygate.ModeLive)
	if got := set.Rule(paygate.GuardCardIP); got != paygate.DefaultGuardRule(paygate.ModeLive, paygate.GuardCardIP) {
		t.Errorf("a refused change was stored: %+v", got)
	}
	if n := countOf(s.auditActions(s.a.id), paygate.AuditGuardChanged); n != 0 {
		t.Errorf("%d audit entries for refused changes", n)
	}
}

// TestGuardByRole: analysts and developers get 403 on the page and its
// form and see no link to it; admins may use it.
func TestGuardByRole(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	for _, role := range []paygate.Role{paygate.RoleAnalyst, paygate.RoleDeveloper} {
		email := string(role) + "@books.example"
		s.addUser(s.a.id, email, role)
		b := s.browser()
		b.mustSignIn(email)
		if p := b.get(root + "/test/guard"); p.code != http.StatusForbidden {
			t.Errorf("%s GET guard: %d", role, p.code)
		}
		p := b.postSigned(root+"/live/guard", url.Values{"rule": {"card"}, "threshold": {"1"}, "window": {"1h"}, "block": {"1h"}})
		if p.code != http.StatusForbidden {
			t.Errorf("%s POST guard: %d", role, p.code)
		}
		if o := b.get(root + "/test/"); strings.Contains(o.body, `id="nav-guard"`) {
			t.Errorf("%s sees the guard link", role)
		}
	}
	set, _ := s.st.GuardSettings(context.Background(), s.a.id, paygate.ModeLive)
	if set.Rule(paygate.GuardCard).Threshold != 5 {
		t.Error("a forbidden change was stored")
	}
	s.addUser(s.a.id, "admin@books.example", paygate.RoleAdmin)
	b := s.browser()
	b.mustSignIn("admin@books.example")
	p := b.post(root+"/test/guard", root+"/test/guard", url.Values{
		"rule": {"customer"}, "enabled": {"on"}, "threshold": {"4"}, "window": {"1h"}, "block": {"1h"}})
	if p.code != http.StatusSeeOther {
		t.Errorf("admin POST guard: %d\n%s", p.code, p.body)
	}
}

// TestGuardAuditLabelled: the audit log words the guard's change and lets
// one filter by it.
func TestGuardAuditLabelled(t *testing.T) {
	t.Parallel()
	_, b := signedInSite(t)
	p := b.post(root+"/test/guard", root+"/test/guard", url.Values{
		"rule": {"card_ip"}, "enabled": {"on"}, "threshold": {"2"}, "window": {"1h"}, "block": {"1h"}})
	if p.code != http.StatusSeeOther {
		t.Fatalf("POST guard: %d", p.code)
	}
	page := b.get(root + "/test/audit?action=" + paygate.AuditGuardChanged)
	if page.code != http.StatusOK || !strings.Contains(page.body, "Card-testing guard changed") || strings.Contains(page.body, "there is no action") {
		t.Errorf("audit log filtered by %s: %d\n%s", paygate.AuditGuardChanged, page.code, page.body)
	}
}
