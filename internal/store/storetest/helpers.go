package storetest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/testenv"
)

// base is the suite's epoch: a UTC time with microseconds, so that a store
// that drops precision or the location fails. The stores never read the wall
// clock, so a fixed time is as good as any.
var base = time.Date(2031, time.March, 14, 15, 9, 26, 535897000, time.UTC)

// at returns base plus d.
func at(d time.Duration) time.Time { return base.Add(d) }

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// ctx returns a context that ends with the test.
func ctx(t *testing.T) context.Context { return t.Context() }

// newID returns a random version 4 UUID in canonical form.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// randomBytes returns n random bytes.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// --- assertions -------------------------------------------------------------

// must fails the test at once on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// wantCode fails unless err is a *paygate.Error with the code (and, when
// param is not "", that param).
func wantCode(t *testing.T, err error, code paygate.Code, param string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", code)
	}
	var e *paygate.Error
	if !errors.As(err, &e) {
		t.Fatalf("got error %v (%T), want a *paygate.Error %s", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("got error code %s (%v), want %s", e.Code, err, code)
	}
	if param != "" && e.Param != param {
		t.Fatalf("got error param %q (%v), want %q", e.Param, err, param)
	}
}

// wantNotFound fails unless err is NOT_FOUND.
func wantNotFound(t *testing.T, err error) {
	t.Helper()
	if !paygate.IsNotFound(err) {
		t.Fatalf("got error %v, want NOT_FOUND", err)
	}
}

// wantIs fails unless errors.Is(err, target).
func wantIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got error %v, want %v", err, target)
	}
}

// equal fails (without stopping) unless got equals want field by field.
// Times must be equal instants and in UTC; nil and empty slices are equal;
// nil and non-nil pointers are not.
func equal(t *testing.T, what string, want, got any) {
	t.Helper()
	var diffs []string
	compare(what, reflect.ValueOf(want), reflect.ValueOf(got), &diffs)
	if len(diffs) > 0 {
		t.Errorf("%s differs:\n\t%s", what, strings.Join(diffs, "\n\t"))
	}
}

var timeType = reflect.TypeOf(time.Time{})

func compare(path string, w, g reflect.Value, out *[]string) {
	if !w.IsValid() || !g.IsValid() {
		if w.IsValid() != g.IsValid() {
			*out = append(*out, fmt.Sprintf("%s: want %v, got %v", path, w, g))
		}
		return
	}
	if w.Type() != g.Type() {
		*out = append(*out, fmt.Sprintf("%s: want type %s, got %s", path, w.Type(), g.Type()))
		return
	}
	if w.Type() == timeType {
		wt, gt := w.Interface().(time.Time), g.Interface().(time.Time)
		if !wt.Equal(gt) {
			*out = append(*out, fmt.Sprintf("%s: want %s, got %s", path, wt.Format(time.RFC3339Nano), gt.Format(time.RFC3339Nano)))
		} else if gt.Location() != time.UTC {
			*out = append(*out, fmt.Sprintf("%s: got location %q, want UTC", path, gt.Location()))
		}
		return
	}
	switch w.Kind() {
	case reflect.Pointer:
		if w.IsNil() || g.IsNil() {
			if w.IsNil() != g.IsNil() {
				*out = append(*out, fmt.Sprintf("%s: want %s, got %s", path, show(w), show(g)))
			}
			return
		}
		compare(path, w.Elem(), g.Elem(), out)
	case reflect.Struct:
		for i := range w.NumField() {
			f := w.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			compare(path+"."+f.Name, w.Field(i), g.Field(i), out)
		}
	case reflect.Slice:
		if w.Type().Elem().Kind() == reflect.Uint8 {
			if string(w.Bytes()) != string(g.Bytes()) {
				*out = append(*out, fmt.Sprintf("%s: want %q, got %q", path, w.Bytes(), g.Bytes()))
			}
			return
		}
		if w.Len() != g.Len() {
			*out = append(*out, fmt.Sprintf("%s: want %d elements, got %d", path, w.Len(), g.Len()))
			return
		}
		for i := range w.Len() {
			compare(fmt.Sprintf("%s[%d]", path, i), w.Index(i), g.Index(i), out)
		}
	default:
		if !reflect.DeepEqual(w.Interface(), g.Interface()) {
			*out = append(*out, fmt.Sprintf("%s: want %#v, got %#v", path, w.Interface(), g.Interface()))
		}
	}
}

