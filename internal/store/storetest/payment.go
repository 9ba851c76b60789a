package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/sandbox"
	"github.com/paygate/paygate/internal/store/plan"
)

func customerCases() []testCase {
	return []testCase{
		{"UpsertCreates", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			u := paygate.CustomerUpsert{
				NewID: newID(), MerchantID: f.merchant.ID, Mode: paygate.ModeTest,
				ExternalID: "cust-1", Email: ptr("a@example.com"), Metadata: []byte(`{"tier":"gold"}`),
				Now: at(time.Hour),
			}
			got, err := s.UpsertCustomer(ctx(t), u)
			must(t, err)
			want := paygate.Customer{
				ID: u.NewID, MerchantID: f.merchant.ID, Mode: paygate.ModeTest, ExternalID: "cust-1",
				Email: "a@example.com", Metadata: []byte(`{"tier":"gold"}`),
				CreatedAt: at(time.Hour), UpdatedAt: at(time.Hour),
			}
			equal(t, "created customer", want, got)
			got, err = s.CustomerByID(ctx(t), f.merchant.ID, paygate.ModeTest, u.NewID)
			must(t, err)
			equal(t, "stored customer", want, got)
		}},
		{"UpsertCreatesWithoutEmailOrMetadata", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			got, err := s.UpsertCustomer(ctx(t), paygate.CustomerUpsert{
				NewID: newID(), MerchantID: f.merchant.ID, Mode: paygate.ModeLive, ExternalID: "cust-1", Now: base,
			})
			must(t, err)
			if got.Email != "" || string(got.Metadata) != "{}" {
				t.Fatalf("got email %q metadata %q, want \"\" and {}", got.Email, got.Metadata)
			}
		}},
		{"UpsertUpdates", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			first, err := s.UpsertCustomer(ctx(t), paygate.CustomerUpsert{
				NewID: newID(), MerchantID: f.merchant.ID, Mode: paygate.ModeTest, ExternalID: "cust-1",
				Email: ptr("a@example.com"), Metadata: []byte(`{"a":"1"}`), Now: at(time.Hour),
			})
			must(t, err)
			// Nil email and metadata keep the stored values.
			got, err := s.UpsertCustomer(ctx(t), paygate.CustomerUpsert{
				NewID: newID(), MerchantID: f.merchant.ID, Mode: paygate.ModeTest, ExternalID: "cust-1",
				Now: at(2 * time.Hour),
			})
			must(t, err)
			want := first
			want.UpdatedAt = at(2 * time.Hour)
			equal(t, "customer after an upsert without fields", want, got)
			// Given values replace them.
			got, err = s.UpsertCustomer(ctx(t), paygate.CustomerUpsert{
				NewID: newID(), MerchantID: f.merchant.ID, Mode: paygate.ModeTest, ExternalID: "cust-1",
				Email: ptr("b@example.com"), Metadata: []byte(`{"b":"2"}`), Now: at(3 * time.Hour),
			})
			must(t, err)
			want.Email, want.Metadata, want.UpdatedAt = "b@example.com", []byte(`{"b":"2"}`), at(3*time.Hour)
			equal(t, "customer after an upsert with fields", want, got)
			got, err = s.CustomerByID(ctx(t), f.merchant.ID, paygate.ModeTest, first.ID)
			must(t, err)
			equal(t, "stored customer", want, got)
		}},
		{"ExternalIDScopedByMerchantAndMode", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			ids := map[string]bool{}
			for _, u := range []paygate.CustomerUpsert{
				{MerchantID: f.merchant.ID, Mode: paygate.ModeTest},
				{MerchantID: f.merchant.ID, Mode: paygate.ModeLive},
				{MerchantID: other.merchant.ID, Mode: paygate.ModeTest},
			} {
				u.NewID, u.ExternalID, u.Now = newID(), "same", base
				got, err := s.UpsertCustomer(ctx(t), u)
				must(t, err)
				if got.ID != u.NewID {
					t.Errorf("customer of %s/%s: got id %s, want a new customer %s", u.MerchantID, u.Mode, got.ID, u.NewID)
				}
				ids[got.ID] = true
			}
			if len(ids) != 3 {
				t.Fatalf("got %d distinct customers, want 3", len(ids))
			}
		}},
		{"Tenancy", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			c, err := s.UpsertCustomer(ctx(t), paygate.CustomerUpsert{
				NewID: newID(), MerchantID: f.merchant.ID, Mode: paygate.ModeTest, ExternalID: "cust-1", Now: base,
			})
			must(t, err)
			_, err = s.CustomerByID(ctx(t), f.merchant.ID, paygate.ModeLive, c.ID)
			wantNotFound(t, err)
			_, err = s.CustomerByID(ctx(t), other.merchant.ID, paygate.ModeTest, c.ID)
			wantNotFound(t, err)
			_, err = s.CustomerByID(ctx(t), f.merchant.ID, paygate.ModeTest, newID())
			wantNotFound(t, err)
		}},
	}
}

