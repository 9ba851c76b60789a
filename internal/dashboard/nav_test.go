package dashboard

import (
	"net/http"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
)

// The nav marks the section of the page, and the Account page is none of
// a mode's sections (it used to mark Overview).
func TestSectionOf(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"/dashboard/test/":                "",
		"/dashboard/test":                 "",
		"/dashboard/live/payments/abc":    "payments",
		"/dashboard/test/keys/abc/revoke": "keys",
		"/dashboard/account":              "account",
		"/dashboard/payments.csv":         "payments.csv",
		"/dashboard/test/customers?q=x":   "customers?q=x",
	} {
		if got := sectionOf(path); got != want {
			t.Errorf("sectionOf(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestAccountPageNav(t *testing.T) {
	t.Parallel()
	_, b := signedInSite(t)
	p := b.get("/dashboard/account")
	if p.code != http.StatusOK {
		t.Fatalf("account: %d", p.code)
	}
	if strings.Contains(p.body, `aria-current="page">Overview`) {
		t.Errorf("the Account page marks Overview as the current page")
	}
	if !strings.Contains(p.body, `id="account-link" aria-current="page"`) {
		t.Errorf("the Account page does not mark the account link")
	}
}

// A 255-character customer id is cut short in the list, whole in its title.
func TestLongCustomerID(t *testing.T) {
	t.Parallel()
	f := newDataFixture(t)
	long := strings.Repeat("c", 255)
	if _, err := f.st.UpsertCustomer(t.Context(), paygate.CustomerUpsert{NewID: "0195b4c2-0000-4000-8000-0000000000aa", MerchantID: f.a.merchantID, Mode: paygate.ModeTest, ExternalID: long, Now: f.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	p := f.get(f.a.viewer, "/customers")
	if !strings.Contains(p.body, `class="truncate" title="`+long+`"`) {
		t.Errorf("the long id is not truncated with its full value in the title")
	}
}
