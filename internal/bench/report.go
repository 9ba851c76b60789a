package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what `paygate bench` prints: as text, or with --json as one
// JSON object with these fields. Latencies are in milliseconds, rates per
// second, memory in bytes. A field the run cannot know is null.
type Report struct {
	// Target is what was measured: "sqlite", "postgres", "url" (a running
	// server) or "self-test" (a trivial in-process server).
	Target string `json:"target"`
	URL    string `json:"url"`
	// Provider is what the gateway's payments went to: "sandbox" (the
	// built-in test-mode sandboxes, without latency), "stripe-mock" (live
	// mode through the Stripe connector to a local stripe-mock), "unknown"
	// (--url) or "none" (--self-test).
	Provider string `json:"provider"`
	// Loop is "closed" (each client sends its next request when one ends)
	// or "open" (operations start at Rate per second).
	Loop        string         `json:"loop"`
	Rate        float64        `json:"rate"`
	Concurrency int            `json:"concurrency"`
	Mix         map[string]int `json:"mix"`
	// WarmupSeconds ran before the measurement; ElapsedSeconds is the
	// measurement window.
	WarmupSeconds  float64 `json:"warmupSeconds"`
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	// Interrupted is true when the run was stopped early (SIGINT).
	Interrupted bool `json:"interrupted"`
	// Operations measured (one operation is one request, or two for a
	// refund: create then refund).
	Operations int64 `json:"operations"`
	// Missed counts operations of an open loop that were due but could not
	// be sent before the end because every client was busy.
	Missed            int64   `json:"missed"`
	Requests          int64   `json:"requests"`
	RequestsPerSecond float64 `json:"requestsPerSecond"`
	// Payments is the number of payment creations processed (answered 201
	// or CARD_DECLINED), and PaymentsPerSecond their rate.
	Payments          int64   `json:"payments"`
	PaymentsPerSecond float64 `json:"paymentsPerSecond"`
	// Latency of every measured request; Kinds per kind of request
	// (payment, refund, replay, get, unauthorized).
	Latency Latency            `json:"latency"`
	Kinds   map[string]Latency `json:"kinds"`
	// Errors counts unexpected error answers by API error name (HTTP_<status>
	// when the body names none); Expected counts the answers the mix asked
	// for (CARD_DECLINED of a declining card, UNAUTHORIZED of a bad key).
	Errors   map[string]int64 `json:"errors"`
	Expected map[string]int64 `json:"expected"`
	// TransportErrors counts requests that got no answer; TransportError is
	// the first one's text.
	TransportErrors int64  `json:"transportErrors"`
	TransportError  string `json:"transportError,omitempty"`
	// ClientCPUSeconds is the CPU the load tool used during the
	// measurement (the whole process: with --self-test, the trivial server
	// too).
	ClientCPUSeconds float64 `json:"clientCpuSeconds"`
	// Server is null when the server is not the tool's child (--url).
	Server *ServerStats `json:"server"`
	// Machine is what all the machine's CPUs did during the measurement
	// (null where /proc/stat cannot be read).
	Machine *Machine `json:"machine"`
	// Baseline is null without --baseline.
	Baseline *Baseline `json:"baseline"`
	// ProviderAlone is null unless the provider is stripe-mock.
	ProviderAlone *ProviderAlone `json:"providerAlone"`
	// Metrics is null without --metrics.
	Metrics *Scrapes `json:"metrics"`
	// Traces is null without --traces.
	Traces *TraceStats `json:"traces"`
	// Timeline has one entry per second of the measurement.
	Timeline []Second `json:"timeline"`
	// CardTest is null unless the mix has cardtest (cardtest.go).
	CardTest *CardTest `json:"cardTest"`
}

// Latency summarizes a histogram, in milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	Min   float64 `json:"min"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

// ServerStats is what the tool read of its child server in /proc.
type ServerStats struct {
	// CPUSeconds is user + system CPU during the measurement.
	CPUSeconds float64 `json:"cpuSeconds"`
	// CPUPerRequestMs is CPUSeconds per measured request, in milliseconds.
	CPUPerRequestMs float64 `json:"cpuPerRequestMs"`
	// Cores is the average number of cores busy: CPUSeconds / elapsed.
	Cores float64 `json:"cores"`
	// PeakRSSBytes is the peak resident memory over the server's life.
	PeakRSSBytes int64 `json:"peakRssBytes"`
	// RSSBytes is the resident memory sampled once a second from the
	// server's start.
	RSSBytes []int64 `json:"rssBytes"`
}