func paymentCases() []testCase {
	return []testCase{
		{"CreateRoundTrip", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.paymentValue(paygate.ModeLive, at(time.Hour))
			f.reserve(t, p.Mode, p.IdempotencyKey, p.CreatedAt)
			newCustomer := newID()
			got, err := s.CreatePayment(ctx(t), paygate.NewPayment{Payment: p, CustomerExternalID: "cust-1", NewCustomerID: newCustomer})
			must(t, err)
			want := p
			want.CustomerID = newCustomer
			equal(t, "created payment", want, got)
			stored, err := s.PaymentByID(ctx(t), f.merchant.ID, paygate.ModeLive, p.ID)
			must(t, err)
			equal(t, "stored payment", want, stored)
			// The customer was created with no email and empty metadata.
			c, err := s.CustomerByID(ctx(t), f.merchant.ID, paygate.ModeLive, newCustomer)
			must(t, err)
			if c.ExternalID != "cust-1" || c.Email != "" || string(c.Metadata) != "{}" {
				t.Errorf("created customer: got external id %q email %q metadata %q, want cust-1, \"\", {}", c.ExternalID, c.Email, c.Metadata)
			}
			// The payment is linked to its idempotency record.
			rec := f.lookup(t, paygate.ModeLive, p.IdempotencyKey, at(time.Hour+time.Second))
			if rec.PaymentID != p.ID {
				t.Errorf("idempotency record's payment: got %q, want %s", rec.PaymentID, p.ID)
			}
		}},
		{"CreateOnLedgerRoute", func(t *testing.T, s paygate.Store) {
			// An insert whose route keeps its ledger in this database may
			// skip its own flush (plan.LazyCreate): it is stored, linked
			// and visible exactly as a durable one, with or without a
			// reservation in the same call.
			f := newMerchant(t, s, base)
			route := []paygate.Provider{sandbox.New("sandbox-eu", nil), sandbox.New("sandbox-global", nil)}
			if !plan.LazyCreate(paygate.NewPayment{Route: route}) {
				t.Fatal("a route of sandboxes: want a lazy insert")
			}
			p := f.paymentValue(paygate.ModeTest, at(time.Hour))
			f.reserve(t, p.Mode, p.IdempotencyKey, p.CreatedAt)
			newCustomer := newID()
			got, err := s.CreatePayment(ctx(t), paygate.NewPayment{Payment: p, CustomerExternalID: "cust-d", NewCustomerID: newCustomer, Route: route})
			must(t, err)
			want := p
			want.CustomerID = newCustomer
			equal(t, "created payment", want, got)
			stored, err := s.PaymentByID(ctx(t), f.merchant.ID, paygate.ModeTest, p.ID)
			must(t, err)
			equal(t, "stored payment", want, stored)
			if rec := f.lookup(t, paygate.ModeTest, p.IdempotencyKey, at(time.Hour+time.Second)); rec.PaymentID != p.ID {
				t.Errorf("idempotency record's payment: got %q, want %s", rec.PaymentID, p.ID)
			}
			// The customer resolved by external id is reused.
			again := f.paymentValue(paygate.ModeTest, at(2*time.Hour))
			f.reserve(t, again.Mode, again.IdempotencyKey, again.CreatedAt)
			got, err = s.CreatePayment(ctx(t), paygate.NewPayment{Payment: again, CustomerExternalID: "cust-d", NewCustomerID: newID(), Route: route})
			must(t, err)
			if got.CustomerID != newCustomer {
				t.Errorf("second payment's customer: got %s, want %s", got.CustomerID, newCustomer)
			}
			// Reserved in the same call.
			third := f.paymentValue(paygate.ModeTest, at(3*time.Hour))
			np := reservedPayment(third, f.reservation(third.Mode, third.IdempotencyKey, third.CreatedAt), "cust-d")
			np.Route = route
			got, err = s.CreatePayment(ctx(t), np)
			must(t, err)
			if got.CustomerID != newCustomer {
				t.Errorf("reserved payment's customer: got %s, want %s", got.CustomerID, newCustomer)
			}
			if rec := f.lookup(t, paygate.ModeTest, third.IdempotencyKey, at(3*time.Hour+time.Second)); rec.PaymentID != third.ID {
				t.Errorf("reserved payment's idempotency record: got %q, want %s", rec.PaymentID, third.ID)
			}
		}},
		{"MinimalRoundTrip", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.paymentValue(paygate.ModeTest, at(time.Hour))
			p.Billing = nil
			p.MerchantRef = ""
			p.ReturnURL = ""
			p.DeviceFingerprint = ""
			p.Metadata = []byte("{}")
			p.Amount = paygate.Money{Amount: 100, Currency: "JPY"}
			p.AmountText = "100"
			p.Card = paygate.CardSummary{Brand: "unknown", Last4: "0000", ExpMonth: 1, ExpYear: 2030, Fingerprint: "00"}
			got := f.createPayment(t, p, "cust-1")
			want := p
			want.CustomerID = got.CustomerID
			stored, err := s.PaymentByID(ctx(t), f.merchant.ID, paygate.ModeTest, p.ID)
			must(t, err)
			equal(t, "stored payment", want, stored)
			if stored.Billing != nil {
				t.Errorf("billing: got %+v, want nil", *stored.Billing)
			}
		}},
		{"StoredCardRoundTrip", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.paymentValue(paygate.ModeTest, at(time.Hour))
			p.Method = paygate.MethodStoredCard
			p.StoredCardID = newID()
			f.createPayment(t, p, "cust-1")
			stored, err := s.PaymentByID(ctx(t), f.merchant.ID, paygate.ModeTest, p.ID)
			must(t, err)
			if stored.Method != paygate.MethodStoredCard || stored.StoredCardID != p.StoredCardID {
				t.Errorf("got method %q stored card %q, want stored_card %s", stored.Method, stored.StoredCardID, p.StoredCardID)
			}
		}},
		{"CreateResolvesExistingCustomer", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			c, err := s.UpsertCustomer(ctx(t), paygate.CustomerUpsert{
				NewID: newID(), MerchantID: f.merchant.ID, Mode: paygate.ModeTest, ExternalID: "cust-1",
				Email: ptr("a@example.com"), Metadata: []byte(`{"k":"v"}`), Now: base,
			})
			must(t, err)
			p := f.createPayment(t, f.paymentValue(paygate.ModeTest, at(time.Hour)), "cust-1")
			if p.CustomerID != c.ID {
				t.Fatalf("payment's customer: got %s, want the existing %s", p.CustomerID, c.ID)
			}
			got, err := s.CustomerByID(ctx(t), f.merchant.ID, paygate.ModeTest, c.ID)
			must(t, err)
			equal(t, "customer after a payment", c, got)
			// The same external id in the other mode is another customer.
			live := f.createPayment(t, f.paymentValue(paygate.ModeLive, at(time.Hour)), "cust-1")
			if live.CustomerID == c.ID {
				t.Fatal("a live payment resolved the test customer")
			}
		}},
		{"DuplicateIDConflicts", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Hour))
			again := f.paymentValue(paygate.ModeTest, at(2*time.Hour))
			again.ID = p.ID
			f.reserve(t, again.Mode, again.IdempotencyKey, again.CreatedAt)
			_, err := s.CreatePayment(ctx(t), paygate.NewPayment{Payment: again, CustomerExternalID: "cust-x", NewCustomerID: newID()})
			wantIs(t, err, paygate.ErrConflict)
			stored, err := s.PaymentByID(ctx(t), f.merchant.ID, paygate.ModeTest, p.ID)
			must(t, err)
			equal(t, "payment after a refused duplicate", p, stored)
		}},
		{"Tenancy", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Hour))
			for _, q := range []struct {
				merchant string
				mode     paygate.Mode
				id       string
			}{
				{f.merchant.ID, paygate.ModeLive, p.ID},
				{other.merchant.ID, paygate.ModeTest, p.ID},
				{f.merchant.ID, paygate.ModeTest, newID()},
			} {
				_, err := s.PaymentByID(ctx(t), q.merchant, q.mode, q.id)
				wantNotFound(t, err)
			}
			for _, q := range []struct {
				merchant string
				mode     paygate.Mode
				ref      string
			}{
				{f.merchant.ID, paygate.ModeLive, p.MerchantRef},
				{other.merchant.ID, paygate.ModeTest, p.MerchantRef},
				{f.merchant.ID, paygate.ModeTest, "no-such-ref"},
			} {
				_, err := s.PaymentByMerchantRef(ctx(t), q.merchant, q.mode, q.ref)
				wantNotFound(t, err)
			}
		}},
		{"ByMerchantRefMostRecent", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			newest := f.paymentValue(paygate.ModeTest, at(3*time.Hour))
			newest.MerchantRef = "order-1"
			middle := f.paymentValue(paygate.ModeTest, at(2*time.Hour))
			middle.MerchantRef = "order-1"
			oldest := f.paymentValue(paygate.ModeTest, at(time.Hour))
			oldest.MerchantRef = "order-1"
			// Inserted out of order: "most recent" is by CreatedAt.
			f.createPayment(t, middle, "cust-1")
			want := f.createPayment(t, newest, "cust-1")
			f.createPayment(t, oldest, "cust-1")
			// Newer payments with the reference in the other mode and merchant do not count.
			live := f.paymentValue(paygate.ModeLive, at(4*time.Hour))
			live.MerchantRef = "order-1"
			f.createPayment(t, live, "cust-1")
			foreign := other.paymentValue(paygate.ModeTest, at(4*time.Hour))
			foreign.MerchantRef = "order-1"
			other.createPayment(t, foreign, "cust-1")
			got, err := s.PaymentByMerchantRef(ctx(t), f.merchant.ID, paygate.ModeTest, "order-1")
			must(t, err)
			equal(t, "payment by reference", want, got)
		}},
		{"ByMerchantRefEmptyMatchesNothing", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			none := f.paymentValue(paygate.ModeTest, at(time.Hour))
			none.MerchantRef = ""
			f.createPayment(t, none, "cust-1")
			_, err := s.PaymentByMerchantRef(ctx(t), f.merchant.ID, paygate.ModeTest, "")
			wantNotFound(t, err)
			// Without a query: a canceled context does not matter.
			c, cancel := context.WithCancel(ctx(t))
			cancel()
			_, err = s.PaymentByMerchantRef(c, f.merchant.ID, paygate.ModeTest, "")
			wantNotFound(t, err)
		}},
		{"TransitionWritesEverything", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Hour))
			ev := eventValue(p, paygate.EventPaymentCaptured, "", at(time.Hour+time.Second))
			body := []byte(`{"data":{"id":"` + p.ID + `","status":"captured"}}`)
			must(t, s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
				ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
				From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentCaptured,
				ProviderID: "sandbox-eu", ProviderRef: "psp-123", AmountCaptured: ptr(int64(1050)),
				UpdatedAt: at(time.Hour + time.Second),
			}, []paygate.Event{ev}, &paygate.IdempotencyCompletion{
				MerchantID: p.MerchantID, Mode: p.Mode, Key: p.IdempotencyKey, StatusCode: 201, Body: body,
			})))
			want := p
			want.Status, want.ProviderID, want.ProviderRef = paygate.PaymentCaptured, "sandbox-eu", "psp-123"
			want.AmountCaptured, want.UpdatedAt = 1050, at(time.Hour+time.Second)
			got, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			equal(t, "captured payment", want, got)
			events, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode, Limit: 100})
			must(t, err)
			equal(t, "events", []paygate.Event{ev}, events)
			rec := f.lookup(t, p.Mode, p.IdempotencyKey, at(2*time.Hour))
			if rec.State != paygate.IdempotencyComplete || rec.StatusCode != 201 || string(rec.Body) != string(body) || rec.PaymentID != p.ID {
				t.Errorf("idempotency record: got %+v, want complete 201 with the body and payment", rec)
			}
		}},
		{"TransitionKeepsAStoredAnswer", func(t *testing.T, s paygate.Store) {
			// A request that answered 202 (outcome unknown) stored that
			// answer; recovery's transition later writes the payment and
			// its event but leaves the answer the client was given.
			f := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Hour))
			accepted := []byte(`{"data":{"id":"` + p.ID + `","status":"created"}}`)
			must(t, s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
				ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
				From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentCreated,
				ProviderID: "sandbox-eu", UpdatedAt: at(time.Hour + time.Second),
			}, nil, &paygate.IdempotencyCompletion{
				MerchantID: p.MerchantID, Mode: p.Mode, Key: p.IdempotencyKey, StatusCode: 202, Body: accepted,
			})))
			ev := eventValue(p, paygate.EventPaymentCaptured, "", at(time.Hour+5*time.Second))
			must(t, s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
				ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
				From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentCaptured,
				ProviderRef: "psp-9", AmountCaptured: ptr(int64(1050)), UpdatedAt: at(time.Hour + 5*time.Second),
			}, []paygate.Event{ev}, &paygate.IdempotencyCompletion{
				MerchantID: p.MerchantID, Mode: p.Mode, Key: p.IdempotencyKey, StatusCode: 201,
				Body: []byte(`{"data":{"id":"` + p.ID + `","status":"captured"}}`),
			})))
			got, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			if got.Status != paygate.PaymentCaptured || got.ProviderID != "sandbox-eu" || got.AmountCaptured != 1050 {
				t.Errorf("payment after recovery's transition: %+v", got)
			}
			events, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode, Limit: 100})
			must(t, err)
			equal(t, "events", []paygate.Event{ev}, events)
			rec := f.lookup(t, p.Mode, p.IdempotencyKey, at(2*time.Hour))
			if rec.State != paygate.IdempotencyComplete || rec.StatusCode != 202 || string(rec.Body) != string(accepted) {
				t.Errorf("idempotency record: got %d %s, want the stored 202 %s", rec.StatusCode, rec.Body, accepted)
			}
		}},
		{"TransitionFailedFields", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeLive, at(time.Hour))
			must(t, s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
				ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
				From: []paygate.PaymentStatus{paygate.PaymentCreated, paygate.PaymentPending3DS}, To: paygate.PaymentFailed,
				ProviderID: "sandbox-us", ErrorCode: "CARD_DECLINED", ErrorMessage: "The card was declined.",
				DeclineCode: paygate.DeclineInsufficientFunds, UpdatedAt: at(2 * time.Hour),
			}, nil, nil)))
			want := p
			want.Status, want.ProviderID = paygate.PaymentFailed, "sandbox-us"
			want.ErrorCode, want.ErrorMessage, want.DeclineCode = "CARD_DECLINED", "The card was declined.", paygate.DeclineInsufficientFunds
			want.UpdatedAt = at(2 * time.Hour)
			got, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			equal(t, "failed payment", want, got)
		}},
		{"TransitionEmptyFieldsKeepValues", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Hour))
			must(t, s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
				ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
				From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentAuthorized,
				ProviderID: "sandbox-eu", ProviderRef: "psp-1", UpdatedAt: at(2 * time.Hour),
			}, nil, nil)))
			must(t, s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
				ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
				From: []paygate.PaymentStatus{paygate.PaymentAuthorized}, To: paygate.PaymentCaptured,
				AmountCaptured: ptr(int64(700)), UpdatedAt: at(3 * time.Hour),
			}, nil, nil)))
			want := p
			want.Status, want.ProviderID, want.ProviderRef = paygate.PaymentCaptured, "sandbox-eu", "psp-1"
			want.AmountCaptured, want.UpdatedAt = 700, at(3*time.Hour)
			got, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			equal(t, "captured payment", want, got)
		}},
		{"TransitionFromWrongStatusWritesNothing", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Hour))
			ev := eventValue(p, paygate.EventPaymentCaptured, "", at(2*time.Hour))
			err := s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
				ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
				From: []paygate.PaymentStatus{paygate.PaymentAuthorized, paygate.PaymentPending3DS}, To: paygate.PaymentCaptured,
				ProviderID: "sandbox-eu", AmountCaptured: ptr(int64(1050)), UpdatedAt: at(2 * time.Hour),
			}, []paygate.Event{ev}, &paygate.IdempotencyCompletion{
				MerchantID: p.MerchantID, Mode: p.Mode, Key: p.IdempotencyKey, StatusCode: 201, Body: []byte(`{}`),
			}))
			wantIs(t, err, paygate.ErrStateConflict)
			got, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			equal(t, "payment after a refused transition", p, got)
			events, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode, Limit: 100})
			must(t, err)
			if len(events) != 0 {
				t.Errorf("%d events were inserted by a refused transition", len(events))
			}
			rec := f.lookup(t, p.Mode, p.IdempotencyKey, at(time.Hour+time.Second))
			if rec.State != paygate.IdempotencyInFlight {
				t.Errorf("idempotency record is %q after a refused transition, want in_flight", rec.State)
			}
		}},
		{"TransitionOnlyOnce", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Hour))
			tr := paygate.PaymentTransition{
				ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
				From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentFailed,
				ErrorCode: "PROVIDER_ERROR", UpdatedAt: at(2 * time.Hour),
			}
			must(t, s.Commit(ctx(t), transitionUnit(tr, nil, nil)))
			wantIs(t, s.Commit(ctx(t), transitionUnit(tr, nil, nil)), paygate.ErrStateConflict)
		}},
		{"TransitionTenancy", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Hour))
			for _, q := range []struct {
				merchant string
				mode     paygate.Mode
				id       string
			}{
				{f.merchant.ID, paygate.ModeLive, p.ID},
				{other.merchant.ID, paygate.ModeTest, p.ID},
				{f.merchant.ID, paygate.ModeTest, newID()},
			} {
				err := s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
					ID: q.id, MerchantID: q.merchant, Mode: q.mode,
					From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentFailed,
					UpdatedAt: at(2 * time.Hour),
				}, nil, nil))
				wantNotFound(t, err)
			}
			got, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			equal(t, "payment after foreign transitions", p, got)
		}},
	}
}
