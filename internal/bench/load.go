package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Config is one load run.
type Config struct {
	BaseURL   string // http://127.0.0.1:PORT, no trailing slash
	SecretKey string // a test secret key of the merchant
	// PublicKey is the merchant's public key of the same mode, for the
	// token operation; a mix with token needs it.
	PublicKey string
	// Concurrency is the number of clients, each one request at a time.
	Concurrency int
	// Duration of the measurement, after the warmup. With Requests set it
	// is ignored.
	Duration time.Duration
	// Requests, when positive, measures that many operations instead.
	Requests int64
	// Rate, when positive, runs an open loop: operations start at a steady
	// Rate per second and latency counts from the intended start, so a
	// slow answer cannot hide the requests queued behind it. 0 is a closed
	// loop: each client starts its next operation when one ends.
	Rate float64
	// Warmup runs the load unmeasured first.
	Warmup time.Duration
	Mix    Mix
	// Currency of the payments; default EUR.
	Currency string
	// Pool is the number of payments created before the run for the replay
	// and get operations; default 1000.
	Pool int
	// Progress, when set, is called about once a second during the run.
	Progress func(Progress)
	// AtMeasure, when set, is called when the warmup ends (to read the
	// server's CPU time at the start of the measurement).
	AtMeasure func()
}

// Progress is the state of a run, for live display.
type Progress struct {
	Elapsed time.Duration // since the start of the measurement; negative during the warmup
	Warmup  bool          // still warming up
	Done    int64         // measured requests so far
	Rate    float64       // requests per second over the last interval
	Errors  int64         // unexpected errors so far
}

// Result is what a run measured.
type Result struct {
	Rec *Recorder
	// Elapsed is the measurement window: from the end of the warmup to the
	// end of the last measured request.
	Elapsed time.Duration
	// Operations is the number of measured operations (iterations).
	Operations int64
	// Missed counts operations of an open loop that were due before the end
	// but could not start by then because every client was busy.
	Missed int64
	// Interrupted is true when ctx ended the run early.
	Interrupted bool
	// ErrorSample is the text of the first failure that is not an HTTP
	// answer (a baseline transaction's error).
	ErrorSample string
	// CardTest is what the card-testing guard did to the attacker and to
	// the legitimate payments; nil unless the mix has cardtest.
	CardTest *CardTest
}

// pooled is a payment created before the run for replay and get.
type pooled struct {
	id, key string
	body    []byte
}

// runner is the state shared by the clients of one run.
type runner struct {
	cfg    Config
	client *http.Client
	tpl    *templates
	picker picker
	runID  string
	badKey string
	pool   []pooled
	rec    *Recorder
	pace   *pacer
	// cardTest counts the attacker's and legitimate payments' fates when
	// the mix has cardtest (cardtest.go).
	cardTest *cardTestCounts
}

// NewClient returns the HTTP client of a run of concurrency clients: keep
// alive, enough idle connections for every client, no compression.
func NewClient(concurrency int) *http.Client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        concurrency * 2,
		MaxIdleConnsPerHost: concurrency * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// Run drives the load described by cfg and returns what it measured. It
// returns an error only when the run could not start (the pool could not be
// created); errors of individual requests are counted in the result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Concurrency < 1 {
		return nil, errors.New("concurrency must be at least 1")
	}
	if cfg.Duration <= 0 && cfg.Requests <= 0 {
		return nil, errors.New("a duration or a number of requests is required")
	}
	if cfg.Mix[OpToken] > 0 && cfg.PublicKey == "" {
		return nil, errors.New("the token operation needs the merchant's public key (the bench's own server has one)")
	}
	if cfg.Mix.total() == 0 {
		return nil, errors.New("the mix has no operation")
	}
	if cfg.Currency == "" {
		cfg.Currency = "EUR"
	}
	if cfg.Pool <= 0 {
		cfg.Pool = 1000
	}
	var rb [8]byte
	if _, err := rand.Read(rb[:]); err != nil {
		return nil, fmt.Errorf("run id: %w", err)
	}
	r := &runner{
		cfg:    cfg,
		client: NewClient(cfg.Concurrency),
		tpl:    newTemplates(cfg.Currency),
		picker: newPicker(cfg.Mix),
		runID:  hex.EncodeToString(rb[:]),
		badKey: "smtgw_sk_test_" + hex.EncodeToString(rb[:]) + "notAKeyOfAnyMerchant000000",
	}
	defer r.client.CloseIdleConnections()
	if cfg.Mix[OpCardTest] > 0 {
		r.cardTest = &cardTestCounts{}
	}
	if cfg.Mix.needsPool() {
		if err := r.fillPool(ctx); err != nil {
			return nil, err
		}
	}
	r.pace = newPacer(cfg.Warmup, cfg.Duration, cfg.Requests, cfg.Rate)
	r.rec = NewRecorder(r.pace.measure)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopProgress := r.progress(runCtx)
	if cfg.AtMeasure != nil {
		t := time.AfterFunc(cfg.Warmup, cfg.AtMeasure)
		defer t.Stop()
	}
	var wg sync.WaitGroup
	for w := range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.client0(runCtx, w)
		}()
	}
	wg.Wait()
	stopProgress()

	res := &Result{Rec: r.rec, Interrupted: ctx.Err() != nil}
	r.pace.result(res)
	if r.cardTest != nil {
		res.CardTest = r.cardTest.result()
	}
	return res, nil
}

