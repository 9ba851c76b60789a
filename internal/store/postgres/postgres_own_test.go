package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/testenv"
)

// These tests cover what is particular to PostgreSQL: migrations under
// concurrent starts, the search_path, error translation, and races settled
// by the database across many connections. The behaviour every store shares
// is checked by the conformance suite (postgres_test.go).

var epoch = time.Date(2031, time.March, 14, 15, 9, 26, 535897000, time.UTC)

// openTest opens a store on a fresh schema with a pool large enough for the
// concurrency tests to race on many connections at once.
func openTest(t *testing.T) (*Store, string) {
	t.Helper()
	u := testenv.PostgresSchema(t) + "&pool_max_conns=24"
	s, err := Open(t.Context(), u)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, u
}

func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

type merchantFixture struct {
	merchant paygate.Merchant
	key      paygate.APIKey
}

func seedMerchant(t *testing.T, s *Store) merchantFixture {
	t.Helper()
	m := paygate.Merchant{ID: uuid(), Name: "M", CreatedAt: epoch}
	k := paygate.APIKey{
		ID: uuid(), MerchantID: m.ID, Mode: paygate.ModeTest, Type: paygate.KeySecret,
		Hash: []byte(uuid()), Hint: "smtgw_sk_test_…abcd", CreatedAt: epoch,
	}
	if err := s.Commit(t.Context(), paygate.Unit{Ops: []paygate.Op{m, k}}); err != nil {
		t.Fatalf("create merchant: %v", err)
	}
	return merchantFixture{merchant: m, key: k}
}

func (f merchantFixture) payment(t *testing.T, s *Store, amount int64) paygate.Payment {
	t.Helper()
	key := "idem-" + uuid()
	if _, ok, err := s.ReserveIdempotency(t.Context(), paygate.IdempotencyReservation{
		MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Key: key, Fingerprint: []byte("fp"),
		APIKeyID: f.key.ID, Now: epoch,
	}); err != nil || !ok {
		t.Fatalf("ReserveIdempotency: reserved %v, %v", ok, err)
	}
	p, err := s.CreatePayment(t.Context(), paygate.NewPayment{
		Payment: paygate.Payment{
			ID: uuid(), MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Status: paygate.PaymentCreated,
			Amount: paygate.Money{Amount: amount, Currency: "EUR"}, AmountText: "x",
			Method: paygate.MethodCard, IdempotencyKey: key, Metadata: []byte(`{"z":1,"a":[true]}`),
			LeaseUntil: epoch.Add(paygate.PaymentLease), CreatedAt: epoch, UpdatedAt: epoch,
		},
		CustomerExternalID: "cust-1",
		NewCustomerID:      uuid(),
	})
	if err != nil {
		t.Fatalf("CreatePayment: %v", err)
	}
	return p
}

func (f merchantFixture) capturedPayment(t *testing.T, s *Store, amount int64) paygate.Payment {
	t.Helper()
	p := f.payment(t, s, amount)
	err := s.Commit(t.Context(), paygate.Unit{Ops: []paygate.Op{paygate.PaymentTransition{
		ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
		From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentCaptured,
		ProviderID: "sandbox-eu", AmountCaptured: &amount, UpdatedAt: epoch.Add(time.Second),
	}}})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	p, err = s.PaymentByID(t.Context(), p.MerchantID, p.Mode, p.ID)
	if err != nil {
		t.Fatalf("PaymentByID: %v", err)
	}
	return p
}

