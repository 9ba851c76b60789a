package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/tracing"
	"github.com/paygate/paygate/internal/vault"
	swh "github.com/paygate/paygate/webhook"
)

// Defaults of the dispatcher.
const (
	// DefaultTimeout bounds one attempt: connecting, sending, and the
	// answer's status and first KiB (decisions.md section 11: a 2xx within
	// 10 s is success).
	DefaultTimeout = 10 * time.Second
	// DefaultPollInterval is how often the dispatcher looks for due
	// deliveries when nothing woke it.
	DefaultPollInterval = 100 * time.Millisecond
	// DefaultConcurrency is how many attempts one node makes at once.
	DefaultConcurrency = 16
	// responseLimit is how much of an answer's body an attempt records.
	responseLimit = paygate.MaxAttemptResponse
	// drainLimit is how much more of an answer is read (and dropped) so
	// that the connection can be reused.
	drainLimit = 64 << 10
	// finishTries bounds the attempts to record an attempt's outcome when
	// the database fails for a moment.
	finishTries = 5
)

// DeliveryStore is what the dispatcher needs of the store.
type DeliveryStore interface {
	ClaimDeliveries(ctx context.Context, c paygate.DeliveryClaim) ([]paygate.ClaimedDelivery, error)
	// Commit applies units; the dispatcher's are one DeliveryFinish each.
	Commit(ctx context.Context, u paygate.Unit) error
}

// Config configures a Dispatcher. Zero fields take the defaults.
type Config struct {
	Store  DeliveryStore
	Clock  paygate.Clock
	Logger *slog.Logger
	// Schedule is the wait before each attempt; default DefaultSchedule.
	Schedule Schedule
	// Timeout bounds one attempt; default DefaultTimeout.
	Timeout time.Duration
	// Lease is how long a claimed delivery is reserved for one attempt:
	// when the node dies during the attempt, the delivery is due again
	// after it. Default: Timeout plus 20 s.
	Lease time.Duration
	// PollInterval is how often the store is asked for due deliveries;
	// default DefaultPollInterval. Wake asks at once.
	PollInterval time.Duration
	// Concurrency bounds the attempts in flight; default DefaultConcurrency.
	Concurrency int
	// Jitter spreads retry waits; default Jitter.
	Jitter func(time.Duration) time.Duration
	// Vault opens the endpoints' sealed signing secrets. Without it (or
	// without the key that sealed them) a delivery to an endpoint whose
	// secret is sealed fails, with an error in the log naming the endpoint.
	Vault *vault.Vault
	// Policy is where deliveries may go; the zero value guards live-mode
	// endpoints only.
	Policy Policy
	// Metrics receives every attempt's result; nil records nothing.
	Metrics Metrics
}

// Dispatcher delivers due webhooks: it claims them from the store under a
// lease, signs and POSTs each, records the attempt, and reschedules
// failures on the retry schedule. Any number of nodes may run one on the
// same database; the store's claims keep them from making the same attempt
// twice.
type Dispatcher struct {
	cfg     Config
	log     *slog.Logger
	clients map[paygate.Mode]*http.Client

	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// NewDispatcher returns a stopped dispatcher. It panics without a store, a
// wiring mistake.
func NewDispatcher(cfg Config) *Dispatcher {
	if cfg.Store == nil {
		panic("webhook.NewDispatcher: Store is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = paygate.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Schedule) == 0 {
		cfg.Schedule = DefaultSchedule()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Lease <= 0 {
		cfg.Lease = cfg.Timeout + 20*time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Jitter == nil {
		cfg.Jitter = Jitter
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	var testControl func(network, address string, c syscall.RawConn) error
	if cfg.Policy.Guarded(paygate.ModeTest) {
		testControl = checkDial
	}
	return &Dispatcher{
		cfg: cfg,
		log: cfg.Logger,
		// Separate clients, so that a connection kept alive for a test-mode
		// endpoint on a local address is never reused for a live one.
		clients: map[paygate.Mode]*http.Client{
			paygate.ModeTest: newClient(cfg.Timeout, testControl),
			paygate.ModeLive: newClient(cfg.Timeout, checkDial),
		},
		wake: make(chan struct{}, 1),
	}
}

// newClient returns the HTTP client of one mode: no proxy (a proxy would
// dial for us, past the guard), no redirects (a 3xx is the answer, and a
// failure), control checking every address dialled.
func newClient(timeout time.Duration, control func(network, address string, c syscall.RawConn) error) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: control}
	return &http.Client{
		// A client span per POST, carrying its traceparent to the receiver.
		Transport: tracing.Transport(&http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
		}),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       timeout,
	}
}

// Start launches the dispatcher's loop. It returns at once; deliveries that
// came due while no dispatcher ran go out at the first poll.
func (d *Dispatcher) Start(ctx context.Context) error {
	ctx, d.cancel = context.WithCancel(context.WithoutCancel(ctx))
	d.done = make(chan struct{})
	go d.loop(ctx)
	return nil
}

// Stop stops claiming and returns once the loop has exited. Attempts in
// flight finish first (each within the timeout) and record their outcome.
func (d *Dispatcher) Stop() {
	d.once.Do(func() {
		if d.cancel == nil {
			return
		}
		d.cancel()
		<-d.done
	})
}

// Wake makes the dispatcher look for due deliveries now rather than at its
// next poll, for example right after a local commit wrote an event. It
// never blocks.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *Dispatcher) loop(ctx context.Context) {
	defer close(d.done)
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, d.cfg.Concurrency)
	ticker := time.NewTicker(d.cfg.PollInterval)
	defer ticker.Stop()
	for {
		free := cap(slots) - len(slots) // only this goroutine fills slots
		if free > 0 {
			claims := d.claim(ctx, free)
			for _, c := range claims {
				slots <- struct{}{}
				wg.Go(func() {
					defer func() {
						<-slots
						d.Wake() // a slot is free: look again
					}()
					d.deliver(c)
				})
			}
		}
		// When every free slot got work more may be due: a worker that
		// finishes wakes the loop to look again.
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-d.wake:
		}
	}
}

