package dashboard

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

func TestAuditFiltersAndLinks(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ctx := context.Background()
	now := s.clock.Now().UTC()
	day := func(d int) string { return now.AddDate(0, 0, d).Format(time.DateOnly) }
	keyID, deliveryID, paymentID, refundID := id.New(), id.New(), id.New(), id.New()
	entries := []paygate.AuditEntry{
		{Mode: paygate.ModeLive, Email: paygate.AuditActorCLI, Action: paygate.AuditKeyCreated, Target: keyID, Detail: "secret key x", CreatedAt: now.AddDate(0, 0, -3)},
		{Mode: paygate.ModeTest, UserID: "u", Email: s.a.email, Action: paygate.AuditWebhookTested, Target: deliveryID, Detail: "ping event", CreatedAt: now.AddDate(0, 0, -2)},
		{Mode: paygate.ModeTest, UserID: "u", Email: s.a.email, Action: paygate.AuditRefundIssued, Target: refundID, Detail: "4.00 EUR of payment " + paymentID, CreatedAt: now.AddDate(0, 0, -1)},
		{Mode: paygate.ModeTest, Email: paygate.AuditActorCLI, Action: paygate.AuditWebhookChanged, Target: "https://hooks.example/x", Detail: "every event", CreatedAt: now.AddDate(0, 0, -1)},
		{Email: paygate.AuditActorCLI, Action: paygate.AuditMerchantCreated, Target: s.a.id, Detail: "created", CreatedAt: now.AddDate(0, 0, -4)},
	}
	for i := range entries {
		entries[i].ID, entries[i].MerchantID = id.New(), s.a.id
		if err := s.st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{entries[i]}}); err != nil {
			t.Fatal(err)
		}
	}
	b := s.signedIn()
	targets := regexp.MustCompile(`<td class="mono small">(?:<a href="([^"]*)">)?([^<–]+)`)
	listed := func(path string) map[string]string { // target → link
		t.Helper()
		p := b.get(path)
		if p.code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, p.code)
		}
		out := map[string]string{}
		for _, m := range targets.FindAllStringSubmatch(p.body, -1) {
			out[m[2]] = m[1]
		}
		return out
	}

	all := listed("/dashboard/test/audit")
	for target, want := range map[string]string{
		keyID:                     "/dashboard/live/developers#key-" + keyID, // the entry's mode, not the page's
		deliveryID:                "/dashboard/test/webhook/deliveries/" + deliveryID,
		refundID:                  "/dashboard/test/payments/" + paymentID,
		"https://hooks.example/x": "/dashboard/test/webhook",
		s.a.id:                    "",
	} {
		if got, ok := all[target]; !ok || got != want {
			t.Errorf("target %s: link %q (listed %v), want %q", target, got, ok, want)
		}
	}

	cli := listed("/dashboard/test/audit?actor=CLI")
	if len(cli) != 3 || cli[keyID] == "" || cli[deliveryID] != "" {
		t.Errorf("actor cli lists %v", cli)
	}
	if byUser := listed("/dashboard/test/audit?actor=" + s.a.email); len(byUser) != 2 {
		t.Errorf("actor %s lists %v", s.a.email, byUser)
	}
	if refunds := listed("/dashboard/test/audit?action=" + paygate.AuditRefundIssued); len(refunds) != 1 || refunds[refundID] == "" {
		t.Errorf("action refund lists %v", refunds)
	}
	// Days, both included: two days ago to yesterday.
	if r := listed("/dashboard/test/audit?from=" + day(-2) + "&to=" + day(-1)); len(r) != 3 || r[deliveryID] == "" || r[keyID] != "" {
		t.Errorf("days %s to %s list %v", day(-2), day(-1), r)
	}
	if r := listed("/dashboard/test/audit?actor=cli&from=" + day(-1)); len(r) != 1 {
		t.Errorf("cli from yesterday lists %v", r)
	}
	p := b.get("/dashboard/test/audit?action=nope&from=soon")
	if p.code != http.StatusOK || !strings.Contains(p.body, `id="audit-error"`) || !strings.Contains(p.body, keyID) {
		t.Errorf("a bad filter: %d", p.code)
	}
	if p := b.get("/dashboard/test/audit?actor=nobody@example.com"); !strings.Contains(p.body, "No entries match the filter") {
		t.Error("an empty filtered page")
	}
}

// TestAuditFilterKeepsPaging checks that the Older link keeps the filter.
func TestAuditFilterKeepsPaging(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ctx := context.Background()
	for i := range pageSize + 3 {
		e := paygate.AuditEntry{ID: id.New(), MerchantID: s.a.id, Mode: paygate.ModeTest, Email: paygate.AuditActorCLI,
			Action: paygate.AuditKeyRevoked, Target: id.New(), CreatedAt: s.clock.Now().Add(-time.Duration(i) * time.Minute)}
		other := e
		other.ID, other.Email, other.UserID = id.New(), s.a.email, "u"
		if err := s.st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{e, other}}); err != nil {
			t.Fatal(err)
		}
	}
	b := s.signedIn()
	first := b.get("/dashboard/test/audit?actor=cli")
	older := regexp.MustCompile(`href="([^"]+)" id="older-page"`).FindStringSubmatch(first.body)
	if older == nil || !strings.Contains(older[1], "actor=cli") {
		t.Fatalf("Older link %v does not keep the filter", older)
	}
	second := b.get(strings.ReplaceAll(older[1], "&amp;", "&"))
	if n := strings.Count(second.body, "<tr>") - 1; second.code != http.StatusOK || n != 3 || strings.Contains(second.body, s.a.email+"</td>") {
		t.Errorf("second page: %d, %d rows", second.code, n)
	}
}
