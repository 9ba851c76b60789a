package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// customer upserts a customer through the API and returns its id.
func (f *dataFixture) customer(tn tenant, externalID, email string) string {
	f.t.Helper()
	body := map[string]any{"externalId": externalID}
	if email != "" {
		body["email"] = email
	}
	status, data := f.call(tn, http.MethodPost, "/v1/customers", body)
	if status != http.StatusCreated {
		f.t.Fatalf("create customer: %d %v", status, data)
	}
	return data["id"].(string)
}

// storeCard stores a card for the customer through the API.
func (f *dataFixture) storeCard(tn tenant, customerID, number string) string {
	f.t.Helper()
	status, data := f.call(tn, http.MethodPost, "/v1/customers/"+customerID+"/cards", map[string]any{"card": map[string]any{
		"number": number, "expiryMonth": "04", "expiryYear": fmt.Sprintf("%02d", (f.clock.Now().Year()+2)%100), "holderName": "Ada Lovelace",
	}})
	if status != http.StatusCreated {
		f.t.Fatalf("store card: %d %v", status, data)
	}
	return data["id"].(string)
}

var customerLink = regexp.MustCompile(`href="/dashboard/(?:test|live)/customers/([0-9a-f-]{36})"`)

func customerIDs(body string) []string {
	var out []string
	for _, m := range customerLink.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestCustomers(t *testing.T) {
	t.Parallel()
	f := newDataFixture(t)
	c1 := f.customer(f.a, "shop-100", "ada@example.com")
	f.clock.Add(time.Millisecond)
	c2 := f.customer(f.a, "shop-101", "")
	f.clock.Add(time.Millisecond)
	c3 := f.customer(f.a, "other-7", "Grace@Example.com")
	f.customer(f.b, "shop-100", "ada@example.com")

	for _, tc := range []struct {
		name, q string
		want    []string
	}{
		{"All", "", []string{c3, c2, c1}},
		{"Prefix", "shop-10", []string{c2, c1}},
		{"Exact", "shop-101", []string{c2}},
		{"Email", "ADA@example.com", []string{c1}},
		{"EmailCase", "grace@example.com", []string{c3}},
		{"EmailPrefixIsNoMatch", "ada@", nil},
		{"None", "nobody", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := f.get(f.a.viewer, "/customers?"+url.Values{"q": {tc.q}}.Encode())
			if got := customerIDs(pg.body); pg.code != http.StatusOK || !slices.Equal(got, tc.want) {
				t.Errorf("search %q: %d %v, want %v", tc.q, pg.code, got, tc.want)
			}
		})
	}
	t.Run("ErrCursor", func(t *testing.T) {
		if pg := f.get(f.a.viewer, "/customers?after=nonsense"); pg.code != http.StatusBadRequest {
			t.Errorf("bad cursor: %d", pg.code)
		}
	})
}

func TestCustomersPagination(t *testing.T) {
	t.Parallel()
	f := newDataFixture(t)
	var ids []string
	for i := range pageSize + 2 {
		ids = append(ids, f.customer(f.a, fmt.Sprintf("bulk-%03d", i), ""))
		f.clock.Add(time.Millisecond)
	}
	slices.Reverse(ids)
	first := f.get(f.a.viewer, "/customers?q=bulk-")
	if got := customerIDs(first.body); !slices.Equal(got, ids[:pageSize]) {
		t.Fatalf("first page has %d customers", len(got))
	}
	older := hrefOf(t, first.body, "Older →")
	if !strings.Contains(older, "q=bulk-") {
		t.Fatalf("Older link %q does not keep the search", older)
	}
	second := f.get(f.a.viewer, strings.TrimPrefix(older, "/dashboard/test"))
	if got := customerIDs(second.body); !slices.Equal(got, ids[pageSize:]) {
		t.Fatalf("second page %v, want %v", got, ids[pageSize:])
	}
}

