package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/paygate/paygate/internal/bench"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
	"github.com/paygate/paygate/internal/store/baseline"
)

// benchSynopsis is the usage line of bench.
const benchSynopsis = "[--database-url URL | --url URL --key SECRET | --self-test]\n" +
	"        [--concurrency 32] [--duration 30s | --requests N] [--rate R] [--warmup 2s]\n" +
	"        [--mix approve=90,decline=5,refund=5] [--provider sandbox|stripe-mock] [--baseline] [--json] [--svg FILE]\n" +
	"        [--server-log FILE] [--server-arg ARG]... [--server-cpuprofile FILE] [--server-heapprofile FILE]\n" +
	"        [--metrics]\n" +
	"        [--traces]\n" +
	"        [--cpuprofile FILE]"

// benchNotes closes the help of bench.
const benchNotes = `Without --url, bench creates a merchant on --database-url (default: a fresh SQLite
database in a temporary directory, removed at the end; the environment's
PAYGATE_DATABASE_URL is not read) and runs 'paygate serve' on it as a child process on
a free loopback port: built-in sandbox providers without latency, rate limits out of
the way, --log-level warn. It reads the child's CPU time and memory in /proc.
PostgreSQL needs a card vault key: PAYGATE_VAULT_KEY is passed on, or a random one used.
With --url it loads a running gateway on a loopback address with the test secret key
--key; server CPU and memory are then unknown.

Operations of --mix (integer weights): approve (a captured card), decline (a declining
card: CARD_DECLINED counts as expected), refund (a captured payment, then a partial
refund), replay (a create sent again with its key and body), get (GET
/v1/payments/{id}), unauthorized (a bad key: 401 counts as expected), cardtest (an
attacker trying declining cards from a few addresses; with it every payment comes from an
address of its own through X-Forwarded-For, the child trusts bench as a proxy, and the
card-testing guard's rules are on: see --guard), token (POST /v1/tokens with the test
public key of bench's merchant, which bench's own server has; the child's token rate
limits are lifted). replay and get read a pool of --pool payments created before the
run, outside the measurement.
Examples: --mix replay=1, --mix get=1, --mix unauthorized=1.

--rate R runs an open loop: R operations per second start on schedule, and latency
counts from the scheduled start, so a slow answer cannot hide the requests behind it
(operations due while every client is busy are sent late; those still unsent at the
end are reported as missed). Without --rate each client sends its next request when
the last one is answered.

--baseline then measures the database alone: --concurrency goroutines run the writes
of one payment per transaction (the store's BaselinePayment) through the same driver
and pool, for the same duration, after the gateway run; the report gives the ratio
payments/s ÷ transactions/s. With --rate the baseline runs the same open loop, so its
latency reads against the gateway's at the same rate.

--json prints one JSON object: target, url, loop, rate, concurrency, mix, warmupSeconds,
elapsedSeconds, interrupted, operations, missed, requests, requestsPerSecond, payments,
paymentsPerSecond, latency {count, mean, min, p50, p90, p99, p999, max} (ms), kinds
{payment|refund|replay|get|unauthorized|token: latency}, errors {NAME: count}, expected
{NAME: count}, transportErrors, transportError, clientCpuSeconds, server {cpuSeconds,
cpuPerRequestMs, cores, peakRssBytes, rssBytes[]} or null, baseline {transactions,
elapsedSeconds, txPerSecond, latency, errors, error, missed, ratio} or null, provider
(sandbox, stripe-mock, unknown or none), providerAlone {provider, url, callsPerPayment,
elapsedSeconds, payments, paymentsPerSecond, requestsPerSecond, latency, errors, error,
missed, ratio, cpuSeconds, gatewayRunCpuSeconds, machine} or null, metrics {intervalSeconds,
scrapes, failures, error, series, bytes, meanMs, maxMs} or null, traces {spans,
spansPerRequest, totalSpans, exportRequests, failures} or null, timeline [{second,
requests, errors, p50, p99}].

--metrics runs the child with its Prometheus metrics on (serve --metrics-addr on a free
loopback port) and scrapes them every second during the run, fifteen times as often as
Prometheus's default: the cost of metrics is the difference with a run without it.

--provider stripe-mock measures live mode through the Stripe connector: bench starts
stripe-mock (on PATH or in $(go env GOPATH)/bin; ` + bench.StripeMockInstall + `)
on a free loopback port, gives the child server a configuration file routing live
--currency payments to a kind: stripe provider whose base_url is that stripe-mock, and
loads it with the merchant's live secret key. stripe-mock answers every confirmed
intent with its fixture (status requires_payment_method), which the connector reads as
a decline: every payment makes both Stripe calls and is stored failed, so the mix
defaults to decline=1 (CARD_DECLINED expected) and may hold only decline and
unauthorized. After the gateway, the same calls (payment_methods, then
payment_intents with confirm=true, through the connector's code) go straight to
stripe-mock with the same clients, duration and loop: providerAlone, beside the
gateway's rate.

--traces has the child server export OpenTelemetry traces (OTLP/HTTP) to a receiver in
the tool, on loopback, that counts the spans and drops them: the cost of tracing. Without
it the child gets no OTEL_ variable of this environment, so tracing is off.

--self-test measures the tool itself against a trivial in-process server that answers
every request 201: the most it can drive on this machine.`