// TraceStats is what the OTLP receiver of --traces got from the server.
type TraceStats struct {
	// Spans were received during the measurement; SpansPerRequest is Spans
	// per measured request. The server sends a batch when it holds 512
	// spans or five seconds after its first: at a steady rate the lag at
	// both ends of the measurement cancels out, but a run of a few
	// seconds at a low rate may count none (TotalSpans has them).
	Spans           int64   `json:"spans"`
	SpansPerRequest float64 `json:"spansPerRequest"`
	// TotalSpans were received over the server's life (its warmup, the
	// pool's payments and the flush at its stop included), in
	// ExportRequests requests, of which Failures could not be read.
	TotalSpans     int64 `json:"totalSpans"`
	ExportRequests int64 `json:"exportRequests"`
	Failures       int64 `json:"failures"`
}

// Baseline is the database-only run of --baseline.
type Baseline struct {
	Transactions   int64   `json:"transactions"`
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	TxPerSecond    float64 `json:"txPerSecond"`
	Latency        Latency `json:"latency"`
	Errors         int64   `json:"errors"`
	Error          string  `json:"error,omitempty"`
	// Missed counts the transactions of an open loop (--rate) that were
	// due but could not start before the end, every caller being busy.
	Missed int64 `json:"missed"`
	// Ratio is the gateway's paymentsPerSecond / txPerSecond.
	Ratio float64 `json:"ratio"`
	// Machine is what the machine's CPUs did during the baseline's
	// measurement.
	Machine *Machine `json:"machine"`
}

// ProviderAlone is the provider measured alone in the same run: the calls
// the connector makes for one payment, sent straight to the provider by the
// same number of clients, for the same duration (or number) and loop, after
// the gateway's run.
type ProviderAlone struct {
	Provider string `json:"provider"` // "stripe-mock"
	URL      string `json:"url"`
	// CallsPerPayment is the number of requests of one payment (Stripe:
	// payment_methods, then payment_intents with confirm=true).
	CallsPerPayment int     `json:"callsPerPayment"`
	ElapsedSeconds  float64 `json:"elapsedSeconds"`
	// Payments is the number of payments whose calls all got an answer;
	// PaymentsPerSecond their rate, RequestsPerSecond the calls' rate
	// (CallsPerPayment per payment).
	Payments          int64   `json:"payments"`
	PaymentsPerSecond float64 `json:"paymentsPerSecond"`
	RequestsPerSecond float64 `json:"requestsPerSecond"`
	// Latency of one payment: its calls, one after the other.
	Latency Latency `json:"latency"`
	Errors  int64   `json:"errors"`
	Error   string  `json:"error,omitempty"`
	Missed  int64   `json:"missed"`
	// Ratio is the gateway's paymentsPerSecond / this paymentsPerSecond.
	Ratio float64 `json:"ratio"`
	// CPUSeconds is the provider process's CPU during this measurement,
	// GatewayRunCPUSeconds during the gateway's.
	CPUSeconds           float64 `json:"cpuSeconds"`
	GatewayRunCPUSeconds float64 `json:"gatewayRunCpuSeconds"`
	// Machine is what the machine's CPUs did during this measurement.
	Machine *Machine `json:"machine"`
}

// Second is one second of the timeline: requests intended to be sent in
// it, their unexpected errors and latency percentiles.
type Second struct {
	Second   int     `json:"second"`
	Requests uint64  `json:"requests"`
	Errors   int64   `json:"errors"`
	P50      float64 `json:"p50"`
	P99      float64 `json:"p99"`
}

// ms converts a duration to milliseconds, rounded to the microsecond.
func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// summarize returns the Latency of h.
func summarize(h *Histogram) Latency {
	return Latency{
		Count: int64(h.Count()), Mean: ms(h.Mean()), Min: ms(h.Min()),
		P50: ms(h.Quantile(0.50)), P90: ms(h.Quantile(0.90)), P99: ms(h.Quantile(0.99)),
		P999: ms(h.Quantile(0.999)), Max: ms(h.Max()),
	}
}

// perSecond divides n by a duration in seconds; 0 for an empty window.
func perSecond(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return math.Round(float64(n)/d.Seconds()*10) / 10
}