func TestCustomerDetailAndDeleteCard(t *testing.T) {
	t.Parallel()
	f := newDataFixture(t)
	cid := f.customer(f.a, "shop-200", "ada@example.com")
	p1 := f.pay(f.a, cardOK, "12.00", "GBP", "shop-200", "o-1")
	card := f.storeCard(f.a, cid, "5555555555554444")
	f.pay(f.a, cardOK, "1.00", "GBP", "shop-201", "o-2") // another customer's

	pg := f.get(f.a.viewer, "/customers/"+cid)
	if pg.code != http.StatusOK {
		t.Fatalf("customer page: %d", pg.code)
	}
	if got := paymentIDs(pg.body); !slices.Equal(got, []string{p1}) {
		t.Errorf("payments %v, want [%s]", got, p1)
	}
	for _, want := range []string{"shop-200", "ada@example.com", "Mastercard •••• 4444", "04/", "£12.00",
		`href="/dashboard/test/payments?customer=shop-200"`, `action="/dashboard/test/customers/` + cid + `/cards/` + card + `/delete"`} {
		if !strings.Contains(pg.body, want) {
			t.Errorf("customer page does not show %q", want)
		}
	}
	if strings.Contains(pg.body, "5555555555554444") {
		t.Fatal("the page shows a full card number")
	}

	del := f.post(f.a.viewer, "/customers/"+cid+"/cards/"+card+"/delete", url.Values{"csrf": {"csrf"}})
	if del.code != http.StatusSeeOther || del.location != "/dashboard/test/customers/"+cid+"?deleted=1" {
		t.Fatalf("delete: %d %q\n%s", del.code, del.location, del.body)
	}
	cards, err := f.st.StoredCards(context.Background(), paygate.StoredCardQuery{MerchantID: f.a.merchantID, Mode: paygate.ModeTest, CustomerID: cid})
	if err != nil || len(cards) != 0 {
		t.Fatalf("cards after delete: %v %v", cards, err)
	}
	after := f.get(f.a.viewer, "/customers/"+cid+"?deleted=1")
	if !strings.Contains(after.body, "The stored card was deleted.") || strings.Contains(after.body, "•••• 4444") {
		t.Errorf("customer page after delete:\n%s", after.body)
	}
	au := f.audits(t, f.a.merchantID, paygate.AuditStoredCardDeleted)
	if len(au) != 1 || au[0].Target != card || !strings.Contains(au[0].Detail, "Mastercard •••• 4444") {
		t.Errorf("audit %+v", au)
	}
	// The API agrees: the card is gone.
	if status, _ := f.call(f.a, http.MethodDelete, "/v1/customers/"+cid+"/cards/"+card, nil); status != http.StatusNotFound {
		t.Errorf("API delete after dashboard delete: %d, want 404", status)
	}
	if again := f.post(f.a.viewer, "/customers/"+cid+"/cards/"+card+"/delete", url.Values{}); again.code != http.StatusNotFound {
		t.Errorf("second delete: %d, want 404", again.code)
	}
}

// TestOtherTenantsIDs: ids of another merchant, or of the other mode, are
// 404 on every page that takes one, and nothing changes.
func TestOtherTenantsIDs(t *testing.T) {
	t.Parallel()
	f := newDataFixture(t)
	bCustomer := f.customer(f.b, "b-cust", "")
	bPayment := f.pay(f.b, cardOK, "10.00", "EUR", "b-cust", "")
	bCard := f.storeCard(f.b, bCustomer, "4242424242424242")
	aCustomer := f.customer(f.a, "a-cust", "")
	aPayment := f.pay(f.a, cardOK, "10.00", "EUR", "a-cust", "")
	aCard := f.storeCard(f.a, aCustomer, "4242424242424242")
	unknown := id.New()

	for _, tc := range []struct {
		name   string
		v      *viewer
		method string
		path   string
	}{
		{"OtherMerchantPayment", f.a.viewer, http.MethodGet, "/payments/" + bPayment},
		{"OtherMerchantRefund", f.a.viewer, http.MethodPost, "/payments/" + bPayment + "/refund"},
		{"OtherMerchantCustomer", f.a.viewer, http.MethodGet, "/customers/" + bCustomer},
		{"OtherMerchantCard", f.a.viewer, http.MethodPost, "/customers/" + bCustomer + "/cards/" + bCard + "/delete"},
		{"OwnCustomerOtherMerchantCard", f.a.viewer, http.MethodPost, "/customers/" + aCustomer + "/cards/" + bCard + "/delete"},
		{"OtherModePayment", f.aLive.viewer, http.MethodGet, "/payments/" + aPayment},
		{"OtherModeRefund", f.aLive.viewer, http.MethodPost, "/payments/" + aPayment + "/refund"},
		{"OtherModeCustomer", f.aLive.viewer, http.MethodGet, "/customers/" + aCustomer},
		{"OtherModeCard", f.aLive.viewer, http.MethodPost, "/customers/" + aCustomer + "/cards/" + aCard + "/delete"},
		{"UnknownPayment", f.a.viewer, http.MethodGet, "/payments/" + unknown},
		{"NotAnID", f.a.viewer, http.MethodGet, "/payments/not-a-uuid"},
		{"NotAnIDCustomer", f.a.viewer, http.MethodGet, "/customers/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"csrf": {"csrf"}, "amount": {"10.00"}, "idempotency_key": {id.New()}}
			if tc.method == http.MethodGet {
				form = nil
			}
			pg := f.serve(tc.v, tc.method, tc.path, form)
			if pg.code != http.StatusNotFound {
				t.Errorf("%s %s: %d, want 404", tc.method, tc.path, pg.code)
			}
			if strings.Contains(pg.body, "b-cust") {
				t.Errorf("the 404 page shows the other merchant's data")
			}
		})
	}
	if rs := f.refunds(t, f.b, bPayment); len(rs) != 0 {
		t.Errorf("b's payment was refunded by a: %+v", rs)
	}
	if rs := f.refunds(t, f.a, aPayment); len(rs) != 0 {
		t.Errorf("a's test payment was refunded from live mode: %+v", rs)
	}
	for _, c := range []struct {
		tn       tenant
		customer string
	}{{f.b, bCustomer}, {f.a, aCustomer}} {
		cards, err := f.st.StoredCards(context.Background(), paygate.StoredCardQuery{MerchantID: c.tn.merchantID, Mode: c.tn.mode, CustomerID: c.customer})
		if err != nil || len(cards) != 1 {
			t.Errorf("cards of %s: %v %v", c.customer, cards, err)
		}
	}
}