func show(v reflect.Value) string {
	if v.IsNil() {
		return "nil"
	}
	e := v.Elem()
	if e.Type() == timeType {
		return e.Interface().(time.Time).Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%+v", e.Interface())
}

// --- fixtures ---------------------------------------------------------------

// fixture is one merchant with an active secret key per mode.
type fixture struct {
	s        paygate.Store
	merchant paygate.Merchant
	testKey  paygate.APIKey
	liveKey  paygate.APIKey
	// testPublic and livePublic are the public keys of a fixture made by
	// newTokenMerchant; zero otherwise.
	testPublic, livePublic paygate.APIKey
}

// key returns the fixture's active secret key of the mode.
func (f fixture) key(mode paygate.Mode) paygate.APIKey {
	if mode == paygate.ModeLive {
		return f.liveKey
	}
	return f.testKey
}

// newKey returns an APIKey value (not stored).
func newKey(merchantID string, mode paygate.Mode, typ paygate.KeyType, created time.Time) paygate.APIKey {
	prefix := "smtgw_sk_"
	if typ == paygate.KeyPublic {
		prefix = "smtgw_pk_"
	}
	return paygate.APIKey{
		ID:         newID(),
		MerchantID: merchantID,
		Mode:       mode,
		Type:       typ,
		Hash:       randomBytes(32),
		Hint:       prefix + string(mode) + "_…" + newID()[:4],
		CreatedAt:  created,
	}
}

// newMerchant stores a merchant created at the time, with a secret key per
// mode.
func newMerchant(t *testing.T, s paygate.Store, created time.Time) fixture {
	t.Helper()
	m := paygate.Merchant{ID: newID(), Name: "Merchant " + newID()[:8], CreatedAt: created}
	f := fixture{
		s:        s,
		merchant: m,
		testKey:  newKey(m.ID, paygate.ModeTest, paygate.KeySecret, created),
		liveKey:  newKey(m.ID, paygate.ModeLive, paygate.KeySecret, created),
	}
	must(t, createMerchant(ctx(t), s, m, []paygate.APIKey{f.testKey, f.liveKey}))
	return f
}

// reserve reserves an idempotency key in (merchant, mode) at now and fails
// unless it was newly reserved.
func (f fixture) reserve(t *testing.T, mode paygate.Mode, key string, now time.Time) {
	t.Helper()
	_, reserved, err := f.s.ReserveIdempotency(ctx(t), f.reservation(mode, key, now))
	must(t, err)
	if !reserved {
		t.Fatalf("idempotency key %q was not reserved", key)
	}
}

// reservation builds a reservation with a random fingerprint.
func (f fixture) reservation(mode paygate.Mode, key string, now time.Time) paygate.IdempotencyReservation {
	return paygate.IdempotencyReservation{
		MerchantID:  f.merchant.ID,
		Mode:        mode,
		Key:         key,
		Fingerprint: randomBytes(32),
		APIKeyID:    f.key(mode).ID,
		Now:         now,
	}
}

// lookup returns the live idempotency record of key as the store reports it
// to a later request at now; it fails if the later request could reserve it.
func (f fixture) lookup(t *testing.T, mode paygate.Mode, key string, now time.Time) paygate.IdempotencyRecord {
	t.Helper()
	rec, reserved, err := f.s.ReserveIdempotency(ctx(t), f.reservation(mode, key, now))
	must(t, err)
	if reserved {
		t.Fatalf("idempotency key %q was reserved again; want the existing record", key)
	}
	return rec
}

// paymentValue returns a payment in status created with every field set,
// created at the time; it is not stored.
func (f fixture) paymentValue(mode paygate.Mode, created time.Time) paygate.Payment {
	return paygate.Payment{
		ID:          newID(),
		MerchantID:  f.merchant.ID,
		Mode:        mode,
		Status:      paygate.PaymentCreated,
		Amount:      paygate.Money{Amount: 1050, Currency: "EUR"},
		AmountText:  "10.5",
		Method:      paygate.MethodCard,
		MerchantRef: "order-" + newID()[:8],
		Card: paygate.CardSummary{
			Brand:       "visa",
			Last4:       "4242",
			ExpMonth:    12,
			ExpYear:     2034,
			HolderName:  "Ada Lovelace",
			Fingerprint: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		},
		Billing: &paygate.Billing{
			FirstName:    "Ada",
			LastName:     "Lovelace",
			Email:        "ada@example.com",
			Phone:        "+44 20 7946 0000",
			Country:      "GB",
			Address:      "12 St James's Square",
			AddressLine2: "Flat 3",
			City:         "London",
			PostalCode:   "SW1Y 4JH",
			State:        "",
			IPAddress:    "203.0.113.7",
			DOB:          "1815-12-10",
			Gender:       "F",
		},
		ReturnURL:         "https://shop.example/return?o=1",
		DeviceFingerprint: "dfp-" + newID()[:8],
		Metadata:          []byte(`{"order":"A-17","n":3}`),
		IdempotencyKey:    "idem-" + newID(),
		LeaseUntil:        created.Add(paygate.PaymentLease),
		CreatedAt:         created,
		UpdatedAt:         created,
	}
}

// createPayment reserves the payment's idempotency key and creates the
// payment for the customer of the external id; it returns the stored
// payment.
func (f fixture) createPayment(t *testing.T, p paygate.Payment, customerExternalID string) paygate.Payment {
	t.Helper()
	f.reserve(t, p.Mode, p.IdempotencyKey, p.CreatedAt)
	got, err := f.s.CreatePayment(ctx(t), paygate.NewPayment{
		Payment:            p,
		CustomerExternalID: customerExternalID,
		NewCustomerID:      newID(),
	})
	must(t, err)
	return got
}

// newPayment creates a payment in status created at the time.
func (f fixture) newPayment(t *testing.T, mode paygate.Mode, created time.Time) paygate.Payment {
	t.Helper()
	return f.createPayment(t, f.paymentValue(mode, created), "cust-"+newID())
}

// capturedPayment creates a payment of amount minor units of currency and
// captures captured of it.
func (f fixture) capturedPayment(t *testing.T, mode paygate.Mode, amount int64, currency string, captured int64) paygate.Payment {
	t.Helper()
	v := f.paymentValue(mode, at(time.Minute))
	v.Amount = paygate.Money{Amount: amount, Currency: currency}
	v.AmountText = fmt.Sprint(amount)
	p := f.createPayment(t, v, "cust-"+newID())
	must(t, f.s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
		ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
		From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentCaptured,
		ProviderID: "sandbox-eu", ProviderRef: "ref-" + p.ID, AmountCaptured: ptr(captured),
		UpdatedAt: at(2 * time.Minute),
	}, nil, nil)))
	got, err := f.s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
	must(t, err)
	return got
}