// benchFlags is the parsed command line of bench.
type benchFlags struct {
	databaseURL string
	url, key    string
	selfTest    bool
	concurrency int
	duration    time.Duration
	requests    int64
	rate        float64
	warmup      time.Duration
	mix         bench.Mix
	pool        int
	currency    string
	baseline    bool
	// provider is "sandbox" or "stripe-mock" (benchProviderStripeMock).
	provider   string
	asJSON     bool
	svg        string
	serverLog  string
	serverArgs []string
	cpuProfile string
	// The child server's profiles, through serve --pprof.
	serverCPUProfile, serverHeapProfile string
	// metrics turns on the child's metrics and scrapes them (benchMetrics).
	metrics bool
	// traces has the child server export traces (bench_traces.go).
	traces bool
	// guard switches the card-testing guard's rules on for the bench's
	// merchant (bench_guard.go).
	guard bool
}

func parseBenchFlags(args []string, c *cli) (benchFlags, error) {
	fs := newFlagSet("bench", benchSynopsis)
	fs.notes = benchNotes
	var f benchFlags
	var mix string
	fs.StringVar(&f.databaseURL, "database-url", "", "database `URL` to provision the merchant on and serve: sqlite:FILE or postgres://... (default: a fresh SQLite database in a temporary directory)")
	fs.StringVar(&f.url, "url", "", "load a running gateway at this loopback `URL` instead of starting one")
	fs.StringVar(&f.key, "key", "", "test secret key (`SECRET`) of a merchant of the --url gateway")
	fs.BoolVar(&f.selfTest, "self-test", false, "measure the tool against a trivial in-process server")
	fs.IntVar(&f.concurrency, "concurrency", 32, "`N` concurrent clients")
	fs.DurationVar(&f.duration, "duration", 30*time.Second, "measurement `duration`, after the warmup")
	fs.Int64Var(&f.requests, "requests", 0, "measure `N` operations instead of a duration")
	fs.Float64Var(&f.rate, "rate", 0, "open loop: start `R` operations per second (default: closed loop)")
	fs.DurationVar(&f.warmup, "warmup", 2*time.Second, "unmeasured load before the measurement")
	fs.StringVar(&mix, "mix", bench.DefaultMix, "`WEIGHTS` of the operations: approve, decline, refund, replay, get, unauthorized, cardtest, token")
	fs.IntVar(&f.pool, "pool", 1000, "`N` payments created before the run for replay and get")
	fs.StringVar(&f.currency, "currency", "EUR", "`CODE` of the payments' currency")
	fs.BoolVar(&f.baseline, "baseline", false, "also measure the database-only baseline and the ratio")
	fs.StringVar(&f.provider, "provider", "sandbox", "`NAME` of what the payments go to: sandbox (test mode) or stripe-mock (live mode through the Stripe connector, and stripe-mock measured alone)")
	fs.BoolVar(&f.asJSON, "json", false, "print the report as one line of JSON")
	fs.StringVar(&f.svg, "svg", "", "write the latency charts to this SVG `FILE`")
	fs.StringVar(&f.serverLog, "server-log", "", "write the child server's log to this `FILE` (default: discarded, unless it fails to start)")
	fs.Var((*argList)(&f.serverArgs), "server-arg", "extra flag `ARG` for the child 'paygate serve' (repeatable), e.g. --server-arg=--log-level=info")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write the load tool's own CPU profile to this `FILE`")
	fs.StringVar(&f.serverCPUProfile, "server-cpuprofile", "", "write the child server's CPU profile over the measurement to this `FILE` (through serve --pprof; needs --duration)")
	fs.StringVar(&f.serverHeapProfile, "server-heapprofile", "", "write the child server's heap profile at the end of the measurement to this `FILE`")
	fs.BoolVar(&f.metrics, "metrics", false, "run the child with its Prometheus metrics on and scrape them every second")
	fs.BoolVar(&f.traces, "traces", false, "have the child server export OpenTelemetry traces to a receiver in the tool")
	guard := fs.Bool("guard", false, "switch the card-testing guard's rules on (the live defaults) in the mode bench pays in (default: on when --mix has cardtest)")
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return f, err
	}
	mixGiven, guardGiven := false, false
	fs.Visit(func(fl *flag.Flag) {
		mixGiven = mixGiven || fl.Name == "mix"
		guardGiven = guardGiven || fl.Name == "guard"
	})
	switch f.provider {
	case "sandbox":
	case benchProviderStripeMock:
		if !mixGiven {
			mix = stripeMockMix
		}
	default:
		return f, usageErrorf("--provider must be sandbox or %s", benchProviderStripeMock)
	}
	var err error
	if f.mix, err = bench.ParseMix(mix); err != nil {
		return f, usageErrorf("--mix: %v", err)
	}
	f.guard = *guard || !guardGiven && f.mix[bench.OpCardTest] > 0
	if f.provider == benchProviderStripeMock {
		if err := checkStripeMockMix(f.mix); err != nil {
			return f, err
		}
	}
	switch {
	case f.concurrency < 1 || f.concurrency > 10000:
		return f, usageErrorf("--concurrency must be from 1 to 10000")
	case f.requests < 0:
		return f, usageErrorf("--requests must not be negative")
	case f.requests == 0 && f.duration <= 0:
		return f, usageErrorf("--duration must be positive")
	case f.rate < 0:
		return f, usageErrorf("--rate must not be negative")
	case f.warmup < 0:
		return f, usageErrorf("--warmup must not be negative")
	case f.pool < 1:
		return f, usageErrorf("--pool must be at least 1")
	case len(f.currency) != 3:
		return f, usageErrorf("--currency must be a three-letter code")
	}
	f.currency = strings.ToUpper(f.currency)
	targets := 0
	for _, set := range []bool{f.url != "", f.selfTest, f.databaseURL != ""} {
		if set {
			targets++
		}
	}
	if targets > 1 {
		return f, usageErrorf("--url, --self-test and --database-url exclude each other")
	}
	if f.url != "" {
		if f.key == "" {
			return f, usageErrorf("--url needs --key, a test secret key of the gateway's merchant")
		}
		if err := checkLoopbackURL(f.url); err != nil {
			return f, usageErrorf("--url: %v", err)
		}
		f.url = strings.TrimRight(f.url, "/")
	} else if f.key != "" {
		return f, usageErrorf("--key goes with --url")
	}
	if f.provider != "sandbox" && (f.url != "" || f.selfTest) {
		return f, usageErrorf("--provider %s needs the tool's own server: drop --url and --self-test", f.provider)
	}
	if f.baseline && (f.url != "" || f.selfTest) {
		return f, usageErrorf("--baseline needs the tool's own server: drop --url and --self-test")
	}
	if (len(f.serverArgs) > 0 || f.serverCPUProfile != "" || f.serverHeapProfile != "") && (f.url != "" || f.selfTest) {
		return f, usageErrorf("--server-arg and the server's profiles need the tool's own server: drop --url and --self-test")
	}
	if f.metrics && (f.url != "" || f.selfTest) {
		return f, usageErrorf("--metrics needs the tool's own server: drop --url and --self-test")
	}
	if f.traces && (f.url != "" || f.selfTest) {
		return f, usageErrorf("--traces needs the tool's own server: drop --url and --self-test")
	}
	if f.serverCPUProfile != "" && f.requests > 0 {
		return f, usageErrorf("--server-cpuprofile needs --duration, not --requests")
	}
	return f, nil
}

