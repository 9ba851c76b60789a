package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
)

// TestOriginsChange: the Developers page edits the origins allowed to
// embed the card fields of its mode, stores them normalized with an audit
// entry, says so, and shows a refused list again with the reason.
func TestOriginsChange(t *testing.T) {
	t.Parallel()
	s, b := signedInSite(t)
	page := b.get(root + "/live/developers")
	for _, want := range []string{`id="origins-form"`, "No origin allowed in live mode", "https only", `id="paygate-snippet"`,
		`/js/v1/paygate.js"&gt;&lt;/script&gt;`, "smtgw_pk_live_…"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("live developers page lacks %q", want)
		}
	}
	p := b.post(root+"/live/developers", root+"/live/origins", url.Values{"origins": {"https://Shop.example:443\r\nhttps://www.shop.example, https://shop.example"}})
	if p.code != http.StatusSeeOther || !strings.HasPrefix(p.location, root+"/live/developers?origins=saved") {
		t.Fatalf("POST origins: %d %q\n%s", p.code, p.location, p.body)
	}
	ctx := context.Background()
	got, err := s.st.AllowedOrigins(ctx, s.a.id, paygate.ModeLive)
	if err != nil || strings.Join(got, " ") != "https://shop.example https://www.shop.example" {
		t.Fatalf("stored %q %v", got, err)
	}
	if test, _ := s.st.AllowedOrigins(ctx, s.a.id, paygate.ModeTest); len(test) != 0 {
		t.Errorf("test mode changed: %q", test)
	}
	if other, _ := s.st.AllowedOrigins(ctx, s.b.id, paygate.ModeLive); len(other) != 0 {
		t.Errorf("merchant B changed: %q", other)
	}
	page = b.get(p.location)
	if !strings.Contains(page.body, "The allowed origins were saved") || !strings.Contains(page.body, `<li class="mono">https://www.shop.example</li>`) {
		t.Errorf("page after saving:\n%s", page.body)
	}
	es, err := s.st.AuditLog(ctx, paygate.AuditQuery{MerchantID: s.a.id})
	if err != nil {
		t.Fatal(err)
	}
	var found int
	for _, e := range es {
		if e.Action == paygate.AuditOriginsChanged {
			found++
			if e.Email != s.a.email || e.UserID == "" || e.Mode != paygate.ModeLive || e.Detail != "https://shop.example https://www.shop.example" {
				t.Errorf("audit entry %+v", e)
			}
		}
	}
	if found != 1 {
		t.Errorf("%d origins.changed entries, want 1", found)
	}

	// Refused: http in live mode. The page shows what was typed and why.
	p = b.post(root+"/live/developers", root+"/live/origins", url.Values{"origins": {"http://shop.example"}})
	if p.code != http.StatusBadRequest || !strings.Contains(p.body, `id="origins-error"`) || !strings.Contains(p.body, "live mode takes https origins only") ||
		!strings.Contains(p.body, ">http://shop.example</textarea>") {
		t.Errorf("refused POST: %d\n%s", p.code, p.body)
	}
	if got, _ := s.st.AllowedOrigins(ctx, s.a.id, paygate.ModeLive); len(got) != 2 {
		t.Errorf("a refused list was stored: %q", got)
	}
	// Empty clears.
	p = b.post(root+"/live/developers", root+"/live/origins", url.Values{"origins": {""}})
	if got, _ := s.st.AllowedOrigins(ctx, s.a.id, paygate.ModeLive); p.code != http.StatusSeeOther || len(got) != 0 {
		t.Errorf("clearing: %d, %q", p.code, got)
	}
}

// TestOriginsByRole: the origins are developer settings, as the webhook's
// are: analysts see them but no form and get 403 when they post; developers
// get the form and may save them.
func TestOriginsByRole(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	for _, role := range []paygate.Role{paygate.RoleAnalyst, paygate.RoleDeveloper} {
		email := string(role) + "@books.example"
		s.addUser(s.a.id, email, role)
		b := s.browser()
		b.mustSignIn(email)
		developer := role == paygate.RoleDeveloper
		page := b.get(root + "/test/developers")
		if page.code != http.StatusOK || strings.Contains(page.body, `id="origins-form"`) != developer || !strings.Contains(page.body, `id="allowed-origins"`) {
			t.Errorf("%s developers page: %d, form shown %v, want %v, or origins missing", role, page.code, !developer, developer)
		}
		p := b.postSigned(root+"/test/origins", url.Values{"origins": {"https://" + string(role) + ".example"}})
		if want := map[bool]int{true: http.StatusSeeOther, false: http.StatusForbidden}[developer]; p.code != want {
			t.Errorf("%s POST origins: %d, want %d", role, p.code, want)
		}
	}
	if got, _ := s.st.AllowedOrigins(context.Background(), s.a.id, paygate.ModeTest); strings.Join(got, " ") != "https://developer.example" {
		t.Errorf("origins stored %q, want the developer's only", got)
	}
}