func TestOpen(t *testing.T) {
	t.Parallel()

	t.Run("ConcurrentOnOneSchema", func(t *testing.T) {
		t.Parallel()
		u := testenv.PostgresSchema(t)
		const nodes = 6
		var wg sync.WaitGroup
		errs := make([]error, nodes)
		for i := range nodes {
			wg.Go(func() {
				s, err := Open(t.Context(), u)
				if err == nil {
					err = s.Ping(t.Context())
					_ = s.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("node %d: Open: %v", i, err)
			}
		}
		// Every migration was applied once, and everything landed in the
		// schema of the search_path.
		schema := searchPath(t, u)
		conn := connect(t, u)
		var applied, tables int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM goose_db_version WHERE version_id > 0`).Scan(&applied); err != nil {
			t.Fatal(err)
		}
		files, _ := migrations.ReadDir("migrations")
		if applied != len(files) {
			t.Errorf("goose_db_version holds %d applied migrations, want %d", applied, len(files))
		}
		// Each version once, and exactly the files' versions: the nodes
		// migrated one after the other, the first doing the work.
		rows, err := conn.Query(t.Context(), `SELECT version_id, count(*) FROM goose_db_version WHERE version_id > 0 GROUP BY version_id ORDER BY version_id`)
		if err != nil {
			t.Fatal(err)
		}
		var versions []int64
		for rows.Next() {
			var v, n int64
			if err := rows.Scan(&v, &n); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Errorf("version %d applied %d times", v, n)
			}
			versions = append(versions, v)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		var want []int64
		for _, f := range files {
			v, err := strconv.ParseInt(strings.SplitN(f.Name(), "_", 2)[0], 10, 64)
			if err != nil {
				t.Fatalf("migration file %s: %v", f.Name(), err)
			}
			want = append(want, v)
		}
		if !slices.Equal(versions, want) {
			t.Errorf("applied versions %v, want the files' %v", versions, want)
		}
		if err := conn.QueryRow(t.Context(), `
			SELECT count(*) FROM pg_tables
			WHERE schemaname = $1 AND tablename IN ('goose_db_version', 'payments', 'idempotency_keys')`, schema).Scan(&tables); err != nil {
			t.Fatal(err)
		}
		if tables != 3 {
			t.Errorf("found %d of 3 tables in schema %s", tables, schema)
		}
	})

	t.Run("ReopenKeepsData", func(t *testing.T) {
		t.Parallel()
		s, u := openTest(t)
		f := seedMerchant(t, s)
		s2, err := Open(t.Context(), u)
		if err != nil {
			t.Fatalf("second Open: %v", err)
		}
		defer s2.Close()
		if _, err := paygate.OneMerchant(s2.Merchants(t.Context(), paygate.MerchantQuery{ID: f.merchant.ID})); err != nil {
			t.Fatalf("read the merchant after reopen: %v", err)
		}
	})

	t.Run("ErrUnreachable", func(t *testing.T) {
		t.Parallel()
		// Port 1 on loopback refuses connections.
		_, err := Open(t.Context(), "postgres://root@127.0.0.1:1/test?connect_timeout=2")
		if code := paygate.ErrorCode(err); code != paygate.CodeServiceUnavailable {
			t.Fatalf("got %v (code %s), want SERVICE_UNAVAILABLE", err, code)
		}
		t.Log(err)
	})

	t.Run("ErrSynchronousCommitOff", func(t *testing.T) {
		t.Parallel()
		u := testenv.PostgresSchema(t) + "&synchronous_commit=off"
		s, err := Open(t.Context(), u)
		if err == nil {
			_ = s.Close()
			t.Fatal("Open accepted synchronous_commit=off")
		}
		t.Log(err)
	})

	t.Run("ErrSchemaMissing", func(t *testing.T) {
		t.Parallel()
		u := testenv.WithSearchPath(testenv.PostgresURL(t), "no_such_schema_"+strings.ReplaceAll(uuid()[:8], "-", ""))
		_, err := Open(t.Context(), u)
		if err == nil {
			t.Fatal("Open succeeded on a search_path without a schema")
		}
		t.Log(err)
	})
}

func TestReserveIdempotencyConcurrent(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	f := seedMerchant(t, s)

	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, key string)
		now   time.Time
	}{
		{name: "Fresh", setup: func(*testing.T, string) {}, now: epoch},
		{
			// An expired record is replaced by exactly one of the callers.
			name: "Expired",
			setup: func(t *testing.T, key string) {
				reserveOnce(t, s, f, key, epoch)
				if err := s.Commit(t.Context(), paygate.Unit{Ops: []paygate.Op{paygate.IdempotencyCompletion{
					MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Key: key, StatusCode: 201, Body: []byte(`{}`),
				}}}); err != nil {
					t.Fatal(err)
				}
			},
			now: epoch.Add(paygate.IdempotencyTTL),
		},
		{
			name:  "Abandoned",
			setup: func(t *testing.T, key string) { reserveOnce(t, s, f, key, epoch) },
			now:   epoch.Add(paygate.PaymentLease + time.Microsecond),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "k-" + uuid()
			tc.setup(t, key)
			const callers = 20
			var wg sync.WaitGroup
			var mu sync.Mutex
			reserved := 0
			var failures []error
			start := make(chan struct{})
			for i := range callers {
				wg.Go(func() {
					<-start
					fp := fmt.Appendf(nil, "fp-%d", i)
					rec, ok, err := s.ReserveIdempotency(t.Context(), paygate.IdempotencyReservation{
						MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Key: key,
						Fingerprint: fp, APIKeyID: f.key.ID, Now: tc.now,
					})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err != nil:
						failures = append(failures, err)
					case ok:
						reserved++
						if string(rec.Fingerprint) != string(fp) || rec.State != paygate.IdempotencyInFlight {
							failures = append(failures, fmt.Errorf("reserved, but the record is %+v", rec))
						}
					case rec.State != paygate.IdempotencyInFlight || !rec.CreatedAt.Equal(tc.now) || rec.Key != key:
						failures = append(failures, fmt.Errorf("not reserved, but the record is %+v", rec))
					}
				})
			}
			close(start)
			wg.Wait()
			for _, err := range failures {
				t.Error(err)
			}
			if reserved != 1 {
				t.Fatalf("%d of %d concurrent callers reserved the key, want exactly 1", reserved, callers)
			}
		})
	}
}

func reserveOnce(t *testing.T, s *Store, f merchantFixture, key string, now time.Time) {
	t.Helper()
	_, ok, err := s.ReserveIdempotency(t.Context(), paygate.IdempotencyReservation{
		MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Key: key, Fingerprint: []byte("first"),
		APIKeyID: f.key.ID, Now: now,
	})
	if err != nil || !ok {
		t.Fatalf("ReserveIdempotency: reserved %v, %v", ok, err)
	}
}

func TestReserveIdempotencyRevokedKey(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	f := seedMerchant(t, s)
	if err := s.Commit(t.Context(), paygate.Unit{Ops: []paygate.Op{paygate.APIKeyRevocation{ID: f.key.ID, At: epoch.Add(time.Second)}}}); err != nil {
		t.Fatal(err)
	}
	r := paygate.IdempotencyReservation{
		MerchantID: f.merchant.ID, Mode: paygate.ModeTest, Key: "k", Fingerprint: []byte("fp"),
		APIKeyID: f.key.ID, Now: epoch,
	}
	if _, ok, err := s.ReserveIdempotency(t.Context(), r); err != nil || !ok {
		t.Fatalf("before the revocation: reserved %v, %v", ok, err)
	}
	r.Key, r.Now = "k2", epoch.Add(time.Second)
	_, _, err := s.ReserveIdempotency(t.Context(), r)
	if code := paygate.ErrorCode(err); code != paygate.CodeUnauthorized {
		t.Fatalf("after the revocation: got %v, want UNAUTHORIZED", err)
	}
}

func TestCreateRefundConcurrentNeverOvershoots(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	f := seedMerchant(t, s)
	p := f.capturedPayment(t, s, 1000)

	const callers, each = 20, 150 // 20 × 1.50 asked of 10.00: six fit
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	start := make(chan struct{})
	for range callers {
		wg.Go(func() {
			<-start
			r := paygate.Refund{
				ID: uuid(), MerchantID: p.MerchantID, Mode: p.Mode, PaymentID: p.ID,
				Amount: paygate.Money{Amount: each, Currency: "EUR"}, AmountText: "1.5",
				Status: paygate.RefundCreated, CreatedAt: epoch, UpdatedAt: epoch,
			}
			ev := paygate.Event{
				ID: uuid(), MerchantID: p.MerchantID, Mode: p.Mode, Type: paygate.EventRefundCreated,
				PaymentID: p.ID, RefundID: r.ID, Payload: []byte(`{}`), CreatedAt: epoch,
			}
			err := createRefund(t.Context(), s, r, []paygate.Event{ev}, nil)
			mu.Lock()
			defer mu.Unlock()
			var e *paygate.Error
			switch {
			case err == nil:
				created++
			case errors.As(err, &e) && e.Code == paygate.CodeInvalidRequest && e.Param == "amount":
			default:
				t.Errorf("CreateRefund: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	if created != 1000/each {
		t.Errorf("%d refunds of %d were created, want %d", created, each, 1000/each)
	}
	got, err := s.PaymentByID(t.Context(), p.MerchantID, p.Mode, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	refunds, err := s.RefundsByPayment(t.Context(), p.MerchantID, p.Mode, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, r := range refunds {
		sum += r.Amount.Amount
	}
	if sum != got.AmountRefunded || sum > got.AmountCaptured || len(refunds) != created {
		t.Errorf("refunds sum to %d (%d refunds), payment says %d refunded of %d captured",
			sum, len(refunds), got.AmountRefunded, got.AmountCaptured)
	}
	events, err := s.Events(t.Context(), paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != created {
		t.Errorf("%d events for %d refunds: a refused refund left its event", len(events), created)
	}
}

func TestRefundFailedGivesAmountBack(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	f := seedMerchant(t, s)
	p := f.capturedPayment(t, s, 1000)
	r := paygate.Refund{
		ID: uuid(), MerchantID: p.MerchantID, Mode: p.Mode, PaymentID: p.ID,
		Amount: paygate.Money{Amount: 1000, Currency: "EUR"}, AmountText: "10",
		CreatedAt: epoch, UpdatedAt: epoch,
	}
	if err := createRefund(t.Context(), s, r, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct{ from, to paygate.RefundStatus }{
		{paygate.RefundCreated, paygate.RefundPending},
		{paygate.RefundPending, paygate.RefundFailed},
	} {
		if err := transitionRefund(t.Context(), s, paygate.RefundTransition{
			ID: r.ID, MerchantID: r.MerchantID, Mode: r.Mode, From: step.from, To: step.to,
			FailureReason: "declined", UpdatedAt: epoch.Add(time.Minute),
		}, nil); err != nil {
			t.Fatalf("%s → %s: %v", step.from, step.to, err)
		}
	}
	got, err := s.PaymentByID(t.Context(), p.MerchantID, p.Mode, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.AmountRefunded != 0 {
		t.Fatalf("amount refunded after the refund failed: %d, want 0", got.AmountRefunded)
	}
	// The whole amount can be refunded again.
	r.ID = uuid()
	if err := createRefund(t.Context(), s, r, nil, nil); err != nil {
		t.Fatalf("refund after a failed one: %v", err)
	}
}

func TestPaymentRoundTrip(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	f := seedMerchant(t, s)
	p := f.payment(t, s, 1050)
	got, err := s.PaymentByID(t.Context(), p.MerchantID, p.Mode, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Metadata) != `{"z":1,"a":[true]}` {
		t.Errorf("metadata came back as %s", got.Metadata)
	}
	if !got.CreatedAt.Equal(epoch) || got.CreatedAt.Location() != time.UTC || got.CreatedAt != epoch {
		t.Errorf("created at came back as %v, want %v", got.CreatedAt, epoch)
	}
	if got.CustomerID == "" || got.CustomerID != p.CustomerID {
		t.Errorf("customer id %q, CreatePayment said %q", got.CustomerID, p.CustomerID)
	}
	// The other mode does not see it.
	if _, err := s.PaymentByID(t.Context(), p.MerchantID, paygate.ModeLive, p.ID); !paygate.IsNotFound(err) {
		t.Errorf("live mode read a test payment: %v", err)
	}
}

func TestCreatePaymentConcurrentNewCustomer(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	f := seedMerchant(t, s)
	const callers = 10
	var wg sync.WaitGroup
	ids := make([]string, callers)
	start := make(chan struct{})
	for i := range callers {
		wg.Go(func() {
			<-start
			p, err := s.CreatePayment(t.Context(), paygate.NewPayment{
				Payment: paygate.Payment{
					ID: uuid(), MerchantID: f.merchant.ID, Mode: paygate.ModeTest,
					Amount: paygate.Money{Amount: 1, Currency: "EUR"}, AmountText: "0.01",
					Method: paygate.MethodCard, CreatedAt: epoch, LeaseUntil: epoch,
				},
				CustomerExternalID: "same-customer",
				NewCustomerID:      uuid(),
			})
			if err != nil {
				t.Errorf("CreatePayment: %v", err)
				return
			}
			ids[i] = p.CustomerID
		})
	}
	close(start)
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent payments resolved one external id to several customers: %v", ids)
		}
	}
}

func searchPath(t *testing.T, u string) string {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return parsed.Query().Get("search_path")
}

func connect(t *testing.T, u string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func TestTranslate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		err      error
		conflict bool
		code     paygate.Code
	}{
		{"UniqueViolation", &pgconn.PgError{Code: "23505"}, true, paygate.CodeInternal},
		{"AdminShutdown", &pgconn.PgError{Code: "57P01"}, false, paygate.CodeServiceUnavailable},
		{"TooManyConnections", &pgconn.PgError{Code: "53300"}, false, paygate.CodeServiceUnavailable},
		{"ConnectionFailure", &pgconn.PgError{Code: "08006"}, false, paygate.CodeServiceUnavailable},
		{"ReadOnlyStandby", &pgconn.PgError{Code: "25006"}, false, paygate.CodeServiceUnavailable},
		{"UndefinedTable", &pgconn.PgError{Code: "42P01"}, false, paygate.CodeInternal},
		{"CheckViolation", &pgconn.PgError{Code: "23514"}, false, paygate.CodeInternal},
		{"Deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), false, paygate.CodeServiceUnavailable},
		{"Other", errors.New("boom"), false, paygate.CodeInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := translate(tc.err)
			if errors.Is(got, paygate.ErrConflict) != tc.conflict {
				t.Errorf("translate(%v) = %v: ErrConflict %v, want %v", tc.err, got, !tc.conflict, tc.conflict)
			}
			if code := paygate.ErrorCode(got); code != tc.code {
				t.Errorf("translate(%v) = %v: code %s, want %s", tc.err, got, code, tc.code)
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("translate(%v) = %v lost the driver error", tc.err, got)
			}
		})
	}
	t.Run("Canceled", func(t *testing.T) {
		if got := translate(context.Canceled); got != context.Canceled {
			t.Errorf("translate(context.Canceled) = %v", got)
		}
	})
}

// TestUnreachableIsServiceUnavailable runs reads and writes on a store whose
// database went away.
func TestUnreachableIsServiceUnavailable(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(t.Context(), "postgres://root@127.0.0.1:1/test?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	s := &Store{pool: pool}
	defer s.Close()
	ctx := t.Context()
	checks := map[string]error{
		"Ping": s.Ping(ctx),
	}
	_, checks["PaymentByID"] = s.PaymentByID(ctx, "m", paygate.ModeTest, "p")
	_, _, checks["ReserveIdempotency"] = s.ReserveIdempotency(ctx, paygate.IdempotencyReservation{MerchantID: "m", Mode: paygate.ModeTest, Key: "k", Now: epoch})
	checks["Commit"] = s.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.PaymentTransition{ID: "p", MerchantID: "m", Mode: paygate.ModeTest, To: paygate.PaymentFailed}}})
	_, checks["RefundsByPayment"] = s.RefundsByPayment(ctx, "m", paygate.ModeTest, "p")
	for name, err := range checks {
		if code := paygate.ErrorCode(err); code != paygate.CodeServiceUnavailable {
			t.Errorf("%s: got %v (code %s), want SERVICE_UNAVAILABLE", name, err, code)
		}
	}
}

// TestTerminatedConnectionIsServiceUnavailable kills the store's sessions
// (as a server restart or failover would) and expects the next call to be
// SERVICE_UNAVAILABLE, and a later one to work on a new connection.
func TestTerminatedConnectionIsServiceUnavailable(t *testing.T) {
	t.Parallel()
	u := testenv.PostgresSchema(t)
	name := "paygate-test-" + uuid()
	s, err := Open(t.Context(), u+"&application_name="+name+"&pool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, testenv.PostgresURL(t))
	var killed int
	if err := conn.QueryRow(t.Context(), `
		SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, name).Scan(&killed); err != nil || killed == 0 {
		t.Fatalf("terminated %d sessions: %v", killed, err)
	}
	_, err = s.PaymentByID(t.Context(), "m", paygate.ModeTest, "p")
	if code := paygate.ErrorCode(err); code != paygate.CodeServiceUnavailable {
		t.Fatalf("after termination: got %v (code %s), want SERVICE_UNAVAILABLE", err, code)
	}
	if _, err := s.PaymentByID(t.Context(), "m", paygate.ModeTest, "p"); !paygate.IsNotFound(err) {
		t.Fatalf("on a new connection: got %v, want NOT_FOUND", err)
	}
}

// TestKeyAndRequestReadFails: when the key is read and a read pipelined
// after it fails, APIKeyAndRequest returns the key with the failure as the
// data's Err, so that the caller authenticates before it meets the failure;
// an unknown key is still NOT_FOUND, and a failure without a key is the
// call's error.
func TestKeyAndRequestReadFails(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	f := seedMerchant(t, s)
	p := f.payment(t, s, 100)
	// PostgreSQL refuses text holding NUL: the record's read fails.
	failing := paygate.RequestReads{IdempotencyKey: "bad\x00key", PaymentID: p.ID}
	key, data, err := s.APIKeyAndRequest(t.Context(), f.key.Hash, failing)
	if err != nil || key.ID != f.key.ID || data.Err == nil || data.Record != nil || data.Payment != nil {
		t.Errorf("known key, failing read: key %q, data %+v, %v; want the key and the data's Err alone", key.ID, data, err)
	}
	if _, data, err := s.APIKeyAndRequest(t.Context(), []byte("no such hash"), failing); err == nil || paygate.IsNotFound(err) || data.Err != nil {
		t.Errorf("unknown key, failing read: data %+v, %v; want the failure as the error", data, err)
	}
	fine := paygate.RequestReads{IdempotencyKey: "none", PaymentID: p.ID}
	if _, _, err := s.APIKeyAndRequest(t.Context(), []byte("no such hash"), fine); !paygate.IsNotFound(err) {
		t.Errorf("unknown key, reads beside it: %v; want NOT_FOUND", err)
	}
	key, data, err = s.APIKeyAndRequest(t.Context(), f.key.Hash, fine)
	if err != nil || key.ID != f.key.ID || data.Err != nil || data.Record != nil || data.Payment == nil || data.Payment.ID != p.ID {
		t.Errorf("known key, reads beside it: key %q, data %+v, %v; want the payment and no record", key.ID, data, err)
	}
}

// createRefund commits the unit of a new refund and its events.
func createRefund(c context.Context, s *Store, r paygate.Refund, events []paygate.Event, done *paygate.IdempotencyCompletion) error {
	u := paygate.Unit{Ops: []paygate.Op{paygate.NewRefund{Refund: r}}}
	u.AddEvents(events)
	u.AddCompletion(done)
	return s.Commit(c, u)
}

// transitionRefund commits the unit of a refund transition and its events.
func transitionRefund(c context.Context, s *Store, tr paygate.RefundTransition, events []paygate.Event) error {
	u := paygate.Unit{Ops: []paygate.Op{tr}}
	u.AddEvents(events)
	return s.Commit(c, u)
}