// argList is a repeatable flag whose values are kept whole (a serve flag's
// value may hold commas).
type argList []string

// String returns the arguments separated by spaces.
func (a *argList) String() string {
	if a == nil {
		return ""
	}
	return strings.Join(*a, " ")
}

// Set appends one argument.
func (a *argList) Set(v string) error {
	*a = append(*a, v)
	return nil
}

// checkLoopbackURL accepts an http URL whose host is a loopback address or
// localhost: load goes nowhere else.
func checkLoopbackURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("%q must be http://HOST:PORT", raw)
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		return fmt.Errorf("%q must have no path or query", raw)
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%q is not a loopback address: bench only loads this machine", host)
}

func cmdBench(ctx context.Context, c *cli, args []string) (err error) {
	f, err := parseBenchFlags(args, c)
	if err != nil {
		return err
	}
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	rep := &bench.Report{
		Concurrency: f.concurrency, Mix: f.mix.Map(), Loop: "closed", Rate: f.rate,
		WarmupSeconds: f.warmup.Seconds(),
	}
	if f.rate > 0 {
		rep.Loop = "open"
	}
	cfg := bench.Config{
		Concurrency: f.concurrency, Duration: f.duration, Requests: f.requests, Rate: f.rate,
		Warmup: f.warmup, Mix: f.mix, Currency: f.currency, Pool: f.pool,
	}
	clearProgress := func() {}
	if isTerminal(c.stderr) {
		cfg.Progress = func(p bench.Progress) { showProgress(c.stderr, p) }
		var once sync.Once
		clearProgress = func() { once.Do(func() { fmt.Fprint(c.stderr, "\r\033[K") }) }
		defer clearProgress()
	}

	var res *bench.Result
	switch {
	case f.selfTest:
		rep.Target, rep.Provider = "self-test", "none"
		res, err = benchSelfTest(ctx, cfg, rep)
	case f.url != "":
		rep.Target, rep.URL, rep.Provider = "url", f.url, "unknown"
		cfg.BaseURL, cfg.SecretKey = f.url, f.key
		res, err = benchRun(ctx, cfg, rep, nil, nil)
	default:
		res, err = benchOwnServer(ctx, c, f, cfg, rep)
	}
	clearProgress()
	if err != nil {
		return err
	}
	if f.svg != "" {
		if err := writeSVGFile(f.svg, rep, res.Rec.All()); err != nil {
			return err
		}
	}
	if f.asJSON {
		return rep.WriteJSON(c.stdout)
	}
	return rep.WriteText(c.stdout)
}

