package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/paygate/paygate/internal/bench"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/stripe"
)

// bench --provider stripe-mock: live mode through the Stripe connector to a
// stripe-mock the tool starts on loopback, and stripe-mock measured alone.

const (
	benchProviderStripeMock = "stripe-mock"
	// stripeMockMix is the default mix of the mode: stripe-mock answers
	// every confirmed intent with its fixture, whose status
	// (requires_payment_method) the connector reads as a decline.
	stripeMockMix = "decline=1"
	// stripeMockKeyEnv holds the provider's secret key in the child
	// server's environment, named by the configuration file.
	stripeMockKeyEnv = "PAYGATE_BENCH_STRIPE_SECRET_KEY"
	// stripeMockSecretKey: stripe-mock accepts any test-mode secret key and
	// refuses live ones. The gateway's mode (live) is what is measured.
	stripeMockSecretKey = "sk_test_paygatebench"
	// stripeCallsPerPayment: payment_methods, then payment_intents.
	stripeCallsPerPayment = 2
)

// checkStripeMockMix refuses the operations that make no sense against
// stripe-mock's fixtures.
func checkStripeMockMix(m bench.Mix) error {
	for name := range m.Map() {
		if name != "decline" && name != "unauthorized" {
			return usageErrorf("--provider %s: --mix may hold only decline and unauthorized, not %s (stripe-mock declines every payment with its fixture: approve would count each as an error, refund finds no captured payment, replay and get no pool)",
				benchProviderStripeMock, name)
		}
	}
	return nil
}

// stripeMockRun is the stripe-mock of one bench run and the configuration
// file that routes the child server's live payments to it.
type stripeMockRun struct {
	mock   *bench.StripeMock
	dir    string // holds the configuration file
	config string

	mu           sync.Mutex
	cpuAtMeasure time.Duration
	gatewayCPU   time.Duration
}

