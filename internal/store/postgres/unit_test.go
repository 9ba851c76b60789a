package postgres

import (
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paygate/paygate/internal/paygate"
)

// syncCounter counts the Sync messages a connection sends once counting is
// on (after the startup message, which has no type byte). With the
// extended protocol the client waits for the server only after a Sync, so
// the Syncs of a call are its round trips.
type syncCounter struct {
	mu       sync.Mutex
	counting bool
	syncs    int
}

func (c *syncCounter) start() {
	c.mu.Lock()
	c.counting, c.syncs = true, 0
	c.mu.Unlock()
}

func (c *syncCounter) stop() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counting = false
	return c.syncs
}

type countingWriter struct {
	w io.Writer
	c *syncCounter
}

// Write counts the Syncs of p, which holds whole messages: the frontend
// writes its buffer when it flushes.
func (cw countingWriter) Write(p []byte) (int, error) {
	cw.c.mu.Lock()
	if cw.c.counting {
		for b := p; len(b) >= 5; {
			n := int(binary.BigEndian.Uint32(b[1:5]))
			if b[0] == 'S' && n == 4 {
				cw.c.syncs++
			}
			if n+1 > len(b) {
				break
			}
			b = b[n+1:]
		}
	}
	cw.c.mu.Unlock()
	return cw.w.Write(p)
}

// TestCommitIsOneRoundTrip checks that a unit of every kind of operation,
// once the connection has prepared its statements, is one round trip,
// whether it commits or is refused.
func TestCommitIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	s, u := openTest(t)
	f := seedMerchant(t, s)
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	counter := &syncCounter{}
	cfg.ConnConfig.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
		return pgproto3.NewFrontend(r, countingWriter{w: w, c: counter})
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	counted := &Store{pool: pool}

	unit := func(p paygate.Payment, from paygate.PaymentStatus) paygate.Unit {
		when := epoch.Add(time.Minute)
		ev := paygate.Event{ID: uuid(), MerchantID: p.MerchantID, Mode: p.Mode, Type: paygate.EventPaymentCaptured,
			PaymentID: p.ID, Payload: []byte(`{}`), CreatedAt: when}
		again := ev
		again.ID = uuid()
		return paygate.Unit{Ops: []paygate.Op{
			paygate.SandboxCharge{ProviderID: "sandbox-eu", PaymentID: p.ID, Mode: p.Mode, Amount: p.Amount,
				Outcome: paygate.SandboxCaptured, ProviderRef: "ref", ReadyAt: when, CreatedAt: when},
			paygate.PaymentTransition{ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
				From: []paygate.PaymentStatus{from}, To: paygate.PaymentCaptured, AmountCaptured: &p.Amount.Amount, UpdatedAt: when},
			ev,
			paygate.IdempotencyCompletion{MerchantID: p.MerchantID, Mode: p.Mode, Key: p.IdempotencyKey, StatusCode: 201, Body: []byte(`{}`)},
			again,
			paygate.IdempotencyCompletion{MerchantID: p.MerchantID, Mode: p.Mode, Key: p.IdempotencyKey, StatusCode: 201, Body: []byte(`{}`)},
		}}
	}
	// The first unit prepares the connection's statements.
	if err := counted.Commit(t.Context(), unit(f.payment(t, s, 100), paygate.PaymentCreated)); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	// The counter's own check: two units are two round trips.
	first, second := unit(f.payment(t, s, 100), paygate.PaymentCreated), unit(f.payment(t, s, 100), paygate.PaymentCreated)
	counter.start()
	err = errors.Join(counted.Commit(t.Context(), first), counted.Commit(t.Context(), second))
	if got := counter.stop(); got != 2 || err != nil {
		t.Fatalf("two units: %d round trips (%v), want 2", got, err)
	}
	for _, c := range []struct {
		name string
		from paygate.PaymentStatus
	}{{"committed", paygate.PaymentCreated}, {"refused", paygate.PaymentAuthorized}} {
		u := unit(f.payment(t, s, 100), c.from)
		counter.start()
		err := counted.Commit(t.Context(), u)
		if got := counter.stop(); got != 1 {
			t.Errorf("%s unit: %d round trips, want 1", c.name, got)
		}
		if c.from == paygate.PaymentCreated && err != nil {
			t.Errorf("%s unit: %v", c.name, err)
		}
		if c.from != paygate.PaymentCreated && !errors.Is(err, paygate.ErrStateConflict) {
			t.Errorf("%s unit: %v, want ErrStateConflict", c.name, err)
		}
	}
}
