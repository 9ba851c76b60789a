package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// paymentSearchCases covers the dashboard's payment search through
// ListPayments (issue 22): by payment id, card last four, customer email
// (case-insensitive) and merchant reference, each filtered by merchant and
// mode, combined with the list's other filters and its keyset pages.
func paymentSearchCases() []testCase {
	return []testCase{
		{"Search", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			email := func(fx fixture, mode paygate.Mode, ext, addr string) {
				t.Helper()
				_, err := s.UpsertCustomer(ctx(t), paygate.CustomerUpsert{
					NewID: newID(), MerchantID: fx.merchant.ID, Mode: mode, ExternalID: ext, Email: &addr, Now: base,
				})
				must(t, err)
			}
			pay := func(fx fixture, mode paygate.Mode, minute int, last4, ref, customer string) paygate.Payment {
				t.Helper()
				v := fx.paymentValue(mode, at(time.Duration(minute)*time.Minute))
				v.Card.Last4, v.MerchantRef = last4, ref
				return fx.createPayment(t, v, customer)
			}
			email(f, paygate.ModeTest, "cus-ada", "Ada@Example.com")
			email(f, paygate.ModeTest, "cus-ada-2", "ada@example.com")
			email(f, paygate.ModeTest, "cus-bob", "bob@example.com")
			email(f, paygate.ModeLive, "cus-ada", "ada@example.com")
			email(other, paygate.ModeTest, "cus-ada", "ada@example.com")
			p1 := pay(f, paygate.ModeTest, 1, "4242", "order-1", "cus-ada")
			p2 := pay(f, paygate.ModeTest, 2, "1111", "order-2", "cus-bob")
			p3 := pay(f, paygate.ModeTest, 3, "4242", "order-3", "cus-ada-2")
			p4 := pay(f, paygate.ModeTest, 4, "4242", "order-1", "cus-bob")
			live := pay(f, paygate.ModeLive, 5, "4242", "order-1", "cus-ada")
			theirs := pay(other, paygate.ModeTest, 6, "4242", "order-1", "cus-ada")

			list := func(q paygate.PaymentQuery) []string {
				t.Helper()
				if q.MerchantID == "" {
					q.MerchantID, q.Mode = f.merchant.ID, paygate.ModeTest
				}
				got, err := s.ListPayments(ctx(t), q)
				must(t, err)
				ids := []string{}
				for _, p := range got {
					ids = append(ids, p.ID)
				}
				return ids
			}
			for _, tc := range []struct {
				name string
				q    paygate.PaymentQuery
				want []string
			}{
				{"ByID", paygate.PaymentQuery{PaymentID: p2.ID}, []string{p2.ID}},
				{"ByIDOfAnotherMode", paygate.PaymentQuery{PaymentID: live.ID}, []string{}},
				{"ByIDOfAnotherMerchant", paygate.PaymentQuery{PaymentID: theirs.ID}, []string{}},
				{"ByIDAndOtherStatus", paygate.PaymentQuery{PaymentID: p2.ID, Statuses: []paygate.PaymentStatus{paygate.PaymentCaptured}}, []string{}},
				{"ByLast4", paygate.PaymentQuery{CardLast4: "4242"}, []string{p4.ID, p3.ID, p1.ID}},
				{"ByLast4None", paygate.PaymentQuery{CardLast4: "9999"}, []string{}},
				{"ByLast4Live", paygate.PaymentQuery{MerchantID: f.merchant.ID, Mode: paygate.ModeLive, CardLast4: "4242"}, []string{live.ID}},
				{"ByLast4AndCurrency", paygate.PaymentQuery{CardLast4: "4242", Currency: "USD"}, []string{}},
				{"ByLast4AndDates", paygate.PaymentQuery{CardLast4: "4242", CreatedFrom: at(2 * time.Minute), CreatedBefore: at(4 * time.Minute)}, []string{p3.ID}},
				{"ByEmailAnyCase", paygate.PaymentQuery{CustomerEmail: "ADA@example.COM"}, []string{p3.ID, p1.ID}},
				{"ByEmailOther", paygate.PaymentQuery{CustomerEmail: "bob@example.com"}, []string{p4.ID, p2.ID}},
				{"ByEmailNone", paygate.PaymentQuery{CustomerEmail: "eve@example.com"}, []string{}},
				{"ByEmailAndLast4", paygate.PaymentQuery{CustomerEmail: "bob@example.com", CardLast4: "1111"}, []string{p2.ID}},
				{"ByReference", paygate.PaymentQuery{MerchantRef: "order-1"}, []string{p4.ID, p1.ID}},
				{"ByReferenceAndLast4", paygate.PaymentQuery{MerchantRef: "order-1", CardLast4: "1111"}, []string{}},
			} {
				if got := list(tc.q); strings.Join(got, ",") != strings.Join(tc.want, ",") {
					t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
				}
			}

			// Keyset pages of a search.
			first := list(paygate.PaymentQuery{CardLast4: "4242", Limit: 2})
			if strings.Join(first, ",") != p4.ID+","+p3.ID {
				t.Fatalf("first page %v", first)
			}
			rest := list(paygate.PaymentQuery{CardLast4: "4242", Limit: 2, After: &paygate.PageCursor{CreatedAt: p3.CreatedAt, ID: p3.ID}})
			if strings.Join(rest, ",") != p1.ID {
				t.Errorf("second page %v, want [%s]", rest, p1.ID)
			}
			emailRest := list(paygate.PaymentQuery{CustomerEmail: "ada@example.com", Limit: 1, After: &paygate.PageCursor{CreatedAt: p3.CreatedAt, ID: p3.ID}})
			if strings.Join(emailRest, ",") != p1.ID {
				t.Errorf("email second page %v, want [%s]", emailRest, p1.ID)
			}
		}},
		{"StatsRefunded", func(t *testing.T, s paygate.Store) {
			// PaymentStats sums what was refunded of the captured payments,
			// in the period of the payment's creation, for the net volume.
			f := newMerchant(t, s, base)
			p := f.capturedPayment(t, paygate.ModeTest, 1000, "EUR", 1000)
			must(t, createRefund(ctx(t), s, refundValue(p, 300, at(time.Hour)), nil, nil))
			f.capturedPayment(t, paygate.ModeTest, 500, "EUR", 500)
			got, err := s.PaymentStats(ctx(t), f.merchant.ID, paygate.ModeTest, base, at(24*time.Hour))
			must(t, err)
			var volume, refunded int64
			for _, st := range got {
				volume += st.Volume
				refunded += st.Refunded
			}
			if volume != 1500 || refunded != 300 {
				t.Errorf("volume %d, refunded %d; want 1500 and 300", volume, refunded)
			}
		}},
	}
}