// Fill sets the report's measured fields from a load run.
func (rep *Report) Fill(res *Result) {
	rec := res.Rec
	rep.ElapsedSeconds = math.Round(res.Elapsed.Seconds()*1000) / 1000
	rep.Interrupted = res.Interrupted
	rep.Operations = res.Operations
	rep.Missed = res.Missed
	rep.Requests = rec.Count()
	rep.RequestsPerSecond = perSecond(rep.Requests, res.Elapsed)
	rep.Payments = rec.Payments()
	rep.PaymentsPerSecond = perSecond(rep.Payments, res.Elapsed)
	rep.Latency = summarize(rec.All())
	rep.Kinds = map[string]Latency{}
	for k := range numKinds {
		if h := rec.Kind(k); h.Count() > 0 {
			rep.Kinds[k.String()] = summarize(h)
		}
	}
	rep.Errors, rep.Expected = rec.Errors()
	rep.CardTest = res.CardTest
	rep.TransportErrors, rep.TransportError = rec.TransportErrors()
	rep.Timeline = []Second{}
	for _, s := range rec.Timeline() {
		rep.Timeline = append(rep.Timeline, Second{Second: s.Second, Requests: s.Requests, Errors: s.Errors, P50: ms(s.P50), P99: ms(s.P99)})
	}
}

// SetBaseline sets the baseline from a database-only run, and the ratio.
func (rep *Report) SetBaseline(res *Result) {
	b := &Baseline{
		Transactions:   res.Rec.Count(),
		ElapsedSeconds: math.Round(res.Elapsed.Seconds()*1000) / 1000,
		Latency:        summarize(res.Rec.All()),
		Errors:         res.Rec.ErrorCount(),
		Error:          res.ErrorSample,
		Missed:         res.Missed,
	}
	b.TxPerSecond = perSecond(b.Transactions-b.Errors, res.Elapsed)
	if b.TxPerSecond > 0 {
		b.Ratio = math.Round(rep.PaymentsPerSecond/b.TxPerSecond*1000) / 1000
	}
	rep.Baseline = b
}

// SetProviderAlone sets the provider-alone run, of calls requests per
// payment, and the ratio.
func (rep *Report) SetProviderAlone(provider, url string, calls int, res *Result) {
	a := &ProviderAlone{
		Provider: provider, URL: url, CallsPerPayment: calls,
		ElapsedSeconds: math.Round(res.Elapsed.Seconds()*1000) / 1000,
		Latency:        summarize(res.Rec.All()),
		Errors:         res.Rec.ErrorCount(),
		Error:          res.ErrorSample,
		Missed:         res.Missed,
	}
	a.Payments = res.Rec.Count() - a.Errors
	a.PaymentsPerSecond = perSecond(a.Payments, res.Elapsed)
	a.RequestsPerSecond = perSecond(a.Payments*int64(calls), res.Elapsed)
	if a.PaymentsPerSecond > 0 {
		a.Ratio = math.Round(rep.PaymentsPerSecond/a.PaymentsPerSecond*1000) / 1000
	}
	rep.ProviderAlone = a
}

