// Package receiver is an OTLP/HTTP trace receiver on a loopback port: the
// collector that paygate's tests and `paygate bench --traces` export to. It
// decodes each ExportTraceServiceRequest (protobuf, gzip or not), counts its
// spans, and keeps them when asked to, for a test to read.
package receiver

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// maxBody bounds one export request (the SDK's batches are far smaller).
const maxBody = 64 << 20

// Span is one received span, flattened for tests.
type Span struct {
	TraceID, SpanID, ParentSpanID string // lower-case hex; ParentSpanID "" for a root
	Name                          string
	Kind                          tracepb.Span_SpanKind
	// Attributes are the span's attributes, each value as text.
	Attributes map[string]string
	// Failed is set when the span's status is Error.
	Failed bool
	// Service is the resource's service.name.
	Service string
}

// Receiver is a running OTLP/HTTP receiver.
type Receiver struct {
	// URL is the base URL to give an exporter as OTEL_EXPORTER_OTLP_ENDPOINT
	// (spans are posted to URL + "/v1/traces").
	URL string

	keep     bool
	srv      *http.Server
	done     chan struct{}
	spans    atomic.Int64
	requests atomic.Int64
	failures atomic.Int64

	mu   sync.Mutex
	kept []Span
	seen chan struct{} // signalled (coalesced) after each request that kept spans
}

// Start listens on a free loopback port and serves until Close. With keep
// the spans are kept for Spans; without, only counted.
func Start(keep bool) (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("receiver: listen: %w", err)
	}
	r := &Receiver{URL: "http://" + ln.Addr().String(), keep: keep, done: make(chan struct{}), seen: make(chan struct{}, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.export)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(ln)
	}()
	return r, nil
}

// Close stops the receiver and waits for its server to return.
func (r *Receiver) Close() error {
	err := r.srv.Close()
	<-r.done
	return err
}

// SpanCount is how many spans were received.
func (r *Receiver) SpanCount() int64 { return r.spans.Load() }

// Requests is how many export requests were received.
func (r *Receiver) Requests() int64 { return r.requests.Load() }

// Failures is how many export requests could not be read.
func (r *Receiver) Failures() int64 { return r.failures.Load() }

// Spans returns a copy of the kept spans, in the order received.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.kept...)
}

// WaitFor returns the kept spans once ok accepts them, or an error when ctx
// ends first (with the spans kept so far, for the message).
func (r *Receiver) WaitFor(ctx context.Context, ok func([]Span) bool) ([]Span, error) {
	for {
		spans := r.Spans()
		if ok(spans) {
			return spans, nil
		}
		select {
		case <-r.seen:
		case <-ctx.Done():
			return r.Spans(), ctx.Err()
		}
	}
}

func (r *Receiver) export(w http.ResponseWriter, req *http.Request) {
	r.requests.Add(1)
	msg, err := decode(req)
	if err != nil {
		r.failures.Add(1)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n := 0
	var spans []Span
	for _, rs := range msg.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
			if !r.keep {
				continue
			}
			for _, s := range ss.GetSpans() {
				spans = append(spans, flatten(s, service))
			}
		}
	}
	r.spans.Add(int64(n))
	if r.keep {
		r.mu.Lock()
		r.kept = append(r.kept, spans...)
		r.mu.Unlock()
		select {
		case r.seen <- struct{}{}:
		default:
		}
	}
	body, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(body)
}

// decode reads an export request's body.
func decode(req *http.Request) (*coltracepb.ExportTraceServiceRequest, error) {
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		return nil, fmt.Errorf("unsupported Content-Type %q: only application/x-protobuf", ct)
	}
	var body io.Reader = http.MaxBytesReader(nil, req.Body, maxBody)
	switch req.Header.Get("Content-Encoding") {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		body = io.LimitReader(zr, maxBody)
	default:
		return nil, errors.New("unsupported Content-Encoding")
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	msg := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(raw, msg); err != nil {
		return nil, err
	}
	return msg, nil
}

func flatten(s *tracepb.Span, service string) Span {
	out := Span{
		TraceID:    hex.EncodeToString(s.GetTraceId()),
		SpanID:     hex.EncodeToString(s.GetSpanId()),
		Name:       s.GetName(),
		Kind:       s.GetKind(),
		Attributes: map[string]string{},
		Failed:     s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
		Service:    service,
	}
	if p := s.GetParentSpanId(); len(p) > 0 {
		out.ParentSpanID = hex.EncodeToString(p)
	}
	for _, kv := range s.GetAttributes() {
		out.Attributes[kv.GetKey()] = valueText(kv.GetValue())
	}
	return out
}

// valueText renders an attribute's value as text.
func valueText(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	}
	return fmt.Sprint(v.GetValue())
}