// benchRun runs the load and fills the report, reading the tool's CPU time
// (and the server's, when srv is set) over the measurement.
func benchRun(ctx context.Context, cfg bench.Config, rep *bench.Report, srv *bench.Server, atMeasure func()) (*bench.Result, error) {
	var mu sync.Mutex
	var selfStart, srvStart time.Duration
	var machine bench.MachineClock
	started := false
	mark := func() {
		mu.Lock()
		defer mu.Unlock()
		machine.Mark()
		selfStart = selfCPU()
		if srv != nil {
			srvStart, _ = srv.CPU()
		}
		started = true
		if atMeasure != nil {
			atMeasure()
		}
	}
	cfg.AtMeasure = mark
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	if !started { // interrupted during the warmup: nothing was measured
		machine.Mark()
		selfStart = selfCPU()
		if srv != nil {
			srvStart, _ = srv.CPU()
		}
	}
	rep.Fill(res)
	rep.Machine = machine.Since()
	rep.ClientCPUSeconds = round3((selfCPU() - selfStart).Seconds())
	if srv != nil {
		cpu, err := srv.CPU()
		if err != nil {
			return nil, err
		}
		peak, err := srv.PeakRSS()
		if err != nil {
			return nil, err
		}
		s := &bench.ServerStats{CPUSeconds: round3((cpu - srvStart).Seconds()), PeakRSSBytes: peak, RSSBytes: srv.RSSSamples()}
		if rep.Requests > 0 {
			s.CPUPerRequestMs = round3(s.CPUSeconds * 1000 / float64(rep.Requests))
		}
		if rep.ElapsedSeconds > 0 {
			s.Cores = round3(s.CPUSeconds / rep.ElapsedSeconds)
		}
		rep.Server = s
	}
	return res, nil
}