// worker is one client's reusable state.
type worker struct {
	id   int
	rng  *mrand.Rand
	body []byte
	ref  []byte
	resp bytes.Buffer
	seq  int64
	// xff is the X-Forwarded-For of the next request, "" for none: the
	// client address a cardtest mix gives each payment.
	xff string
}

// client0 is one client's loop: take the next operation, wait for its
// intended start in an open loop, run it, until the run ends.
func (r *runner) client0(ctx context.Context, id int) {
	w := &worker{id: id, rng: mrand.New(mrand.NewPCG(uint64(id)+1, uint64(time.Now().UnixNano())))}
	for {
		start, measured, ok := r.pace.take(ctx)
		if !ok {
			return
		}
		r.operation(ctx, w, start, measured)
		if measured {
			r.pace.finished()
		}
	}
}

// operation runs one operation of the mix.
func (r *runner) operation(ctx context.Context, w *worker, start time.Time, measured bool) {
	op := r.picker.pick(w.rng.IntN(r.picker.total))
	record := func(k Kind, sent time.Time, o Outcome) {
		if measured && ctx.Err() == nil {
			r.rec.Record(k, sent, time.Since(sent), o)
		}
	}
	w.xff = ""
	switch op {
	case OpCardTest:
		r.attack(ctx, w, start, measured, record)
	case OpApprove, OpDecline, OpRefund:
		tpls := r.tpl.approve
		if op == OpDecline {
			tpls = r.tpl.decline
		}
		tpl := &tpls[w.rng.IntN(len(tpls))]
		if r.cardTest != nil {
			w.xff = legitimateAddr(w.rng)
		}
		w.seq++
		w.ref = appendRef(w.ref[:0], r.runID, w.id, w.seq)
		w.body = tpl.appendBody(w.body[:0], w.rng.IntN(customerPool), w.ref)
		key := string(w.ref)
		o := r.do(ctx, w, http.MethodPost, "/v1/payments", r.cfg.SecretKey, key, w.body)
		o.Expected = op == OpDecline && o.Name == "CARD_DECLINED"
		record(KindPayment, start, o)
		if r.cardTest != nil && measured && ctx.Err() == nil {
			r.cardTest.legitimate(op, w.resp.Bytes())
		}
		if op != OpRefund || o.Err != nil || o.Status != http.StatusCreated {
			return
		}
		pid := paymentID(w.resp.Bytes())
		if pid == "" {
			record(KindRefund, time.Now(), Outcome{Status: o.Status, Name: "NO_PAYMENT_ID"})
			return
		}
		w.body = appendRefundBody(w.body[:0], pid, r.cfg.Currency)
		sent := time.Now()
		o = r.do(ctx, w, http.MethodPost, "/v1/refunds", r.cfg.SecretKey, key+"-refund", w.body)
		record(KindRefund, sent, o)
	case OpToken:
		// No Idempotency-Key is needed: do sends one, which is ignored.
		w.body = r.tpl.token[w.rng.IntN(len(r.tpl.token))].appendTo(w.body[:0])
		record(KindToken, start, r.do(ctx, w, http.MethodPost, "/v1/tokens", r.cfg.PublicKey, "", w.body))
	case OpReplay:
		p := &r.pool[w.rng.IntN(len(r.pool))]
		record(KindReplay, start, r.do(ctx, w, http.MethodPost, "/v1/payments", r.cfg.SecretKey, p.key, p.body))
	case OpGet:
		p := &r.pool[w.rng.IntN(len(r.pool))]
		record(KindGet, start, r.do(ctx, w, http.MethodGet, "/v1/payments/"+p.id, r.cfg.SecretKey, "", nil))
	case OpUnauthorized:
		o := r.do(ctx, w, http.MethodGet, "/v1/payments/00000000-0000-4000-8000-000000000000", r.badKey, "", nil)
		o.Expected = o.Name == "UNAUTHORIZED"
		record(KindUnauthorized, start, o)
	}
}

