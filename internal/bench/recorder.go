package bench

import (
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is the kind of one HTTP request the clients send.
type Kind int

// The kinds of requests.
const (
	KindPayment      Kind = iota // POST /v1/payments, a new payment
	KindRefund                   // POST /v1/refunds
	KindReplay                   // POST /v1/payments again with a used key and body
	KindGet                      // GET /v1/payments/{id}
	KindUnauthorized             // a request with a bad key (401 expected)
	KindToken                    // POST /v1/tokens with the public key
	numKinds
)

var kindNames = [numKinds]string{"payment", "refund", "replay", "get", "unauthorized", "token"}

// String returns the kind's name as the report shows it.
func (k Kind) String() string { return kindNames[k] }

// maxSeconds bounds the timeline: one day of per-second histograms.
const maxSeconds = 86400

// Recorder collects the measured requests: latency histograms overall, per
// kind and per second of the run, and the errors by name. Every method is
// safe for concurrent use.
type Recorder struct {
	start   time.Time // the start of the measurement (end of the warmup)
	all     Histogram
	kinds   [numKinds]Histogram
	seconds []atomic.Pointer[second]

	payments  atomic.Int64 // payment creations the gateway processed
	transport atomic.Int64

	mu              sync.Mutex
	errors          map[string]int64 // unexpected API errors by name
	expected        map[string]int64 // expected ones (CARD_DECLINED of a decline, 401 of unauthorized)
	transportSample string
}

// second is one second of the timeline.
type second struct {
	hist   Histogram
	errors atomic.Int64
}

// NewRecorder returns a recorder whose timeline starts at start.
func NewRecorder(start time.Time) *Recorder {
	return &Recorder{
		start:    start,
		seconds:  make([]atomic.Pointer[second], maxSeconds),
		errors:   map[string]int64{},
		expected: map[string]int64{},
	}
}

// Outcome is what one request came back with.
type Outcome struct {
	Status int    // HTTP status; 0 after a transport error
	Name   string // the API error name of an error answer ("" on success)
	// Expected marks an error the scenario asked for: CARD_DECLINED of a
	// declining card, UNAUTHORIZED of a bad key.
	Expected bool
	Err      error // a transport error: no answer
}

// failed reports whether the outcome counts as an error in the timeline.
func (o Outcome) failed() bool { return o.Err != nil || (o.Status >= 400 && !o.Expected) }

// Record counts one request of kind k, intended to be sent at sent, that
// took lat (from sent to the end of its answer).
func (r *Recorder) Record(k Kind, sent time.Time, lat time.Duration, o Outcome) {
	r.all.Record(lat)
	r.kinds[k].Record(lat)
	sec := r.secondAt(sent)
	if sec != nil {
		sec.hist.Record(lat)
	}
	if k == KindPayment && o.Err == nil && (o.Status < 300 || o.Name == "CARD_DECLINED") {
		r.payments.Add(1)
	}
	if !o.failed() && !o.Expected {
		return
	}
	if sec != nil && o.failed() {
		sec.errors.Add(1)
	}
	if o.Err != nil {
		r.transport.Add(1)
		r.mu.Lock()
		if r.transportSample == "" {
			r.transportSample = o.Err.Error()
		}
		r.mu.Unlock()
		return
	}
	name := o.Name
	if name == "" {
		name = "HTTP_" + strconv.Itoa(o.Status)
	}
	r.mu.Lock()
	if o.Expected {
		r.expected[name]++
	} else {
		r.errors[name]++
	}
	r.mu.Unlock()
}

func (r *Recorder) secondAt(t time.Time) *second {
	i := int(t.Sub(r.start) / time.Second)
	if i < 0 || i >= len(r.seconds) {
		return nil
	}
	p := &r.seconds[i]
	if s := p.Load(); s != nil {
		return s
	}
	p.CompareAndSwap(nil, new(second))
	return p.Load()
}

// Count returns the number of requests recorded.
func (r *Recorder) Count() int64 { return int64(r.all.Count()) }

// Payments returns the payment creations the gateway processed: answered
// with a payment (2xx) or CARD_DECLINED.
func (r *Recorder) Payments() int64 { return r.payments.Load() }

// TransportErrors returns the number of requests that got no answer, and
// the first such error's text.
func (r *Recorder) TransportErrors() (int64, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.transport.Load(), r.transportSample
}

// Errors returns copies of the unexpected and the expected error counts by
// name.
func (r *Recorder) Errors() (unexpected, expected map[string]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	unexpected, expected = make(map[string]int64, len(r.errors)), make(map[string]int64, len(r.expected))
	for k, v := range r.errors {
		unexpected[k] = v
	}
	for k, v := range r.expected {
		expected[k] = v
	}
	return unexpected, expected
}

// ErrorCount returns the number of unexpected errors, transport errors
// included.
func (r *Recorder) ErrorCount() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.transport.Load()
	for _, v := range r.errors {
		n += v
	}
	return n
}

// All returns the histogram of every recorded request.
func (r *Recorder) All() *Histogram { return &r.all }

// Kind returns the histogram of one kind of request.
func (r *Recorder) Kind(k Kind) *Histogram { return &r.kinds[k] }

// SecondStats is one second of the timeline.
type SecondStats struct {
	Second   int           // from the start of the measurement
	Requests uint64        // requests intended to be sent in that second
	Errors   int64         // unexpected errors among them
	P50, P99 time.Duration // their latency percentiles
}

// Timeline returns the seconds that saw requests, in order.
func (r *Recorder) Timeline() []SecondStats {
	var out []SecondStats
	for i := range r.seconds {
		s := r.seconds[i].Load()
		if s == nil {
			continue
		}
		out = append(out, SecondStats{
			Second: i, Requests: s.hist.Count(), Errors: s.errors.Load(),
			P50: s.hist.Quantile(0.50), P99: s.hist.Quantile(0.99),
		})
	}
	return out
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