func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }

// selfCPU returns the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchSelfTest loads a trivial in-process server.
func benchSelfTest(ctx context.Context, cfg bench.Config, rep *bench.Report) (*bench.Result, error) {
	u, stop, err := bench.StartTrivialServer(bench.TrivialHandler())
	if err != nil {
		return nil, fmt.Errorf("self-test server: %w", err)
	}
	defer stop()
	rep.URL = u
	cfg.BaseURL, cfg.SecretKey = u, "smtgw_sk_test_selftest"
	return benchRun(ctx, cfg, rep, nil, nil)
}

// benchOwnServer provisions a merchant, starts a child server, runs the
// load, stops the server and runs the baseline.
func benchOwnServer(ctx context.Context, c *cli, f benchFlags, cfg bench.Config, rep *bench.Report) (*bench.Result, error) {
	rep.Provider = f.provider
	var sm *stripeMockRun
	if f.provider == benchProviderStripeMock {
		// First: without stripe-mock, one line and nothing provisioned.
		var err error
		if sm, err = startStripeMockRun(ctx, f.currency); err != nil {
			return nil, err
		}
		defer sm.stop()
	}
	dbURL := f.databaseURL
	if dbURL == "" {
		dir, err := os.MkdirTemp("", "paygate-bench-")
		if err != nil {
			return nil, fmt.Errorf("temporary directory: %w", err)
		}
		defer os.RemoveAll(dir)
		dbURL = "sqlite:" + filepath.Join(dir, "bench.db")
	}
	rep.Target = "sqlite"
	if _, ok := store.SQLitePath(dbURL); !ok {
		rep.Target = "postgres"
	}
	var m merchantCreated
	err := withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		if f.baseline {
			if _, ok := st.(baseline.Store); !ok {
				return errors.New("--baseline: this database's store has no BaselinePayment method yet")
			}
		}
		var err error
		m, err = createMerchant(ctx, st, "paygate bench "+now().Format(time.RFC3339))
		if err != nil || !f.guard {
			return err
		}
		return enableBenchGuard(ctx, st, m.MerchantID, benchMode(f))
	})
	if err != nil {
		return nil, err
	}

	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the paygate binary: %w", err)
	}
	logw, closeLog, err := serverLog(f.serverLog)
	if err != nil {
		return nil, err
	}
	defer closeLog()
	const unlimited = "1000000000"
	serveArgs := []string{"serve", "--database-url", dbURL, "--log-level", "warn",
		"--rate-limit-test", unlimited, "--rate-limit-live", unlimited, "--rate-limit-unauthenticated", unlimited,
		"--rate-limit-tokens", unlimited, "--rate-limit-tokens-per-address", unlimited,
		// No load balancer watches its /readyz: it may stop at once.
		"--drain-delay", "0s"}
	pprofAddr := ""
	if f.serverCPUProfile != "" || f.serverHeapProfile != "" {
		if pprofAddr, err = bench.FreeLoopbackAddr(); err != nil {
			return nil, err
		}
		serveArgs = append(serveArgs, "--pprof", pprofAddr)
	}
	if sm != nil {
		serveArgs = append(serveArgs, sm.serveArgs()...)
	}
	metricsAddr := ""
	if f.metrics {
		if metricsAddr, err = bench.FreeLoopbackAddr(); err != nil {
			return nil, err
		}
		serveArgs = append(serveArgs, "--metrics-addr", metricsAddr)
	}
	serveArgs = append(serveArgs, guardServeArgs(f)...)
	serveArgs = append(serveArgs, f.serverArgs...)
	env, err := serverEnv(os.Environ(), rep.Target == "postgres")
	if err != nil {
		return nil, err
	}
	if sm != nil {
		env = append(env, sm.env())
	}
	traces, err := startBenchTraces(f.traces)
	if err != nil {
		return nil, err
	}
	defer traces.close()
	env = append(env, traces.env()...)
	srv, err := bench.StartServer(ctx, bench.ServerConfig{Path: exe, Args: serveArgs, Env: env, Log: logw})
	if err != nil {
		if lb, ok := logw.(*tailBuffer); ok {
			return nil, fmt.Errorf("%w; server log: %s", err, lb.tail())
		}
		return nil, err
	}
	rep.URL = srv.URL
	cfg.BaseURL, cfg.SecretKey, cfg.PublicKey = srv.URL, m.TestSecretKey, m.TestPublicKey
	if sm != nil {
		cfg.SecretKey = m.LiveSecretKey // the live route goes to stripe-mock
	}
	var scraper *bench.Scraper
	if f.metrics {
		scraper = bench.StartScraper("http://"+metricsAddr+"/metrics", time.Second)
		defer scraper.Stop() // on an early return
	}
	var prof serverProfile
	atMeasure := func() {
		traces.markStart()
		if sm != nil {
			sm.markGateway()
		}
		if f.serverCPUProfile != "" {
			prof.start(ctx, pprofAddr, f.duration, f.serverCPUProfile)
		}
	}
	res, err := benchRun(ctx, cfg, rep, srv, atMeasure)
	if scraper != nil {
		rep.Metrics = scraper.Stop() // before the server stops
	}
	traces.markEnd()
	if sm != nil {
		sm.endGateway()
	}
	if perr := prof.wait(); err == nil && perr != nil {
		err = perr
	}
	if err == nil && f.serverHeapProfile != "" {
		err = fetchProfile(ctx, "http://"+pprofAddr+"/debug/pprof/heap", f.serverHeapProfile, 30*time.Second)
	}
	if stopErr := srv.Stop(); err == nil && stopErr != nil && ctx.Err() == nil {
		err = stopErr
	}
	traces.fill(rep)
	if err != nil {
		return nil, err
	}
	if sm != nil && ctx.Err() == nil {
		if err := sm.runAlone(ctx, f, rep, srv.URL); err != nil {
			return nil, err
		}
	}
	if !f.baseline || ctx.Err() != nil {
		return res, nil
	}
	err = withBaselineStore(ctx, dbURL, func(st baseline.Store) error {
		var machine bench.MachineClock
		b, err := bench.RunBaseline(ctx, bench.BaselineConfig{
			Concurrency: f.concurrency, Duration: f.duration, Requests: f.requests, Warmup: f.warmup, Rate: f.rate,
			Tx: func(ctx context.Context, n int64) error {
				return st.BaselinePayment(ctx, m.MerchantID, paygate.ModeTest, n)
			},
			AtMeasure: machine.Mark,
		})
		if err != nil {
			return err
		}
		rep.SetBaseline(b)
		rep.Baseline.Machine = machine.Since()
		return nil
	})
	return res, err
}