// do sends one request and reads its answer whole into w.resp (keeping the
// connection alive). The outcome carries the error name of an error answer.
func (r *runner) do(ctx context.Context, w *worker, method, path, apiKey, idemKey string, body []byte) Outcome {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.cfg.BaseURL+path, rd)
	if err != nil {
		return Outcome{Err: err}
	}
	req.Header["X-Api-Key"] = []string{apiKey}
	if body != nil {
		req.Header["Content-Type"] = []string{"application/json"}
		req.Header["Idempotency-Key"] = []string{idemKey}
	}
	if w.xff != "" {
		req.Header["X-Forwarded-For"] = []string{w.xff}
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return Outcome{Err: err}
	}
	w.resp.Reset()
	_, err = w.resp.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return Outcome{Err: fmt.Errorf("read answer: %w", err)}
	}
	o := Outcome{Status: resp.StatusCode}
	if resp.StatusCode >= 400 {
		o.Name = errorName(w.resp.Bytes())
	}
	return o
}

// errorName returns error.name of an error envelope, "" when there is none.
func errorName(body []byte) string {
	var env struct {
		Error struct {
			Name string `json:"name"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil {
		return ""
	}
	return env.Error.Name
}

// paymentID returns data.id of a create answer, "" when there is none.
func paymentID(body []byte) string {
	var env struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &env) != nil {
		return ""
	}
	return env.Data.ID
}

// fillPool creates the payments that replay and get read, before the run
// and outside the measurement, with every client at work.
func (r *runner) fillPool(ctx context.Context) error {
	r.pool = make([]pooled, r.cfg.Pool)
	var next atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := range min(r.cfg.Concurrency, r.cfg.Pool) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &worker{id: c}
			for {
				i := int(next.Add(1) - 1)
				if i >= len(r.pool) || ctx.Err() != nil {
					return
				}
				tpl := &r.tpl.approve[i%len(r.tpl.approve)]
				key := "bench-" + r.runID + "-pool-" + strconv.Itoa(i)
				body := tpl.appendBody(nil, i%customerPool, []byte(key))
				o := r.do(ctx, w, http.MethodPost, "/v1/payments", r.cfg.SecretKey, key, body)
				id := ""
				if o.Err == nil && o.Status == http.StatusCreated {
					id = paymentID(w.resp.Bytes())
				}
				if id == "" {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("create the payment pool: %s", describe(o))
					}
					mu.Unlock()
					return
				}
				r.pool[i] = pooled{id: id, key: key, body: body}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// describe renders an outcome for an error message.
func describe(o Outcome) string {
	switch {
	case o.Err != nil:
		return o.Err.Error()
	case o.Name != "":
		return fmt.Sprintf("HTTP %d %s", o.Status, o.Name)
	default:
		return fmt.Sprintf("HTTP %d", o.Status)
	}
}

// progress calls cfg.Progress once a second until the returned function is
// called.
func (r *runner) progress(ctx context.Context) (stop func()) {
	if r.cfg.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		prev, prevAt := int64(0), time.Now()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				n := r.rec.Count()
				r.cfg.Progress(Progress{
					Elapsed: now.Sub(r.pace.measure),
					Warmup:  now.Before(r.pace.measure),
					Done:    n,
					Rate:    float64(n-prev) / now.Sub(prevAt).Seconds(),
					Errors:  r.rec.ErrorCount(),
				})
				prev, prevAt = n, now
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// appendRef appends the merchant reference (and idempotency key) of a
// client's seq-th payment in a run. Letters stand between the numbers: the
// reference is also a metadata value, where a run of 13-19 digits and
// dashes that passes the Luhn check is refused as a card number (decisions
// §15), and the run id's hex may end in digits.
func appendRef(dst []byte, runID string, client int, seq int64) []byte {
	dst = append(dst, "bench-"...)
	dst = append(dst, runID...)
	dst = append(dst, "-c"...)
	dst = strconv.AppendInt(dst, int64(client), 10)
	dst = append(dst, "-n"...)
	return strconv.AppendInt(dst, seq, 10)
}