// WriteJSON writes the report as one line of JSON.
func (rep *Report) WriteJSON(w io.Writer) error {
	b, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("encode the report: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// WriteText writes the report for a person.
func (rep *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	loop := "closed loop"
	if rep.Loop == "open" {
		loop = fmt.Sprintf("open loop at %g operations/s", rep.Rate)
	}
	p("Target:\t%s %s", rep.Target, rep.URL)
	if rep.Provider != "" && rep.Provider != "none" {
		p("Provider:\t%s", rep.Provider)
	}
	p("Load:\t%d clients, %s, mix %s", rep.Concurrency, loop, mixText(rep.Mix))
	p("Measured:\t%.1fs after %.1fs of warmup%s", rep.ElapsedSeconds, rep.WarmupSeconds, map[bool]string{true: " (interrupted)"}[rep.Interrupted])
	p("Requests:\t%d (%.1f/s)", rep.Requests, rep.RequestsPerSecond)
	p("Payments:\t%d (%.1f/s)", rep.Payments, rep.PaymentsPerSecond)
	if rep.Missed > 0 {
		p("Missed:\t%d operations due before the end could not be sent (every client busy)", rep.Missed)
	}
	p("Latency (ms):\tcount\tmean\tp50\tp90\tp99\tp99.9\tmax")
	row := func(name string, l Latency) {
		p("  %s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f", name, l.Count, l.Mean, l.P50, l.P90, l.P99, l.P999, l.Max)
	}
	row("all", rep.Latency)
	for k := range numKinds {
		if l, ok := rep.Kinds[k.String()]; ok {
			row(k.String(), l)
		}
	}
	p("Errors:\t%s", countsText(rep.Errors))
	p("Expected errors:\t%s", countsText(rep.Expected))
	if ct := rep.CardTest; ct != nil {
		p("Card testing:\t%d attacker attempts, %d reached a provider (%.2f%%), %d blocked",
			ct.AttackerAttempts, ct.AttackerReached, 100*ct.ReachedShare, ct.AttackerBlocked)
		p("Legitimate:\t%d payments, %d blocked by the guard (%.2f%%)", ct.Legitimate, ct.LegitimateBlocked, 100*ct.BlockedShare)
		p("Warmup:\t%d attacker attempts, %d reached a provider", ct.WarmupAttempts, ct.WarmupReached)
	}
	te := fmt.Sprintf("%d", rep.TransportErrors)
	if rep.TransportError != "" {
		te += " (first: " + rep.TransportError + ")"
	}
	p("Transport errors:\t%s", te)
	p("Tool CPU:\t%.2fs", rep.ClientCPUSeconds)
	if s := rep.Server; s != nil {
		p("Server CPU:\t%.2fs (%.3f ms per request, %.2f cores)", s.CPUSeconds, s.CPUPerRequestMs, s.Cores)
		mem := fmt.Sprintf("peak RSS %.1f MB", float64(s.PeakRSSBytes)/(1<<20))
		if n := len(s.RSSBytes); n > 1 {
			mem += fmt.Sprintf("; RSS %.1f MB after 1 s, %.1f MB after %d s", float64(s.RSSBytes[0])/(1<<20), float64(s.RSSBytes[n-1])/(1<<20), n)
		}
		p("Server memory:\t%s", mem)
	} else {
		p("Server CPU:\tunknown (not the tool's child)")
		p("Server memory:\tunknown")
	}
	if m := rep.Machine; m != nil {
		p("Machine:\t%s", m.text())
	}
	if m := rep.Metrics; m != nil {
		p("Metrics:\t%d scrapes every %gs (%d failed), %d series, %d bytes, mean %.3f ms, max %.3f ms", m.Scrapes, m.IntervalSeconds, m.Failures, m.Series, m.Bytes, m.MeanMs, m.MaxMs)
		if m.Error != "" {
			p("Metrics error:\t%s", m.Error)
		}
	}
	if tr := rep.Traces; tr != nil {
		p("Traces:\t%d spans exported during the measurement (%.2f per request); %d in all, in %d export requests, %d unreadable",
			tr.Spans, tr.SpansPerRequest, tr.TotalSpans, tr.ExportRequests, tr.Failures)
	}
	if b := rep.Baseline; b != nil {
		p("Baseline:\t%d database-only transactions (%.1f/s), p50 %.3f ms, p99 %.3f ms, %d errors", b.Transactions, b.TxPerSecond, b.Latency.P50, b.Latency.P99, b.Errors)
		if b.Missed > 0 {
			p("Baseline missed:\t%d transactions due could not start (the database did not keep up)", b.Missed)
		}
		if b.Error != "" {
			p("Baseline error:\t%s", b.Error)
		}
		if m := b.Machine; m != nil {
			p("Baseline machine:\t%s", m.text())
		}
		p("Ratio:\t%.3f (gateway payments/s ÷ baseline tx/s)", b.Ratio)
	}
	if a := rep.ProviderAlone; a != nil {
		p("%s alone:\t%d payments (%.1f/s; %.1f requests/s, %d per payment), p50 %.3f ms, p99 %.3f ms, %d errors",
			a.Provider, a.Payments, a.PaymentsPerSecond, a.RequestsPerSecond, a.CallsPerPayment, a.Latency.P50, a.Latency.P99, a.Errors)
		if a.Missed > 0 {
			p("%s alone missed:\t%d payments due could not start (every client busy)", a.Provider, a.Missed)
		}
		if a.Error != "" {
			p("%s alone error:\t%s", a.Provider, a.Error)
		}
		p("%s CPU:\t%.2fs alone, %.2fs during the gateway's run", a.Provider, a.CPUSeconds, a.GatewayRunCPUSeconds)
		if m := a.Machine; m != nil {
			p("%s alone machine:\t%s", a.Provider, m.text())
		}
		p("%s ratio:\t%.3f (gateway payments/s ÷ %s alone payments/s)", a.Provider, a.Ratio, a.Provider)
	}
	return tw.Flush()
}

func countsText(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func mixText(m map[string]int) string {
	var parts []string
	for _, n := range opNames {
		if w, ok := m[n]; ok {
			parts = append(parts, fmt.Sprintf("%s=%d", n, w))
		}
	}
	return strings.Join(parts, ",")
}