// withBaselineStore opens the store for the baseline, without the admin
// timeout of withStore: the run lasts as long as the load did.
func withBaselineStore(ctx context.Context, dbURL string, f func(baseline.Store) error) error {
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("open database %s: %w", redactURL(dbURL), err)
	}
	defer st.Close()
	bs, ok := st.(baseline.Store)
	if !ok {
		return errors.New("--baseline: this database's store has no BaselinePayment method yet")
	}
	return f(bs)
}

// serverProfile is the child server's CPU profile, taken over the
// measurement.
type serverProfile struct {
	started atomic.Bool
	done    chan error
}

// start begins a CPU profile of d (whole seconds, at least one) on the
// server's pprof listener, written to path.
func (p *serverProfile) start(ctx context.Context, pprofAddr string, d time.Duration, path string) {
	secs := max(int64((d+time.Second-1)/time.Second), 1)
	p.done = make(chan error, 1)
	p.started.Store(true)
	go func() {
		u := "http://" + pprofAddr + "/debug/pprof/profile?seconds=" + strconv.FormatInt(secs, 10)
		p.done <- fetchProfile(ctx, u, path, time.Duration(secs)*time.Second+30*time.Second)
	}()
}

// wait returns the outcome of the profile, nil when none was started.
func (p *serverProfile) wait() error {
	if !p.started.Load() {
		return nil
	}
	return <-p.done
}