// refundValue returns a refund of amount against p, created at the time;
// it is not stored.
func refundValue(p paygate.Payment, amount int64, created time.Time) paygate.Refund {
	return paygate.Refund{
		ID:         newID(),
		MerchantID: p.MerchantID,
		Mode:       p.Mode,
		PaymentID:  p.ID,
		Amount:     paygate.Money{Amount: amount, Currency: p.Amount.Currency},
		AmountText: fmt.Sprint(amount),
		Reason:     "requested_by_customer",
		Status:     paygate.RefundCreated,
		ProviderID: p.ProviderID,
		CreatedAt:  created,
		UpdatedAt:  created,
	}
}

// eventValue returns an event of the type about the payment (and refund,
// may be ""), created at the time.
func eventValue(p paygate.Payment, typ paygate.EventType, refundID string, created time.Time) paygate.Event {
	return paygate.Event{
		ID:         newID(),
		MerchantID: p.MerchantID,
		Mode:       p.Mode,
		Type:       typ,
		PaymentID:  p.ID,
		RefundID:   refundID,
		Payload:    []byte(`{"event":"` + string(typ) + `","data":{"transactionId":"` + p.ID + `"}}`),
		CreatedAt:  created,
	}
}

// otherMode returns the mode that is not m.
func otherMode(m paygate.Mode) paygate.Mode {
	if m == paygate.ModeLive {
		return paygate.ModeTest
	}
	return paygate.ModeLive
}