// claim asks the store for up to n due deliveries. Errors are logged: the
// next poll tries again.
func (d *Dispatcher) claim(ctx context.Context, n int) []paygate.ClaimedDelivery {
	now := d.cfg.Clock.Now()
	claims, err := d.cfg.Store.ClaimDeliveries(ctx, paygate.DeliveryClaim{
		Now:        now,
		FirstDue:   now.Add(-d.cfg.Schedule.FirstWait()),
		Lease:      newLease(),
		LeaseUntil: now.Add(d.cfg.Lease),
		Limit:      n,
	})
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error("claim webhook deliveries", "error", err)
		}
		return nil
	}
	return claims
}

// RunOnce claims what is due now, delivers it, and returns how many
// deliveries it attempted. It is the loop's body without the loop, for
// tests and tools; it must not run beside Start on the same dispatcher.
func (d *Dispatcher) RunOnce(ctx context.Context) int {
	claims := d.claim(ctx, d.cfg.Concurrency)
	var wg sync.WaitGroup
	for _, c := range claims {
		wg.Go(func() { d.deliver(c) })
	}
	wg.Wait()
	return len(claims)
}

// outcome is what one attempt came to.
type outcome struct {
	attempt *paygate.DeliveryAttempt
	err     string // why the attempt failed, "" on success
	gone    bool   // the receiver answered 410
	host    string
}

// deliver makes one attempt of a claimed delivery and records it. It is not
// cancelled by Stop: an attempt in flight completes within the timeout.
func (d *Dispatcher) deliver(c paygate.ClaimedDelivery) {
	ctx, span := startDelivery(c) // a trace of its own (tracing.go)
	dl := c.Delivery
	var o outcome
	switch {
	case c.Endpoint == nil:
		o.err = "the merchant has no webhook endpoint in this mode"
	case c.Endpoint.DisabledAt != nil:
		o.err = "the webhook endpoint is disabled (it answered 410 Gone); set it again to enable it"
	default:
		o = d.post(ctx, c)
	}

	fin := paygate.DeliveryFinish{
		DeliveryID: dl.ID, Lease: c.Lease, At: d.cfg.Clock.Now(), Attempt: o.attempt, Error: o.err,
	}
	result := "succeeded"
	switch {
	case o.err == "":
		fin.Status = paygate.DeliverySucceeded
	case o.gone:
		fin.Status, fin.DisableEndpoint, result = paygate.DeliveryFailed, true, "endpoint disabled"
	case o.attempt == nil:
		// Nowhere to send it: retrying cannot help until the operator acts,
		// and then resend is the tool.
		fin.Status, result = paygate.DeliveryFailed, "failed"
	default:
		if wait, ok := d.cfg.Schedule.Retry(dl.Attempts, d.cfg.Jitter); ok {
			fin.Status, fin.NextAttemptAt, result = paygate.DeliveryPending, fin.At.Add(wait), "retry"
		} else {
			fin.Status, result = paygate.DeliveryFailed, "failed"
		}
	}

	attrs := []any{
		"event_id", dl.EventID, "delivery_id", dl.ID, "event", string(dl.EventType),
		"attempt", dl.Attempts, "endpoint_host", o.host, "result", result,
	}
	if o.attempt != nil {
		attrs = append(attrs, "status", o.attempt.StatusCode, "latency_ms", float64(o.attempt.Latency.Microseconds())/1000)
	}
	if fin.Status == paygate.DeliveryPending {
		attrs = append(attrs, "next_attempt_at", fin.NextAttemptAt)
	}
	if o.err != "" {
		attrs = append(attrs, "error", o.err)
	}
	level := slog.LevelInfo
	if o.err != "" {
		level = slog.LevelWarn
	}
	d.log.Log(ctx, level, "webhook attempt", attrs...)
	d.cfg.Metrics.Delivered(result)

	d.finish(ctx, fin)
	endDelivery(span, result, o)
}