// startStripeMockRun finds and starts stripe-mock, and writes the
// configuration file routing live payments in currency to it.
func startStripeMockRun(ctx context.Context, currency string) (*stripeMockRun, error) {
	bin, err := bench.FindStripeMock()
	if err != nil {
		return nil, err
	}
	log := &headBuffer{}
	mock, err := bench.StartStripeMock(ctx, bin, log)
	if err != nil {
		if h := log.head(); h != "" {
			return nil, fmt.Errorf("%w; stripe-mock said: %s", err, h)
		}
		return nil, err
	}
	s := &stripeMockRun{mock: mock}
	if s.dir, err = os.MkdirTemp("", "paygate-bench-stripe-"); err != nil {
		mock.Stop()
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	s.config = filepath.Join(s.dir, "providers.yaml")
	if err := os.WriteFile(s.config, []byte(stripeMockConfig(mock.URL, currency)), 0o600); err != nil {
		s.stop()
		return nil, fmt.Errorf("write the provider configuration: %w", err)
	}
	return s, nil
}

// stripeMockConfig is the child server's configuration file: one live
// Stripe provider at baseURL (http is accepted on loopback, for mocks)
// serving currency, and the live route of that currency to it. Test mode
// keeps its built-in sandboxes.
func stripeMockConfig(baseURL, currency string) string {
	return `# paygate bench --provider stripe-mock: live ` + currency + ` through the Stripe connector to a local stripe-mock.
providers:
  - id: stripe-mock
    kind: stripe
    mode: live
    currencies: [` + currency + `]
    base_url: ` + baseURL + `
    credentials:
      secret_key: ` + stripeMockKeyEnv + `
routes:
  live:
    ` + currency + `: [stripe-mock]
`
}

// serveArgs are the child server's flags for the mode: the configuration
// file. Nothing else: serve accepts live providers without TLS (it only
// warns, decisions.md section 16), and the connector accepts an http
// base_url on loopback.
func (s *stripeMockRun) serveArgs() []string { return []string{"--config", s.config} }

// env is the child server's variable holding the provider's key.
func (s *stripeMockRun) env() string { return stripeMockKeyEnv + "=" + stripeMockSecretKey }

// markGateway reads stripe-mock's CPU at the start of the gateway's
// measurement; endGateway at its end.
func (s *stripeMockRun) markGateway() {
	cpu, _ := s.mock.CPU()
	s.mu.Lock()
	s.cpuAtMeasure = cpu
	s.mu.Unlock()
}

func (s *stripeMockRun) endGateway() {
	cpu, _ := s.mock.CPU()
	s.mu.Lock()
	s.gatewayCPU = cpu - s.cpuAtMeasure
	s.mu.Unlock()
}

// runAlone sends stripe-mock the calls the Stripe connector makes for one
// payment, through the connector's own code, from as many clients, for as
// long (or as many payments), on the same loop as the gateway's run, and
// sets the report's providerAlone. callbackBase is the gateway's base URL,
// for the return_url every charge carries.
func (s *stripeMockRun) runAlone(ctx context.Context, f benchFlags, rep *bench.Report, callbackBase string) error {
	client := bench.NewClient(f.concurrency)
	defer client.CloseIdleConnections()
	p, err := stripe.New(stripe.Config{ID: "stripe-mock", SecretKey: stripeMockSecretKey, BaseURL: s.mock.URL, HTTPClient: client})
	if err != nil {
		return err
	}
	amount := paygate.Money{Amount: 2000, Currency: f.currency} // a multiple of 10: valid in every currency at Stripe
	var machine bench.MachineClock
	// Read at the end of the warmup, from a timer's goroutine.
	var cpuMu sync.Mutex
	var cpuStart time.Duration
	res, err := bench.RunBaseline(ctx, bench.BaselineConfig{
		Concurrency: f.concurrency, Duration: f.duration, Requests: f.requests, Warmup: f.warmup, Rate: f.rate,
		Tx: func(ctx context.Context, n int64) error {
			_, err := p.Charge(ctx, stripeBenchCharge(id.New(), amount, callbackBase, n))
			return err
		},
		AtMeasure: func() {
			machine.Mark()
			cpu, _ := s.mock.CPU()
			cpuMu.Lock()
			cpuStart = cpu
			cpuMu.Unlock()
		},
	})
	if err != nil {
		return err
	}
	rep.SetProviderAlone(benchProviderStripeMock, s.mock.URL, stripeCallsPerPayment, res)
	a := rep.ProviderAlone
	a.Machine = machine.Since()
	cpuMu.Lock()
	start := cpuStart
	cpuMu.Unlock()
	if cpu, err := s.mock.CPU(); err == nil && start > 0 {
		a.CPUSeconds = round3((cpu - start).Seconds())
	}
	s.mu.Lock()
	a.GatewayRunCPUSeconds = round3(s.gatewayCPU.Seconds())
	s.mu.Unlock()
	return nil
}

// stripeBenchCharge is a charge like the gateway's for the bench's
// declining payments: a card, billing details, the 3-D Secure return URL.
func stripeBenchCharge(paymentID string, amount paygate.Money, callbackBase string, n int64) paygate.ChargeRequest {
	return paygate.ChargeRequest{
		PaymentID: paymentID, MerchantID: "bench", Mode: paygate.ModeLive, Amount: amount,
		Card: paygate.Card{Number: "4000000000000002", ExpMonth: 12, ExpYear: now().Year() + 3, CVV: "123", HolderName: "Edsger Dijkstra"},
		Billing: &paygate.Billing{FirstName: "Edsger", LastName: "Dijkstra", Email: "edsger@example.com", Phone: "+441632960001",
			Address: "12 Analytical Row", City: "London", PostalCode: "N1 9GU", Country: "GB"},
		ThreeDSReturnURL: callbackBase + "/v1/3ds/callback/bench-" + fmt.Sprint(n),
	}
}

// stop stops stripe-mock and removes the configuration file.
func (s *stripeMockRun) stop() {
	s.mock.Stop()
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// headBuffer keeps the first few kilobytes written to it (stripe-mock's
// start-up lines; it then logs every request, which is dropped).
type headBuffer struct {
	mu  sync.Mutex
	buf []byte
}

// Write keeps what fits of p.
func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := tailSize - len(h.buf); n > 0 {
		h.buf = append(h.buf, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

func (h *headBuffer) head() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.TrimSpace(string(h.buf))
}