// transitionUnit is the unit of a payment's transition with its events and
// its answer (when done is not nil), in that order: what the payment
// service commits for an outcome, a capture or a void.
func transitionUnit(tr paygate.PaymentTransition, events []paygate.Event, done *paygate.IdempotencyCompletion) paygate.Unit {
	u := paygate.Unit{Ops: []paygate.Op{tr}}
	u.AddEvents(events)
	u.AddCompletion(done)
	return u
}

// createRefund commits the unit of a new refund: the refund, its events and
// its idempotency answer.
func createRefund(c context.Context, s paygate.Store, r paygate.Refund, events []paygate.Event, done *paygate.IdempotencyCompletion) error {
	u := paygate.Unit{Ops: []paygate.Op{paygate.NewRefund{Refund: r}}}
	u.AddEvents(events)
	u.AddCompletion(done)
	return s.Commit(c, u)
}

// commitRefundTransition commits the unit of a refund transition and its events.
func commitRefundTransition(c context.Context, s paygate.Store, tr paygate.RefundTransition, events []paygate.Event) error {
	u := paygate.Unit{Ops: []paygate.Op{tr}}
	u.AddEvents(events)
	return s.Commit(c, u)
}

// setEndpoint creates or replaces an endpoint as the operator does, and
// returns its configuration as stored.
func setEndpoint(t *testing.T, s paygate.Store, e paygate.WebhookEndpoint, rotate bool) (paygate.WebhookEndpoint, error) {
	t.Helper()
	got, err := testenv.ConfigureEndpoint(ctx(t), s, e, rotate, e.UpdatedAt.Add(paygate.WebhookSecretOverlap))
	return got.WebhookEndpoint, err
}

// endpointOf reads the configuration of the endpoint of (merchant, mode).
func endpointOf(t *testing.T, s paygate.Store, merchantID string, mode paygate.Mode) (paygate.WebhookEndpoint, error) {
	t.Helper()
	got, err := s.WebhookEndpointState(ctx(t), merchantID, mode)
	return got.WebhookEndpoint, err
}

// finishDelivery commits a unit of the one DeliveryFinish.
func finishDelivery(ctx context.Context, s paygate.Store, f paygate.DeliveryFinish) error {
	return s.Commit(ctx, paygate.Unit{Ops: []paygate.Op{f}})
}

// resendMerchantEvent commits an EventResend and reads its delivery back.
func resendMerchantEvent(ctx context.Context, st paygate.Store, merchantID string, mode paygate.Mode, eventID, deliveryID string, at time.Time) (paygate.Delivery, error) {
	r := paygate.EventResend{MerchantID: merchantID, Mode: mode, EventID: eventID, DeliveryID: deliveryID, At: at}
	if err := st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{r}}); err != nil {
		return paygate.Delivery{}, err
	}
	return paygate.DeliveryByID(ctx, st, merchantID, mode, deliveryID)
}

// commit commits a unit of the operations.
func commit(c context.Context, s paygate.Store, ops ...paygate.Op) error {
	return s.Commit(c, paygate.Unit{Ops: ops})
}

// createMerchant commits the unit of a new merchant and its first keys.
func createMerchant(c context.Context, s paygate.Store, m paygate.Merchant, keys []paygate.APIKey) error {
	u := paygate.Unit{Ops: []paygate.Op{m}}
	for _, k := range keys {
		u.Add(k)
	}
	return s.Commit(c, u)
}

// revokeKey commits the revocation of a key and reads the key back, as a
// caller that shows the revoked key does.
func revokeKey(c context.Context, s paygate.Store, id string, at time.Time) (paygate.APIKey, error) {
	if err := commit(c, s, paygate.APIKeyRevocation{ID: id, At: at}); err != nil {
		return paygate.APIKey{}, err
	}
	return paygate.OneAPIKey(s.APIKeys(c, paygate.APIKeyQuery{ID: id}))
}