// finish records an outcome, retrying briefly when the database fails for a
// moment; a lost lease is only logged (the delivery was claimed again, and
// the receiver may see this event twice, as at-least-once allows).
func (d *Dispatcher) finish(ctx context.Context, fin paygate.DeliveryFinish) {
	var err error
	for try := range finishTries {
		fctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
		err = d.cfg.Store.Commit(fctx, paygate.Unit{Ops: []paygate.Op{fin}})
		cancel()
		if err == nil || errors.Is(err, paygate.ErrStateConflict) || paygate.IsNotFound(err) {
			break
		}
		time.Sleep(time.Duration(try+1) * 200 * time.Millisecond)
	}
	if err != nil {
		d.log.Error("record webhook attempt", "delivery_id", fin.DeliveryID, "error", err)
	}
}

// post sends the delivery to its endpoint, signed with every current
// secret, and judges the answer.
func (d *Dispatcher) post(ctx context.Context, c paygate.ClaimedDelivery) outcome {
	ep := c.Endpoint
	start := d.cfg.Clock.Now()
	attempt := &paygate.DeliveryAttempt{
		DeliveryID: c.Delivery.ID, Number: c.Delivery.Attempts, URL: ep.URL, StartedAt: start, Response: []byte{},
	}
	o := outcome{attempt: attempt}
	fail := func(msg string) outcome {
		attempt.Error, o.err = msg, msg
		return o
	}

	u, err := url.Parse(ep.URL)
	if err != nil {
		return fail("the endpoint URL does not parse")
	}
	o.host = u.Hostname()
	if err := d.cfg.Policy.CheckEndpointURL(u, ep.Mode); err != nil {
		return fail(err.Error())
	}
	// Never sign with a secret the vault did not open: the attempt fails
	// (and is retried on the schedule, in case the key is configured by
	// then), and the operator is told which endpoint, never the secret.
	if err := OpenSecrets(d.cfg.Vault, ep); err != nil {
		d.log.Error("webhook delivery failed: the endpoint's signing secret cannot be opened with the configured vault keys",
			"merchant_id", ep.MerchantID, "mode", string(ep.Mode), "endpoint_host", o.host,
			"delivery_id", c.Delivery.ID, "error", err)
		return fail("the endpoint's signing secret cannot be opened with the configured vault keys")
	}
	req, err := d.newRequest(ctx, c, start)
	if err != nil {
		return fail(err.Error())
	}
	// Record whether the address connected to is one the guard refuses,
	// so that its answer is never shown while the guard is on.
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if ap, err := netip.ParseAddrPort(info.Conn.RemoteAddr().String()); err == nil {
				private := CheckAddr(ap.Addr()) != nil
				attempt.PrivateAddress = &private
			}
		},
	}))
	client := d.clients[ep.Mode]
	if client == nil {
		client = d.clients[paygate.ModeLive]
	}
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		attempt.Latency = time.Since(t0)
		return fail(describe(err, d.cfg.Timeout))
	}
	body, readErr := io.ReadAll(io.LimitReader(resp.Body, responseLimit))
	attempt.Latency = time.Since(t0)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
	_ = resp.Body.Close()
	attempt.StatusCode, attempt.Response = resp.StatusCode, body
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		if readErr != nil {
			// The status came in time; a body cut short does not undo it.
			// The mark fits within the limit.
			const mark = "…[read error]"
			attempt.Response = append(body[:min(len(body), responseLimit-len(mark))], mark...)
		}
		return o
	case resp.StatusCode == http.StatusGone:
		o.gone = true
		return fail("HTTP 410 Gone: the endpoint is disabled")
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return fail(fmt.Sprintf("HTTP %d: redirects are not followed", resp.StatusCode))
	default:
		return fail(fmt.Sprintf("HTTP %d", resp.StatusCode))
	}
}

// newRequest builds the signed POST of a delivery. The webhook-id is the
// event's id, the same on every attempt and every resend.
func (d *Dispatcher) newRequest(ctx context.Context, c paygate.ClaimedDelivery, now time.Time) (*http.Request, error) {
	ep := c.Endpoint
	var sigs []string
	for _, secret := range ep.Secrets(now) {
		sig, err := swh.Sign(secret, c.Delivery.EventID, now, c.Payload)
		if err != nil {
			return nil, errors.New("the endpoint's signing secret is invalid; set it with --rotate-secret")
		}
		sigs = append(sigs, sig)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(c.Payload))
	if err != nil {
		return nil, errors.New("the endpoint URL is not a valid request URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "paygate-webhooks/1")
	req.Header.Set(swh.HeaderID, c.Delivery.EventID)
	req.Header.Set(swh.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(swh.HeaderSignature, strings.Join(sigs, " "))
	return req, nil
}

// describe renders a failed request's error without the URL (its query may
// carry a merchant's token).
func describe(err error, timeout time.Duration) string {
	if errors.Is(err, ErrRefused) {
		var ue *url.Error
		for errors.As(err, &ue) {
			err = ue.Err
		}
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			err = oe.Err
		}
		return err.Error()
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Sprintf("no answer within %s", timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// newLease returns a random claim token.
func newLease() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