// fetchProfile saves a pprof endpoint's answer to path.
func fetchProfile(ctx context.Context, u, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("server profile: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("server profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("server profile: %s answered %s", u, resp.Status)
	}
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("server profile: %w", err)
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		out.Close()
		return fmt.Errorf("server profile: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("server profile: %w", err)
	}
	return nil
}

// serverEnv is the child server's environment: this one without the
// PAYGATE_ settings that would change what is measured (a --config with
// real providers, Redis, another database), keeping the vault key, and
// without the OTEL_ settings (bench --traces sets its own). On
// PostgreSQL without a vault key a random one is used: bench stores no card.
func serverEnv(environ []string, postgres bool) ([]string, error) {
	var env []string
	haveKey := false
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "PAYGATE_") && (name != "PAYGATE_VAULT_KEY" || value == "") || strings.HasPrefix(name, "OTEL_") {
			continue
		}
		haveKey = haveKey || name == "PAYGATE_VAULT_KEY"
		env = append(env, kv)
	}
	if postgres && !haveKey {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return nil, fmt.Errorf("generate a vault key: %w", err)
		}
		env = append(env, "PAYGATE_VAULT_KEY="+base64.StdEncoding.EncodeToString(k))
	}
	return env, nil
}

// serverLog opens --server-log, or keeps the end of the log in memory to
// explain a failed start.
func serverLog(path string) (io.Writer, func(), error) {
	if path == "" {
		return &tailBuffer{}, func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--server-log: %w", err)
	}
	return f, func() { f.Close() }, nil
}

// tailBuffer keeps the last few kilobytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 4096

// Write keeps the end of p.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// writeSVGFile writes the charts of --svg.
func writeSVGFile(path string, rep *bench.Report, h *bench.Histogram) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--svg: %w", err)
	}
	if err := bench.WriteSVG(f, rep, h); err != nil {
		f.Close()
		return fmt.Errorf("--svg: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--svg: %w", err)
	}
	return nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// showProgress overwrites the progress line on a terminal.
func showProgress(w io.Writer, p bench.Progress) {
	if p.Warmup {
		fmt.Fprintf(w, "\r\033[Kwarming up, %.0fs to go", -p.Elapsed.Seconds())
		return
	}
	fmt.Fprintf(w, "\r\033[K%6.1fs  %s requests  %s/s  %s errors",
		p.Elapsed.Seconds(), strconv.FormatInt(p.Done, 10), strconv.FormatFloat(p.Rate, 'f', 0, 64), strconv.FormatInt(p.Errors, 10))
}
