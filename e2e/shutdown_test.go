package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
)

// TestSIGTERMUnderLoad sends SIGTERM to the real binary while two dozen
// payments wait at a slow provider (decisions §16): /readyz answers 503 at
// once, new connections are refused after --drain-delay, every payment in
// flight is answered 201 and is captured in the database, and the process
// exits 0 after logging the stop in order.
func TestSIGTERMUnderLoad(t *testing.T) {
	cfg := writeConfig(t, `
providers:
  - {id: slow-sandbox, kind: sandbox, sandbox: {latency: 4s}}
routes:
  test:
    default: [slow-sandbox]
`)
	forEachEngine(t, func(t *testing.T, e engine) {
		db := e.url(t)
		m := createMerchant(t, db, "SIGTERM Ltd")
		g := startGateway(t, db, "--config", cfg, "--rate-limit-test", "100000", "--drain-delay", "1s")
		addr := strings.TrimPrefix(g.url, "http://")

		const n = 24
		type result struct {
			resp response
			err  error
		}
		results := make([]result, n)
		var outstanding atomic.Int32
		var wg sync.WaitGroup
		for i := range n {
			outstanding.Add(1)
			wg.Go(func() {
				defer outstanding.Add(-1)
				body := paymentBody("4242424242424242", "12.00", "EUR")
				body["merchantRef"] = fmt.Sprintf("sigterm-%02d", i)
				results[i].resp, results[i].err = send(g, m.TestSecretKey, fmt.Sprintf("sigterm-%02d", i), body)
			})
		}

		st, err := store.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		eventually(t, 30*time.Second, "every payment to reach the provider", func() bool {
			for i := range n {
				if _, err := st.PaymentByMerchantRef(context.Background(), m.MerchantID, paygate.ModeTest, fmt.Sprintf("sigterm-%02d", i)); err != nil {
					return false
				}
			}
			return true
		})
		if outstanding.Load() == 0 {
			t.Fatal("every payment finished before SIGTERM: make the sandbox's latency longer")
		}
		if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}

		// /readyz: 503 while the listener is still open.
		probe := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		var saw503 bool
		for deadline := time.Now().Add(10 * time.Second); !saw503 && time.Now().Before(deadline); {
			resp, err := probe.Get(g.url + "/readyz")
			if err != nil {
				t.Fatalf("/readyz unreachable before it answered 503: %v\n%s", err, g.Logs())
			}
			resp.Body.Close()
			saw503 = resp.StatusCode == http.StatusServiceUnavailable
		}
		if !saw503 {
			t.Fatalf("/readyz never answered 503 after SIGTERM\n%s", g.Logs())
		}
		// Then the listener closes while the payments are still in flight.
		var refused bool
		var inFlight int32
		for deadline := time.Now().Add(10 * time.Second); !refused && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err == nil {
				c.Close()
				continue
			}
			// Refused, or reset when the kernel had queued it as the
			// listener closed: either way it is not served.
			if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("dial after the drain delay: %v, want connection refused", err)
			}
			refused, inFlight = true, outstanding.Load()
		}
		if !refused || inFlight == 0 {
			t.Errorf("connections refused: %v, with %d payments still in flight; want refused while some are", refused, inFlight)
		}

		wg.Wait()
		select {
		case err := <-g.exited:
			g.exited <- err
			if err != nil {
				t.Errorf("paygate exited with %v\n%s", err, g.Logs())
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("paygate did not exit after SIGTERM\n%s", g.Logs())
		}

		for i, r := range results {
			ref := fmt.Sprintf("sigterm-%02d", i)
			if r.err != nil || r.resp.Status != http.StatusCreated || r.resp.Data()["status"] != "captured" {
				t.Errorf("%s: %d %s (%v)", ref, r.resp.Status, r.resp.Raw, r.err)
				continue
			}
			p, err := st.PaymentByMerchantRef(context.Background(), m.MerchantID, paygate.ModeTest, ref)
			if err != nil || p.ID != r.resp.Data()["id"] || p.Status != paygate.PaymentCaptured {
				t.Errorf("%s in the database: %s, %v; want %v captured", ref, p.Status, err, r.resp.Data()["id"])
			}
		}
		logs := g.Logs()
		order := []string{"shutting down: /readyz answers 503", "shutting down: listener closed", `"msg":"stopped"`}
		at := 0
		for _, want := range order {
			i := strings.Index(logs[at:], want)
			if i < 0 {
				t.Errorf("the log lacks %q after the previous step:\n%s", want, logs)
				break
			}
			at += i
		}
	})
}

// TestSecondSignalEndsAtOnce checks that a second Ctrl-C during the
// graceful stop ends the process without waiting for the drain delay.
func TestSecondSignalEndsAtOnce(t *testing.T) {
	t.Parallel()
	g := startGateway(t, sqliteEngine().url(t), "--drain-delay", "5m")
	if err := g.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// The first signal is taken: the node drains.
	eventually(t, 10*time.Second, "/readyz to answer 503", func() bool {
		return g.call(http.MethodGet, "/readyz", "", nil).Status == http.StatusServiceUnavailable
	})
	// The default action comes back just after the first signal is taken
	// (main's AfterFunc), which on a loaded machine may be after /readyz
	// turned 503: press Ctrl-C again until it ends the process.
	deadline := time.After(30 * time.Second)
	for {
		if err := g.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-g.exited:
			g.exited <- err
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
				t.Errorf("paygate ended with %v, want killed by the second SIGINT", err)
			}
			return
		case <-time.After(time.Second):
		case <-deadline:
			t.Fatalf("paygate still runs 30s after a second SIGINT\n%s", g.Logs())
		}
	}
}

// TestSecondSIGTERMKeepsDraining checks that a second SIGTERM, as process
// supervisors send, does not cut the graceful stop short: the node still
// drains, and still answers, after it.
func TestSecondSIGTERMKeepsDraining(t *testing.T) {
	t.Parallel()
	g := startGateway(t, sqliteEngine().url(t), "--drain-delay", "3s")
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "/readyz to answer 503", func() bool {
		return g.call(http.MethodGet, "/readyz", "", nil).Status == http.StatusServiceUnavailable
	})
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if got := g.call(http.MethodGet, "/healthz", "", nil).Status; got != http.StatusOK {
		t.Errorf("/healthz answered %d after the second SIGTERM, within the drain delay; want 200", got)
	}
	select {
	case err := <-g.exited:
		g.exited <- err
		if err != nil {
			t.Errorf("paygate ended with %v after its drain, want a clean exit", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("paygate still runs 60s after SIGTERM with a 3s drain delay\n%s", g.Logs())
	}
}
