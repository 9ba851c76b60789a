package main

import (
	"github.com/paygate/paygate/internal/bench"
	"github.com/paygate/paygate/internal/tracing/receiver"
)

// benchTraces is the OTLP/HTTP receiver of bench --traces: the child server
// exports its traces to it (OTEL_EXPORTER_OTLP_ENDPOINT), on loopback, and
// it counts the spans and drops them, so that a run measures what
// exporting costs the server and nothing of a collector's work but reading
// the requests. A nil *benchTraces is a run without traces: every method
// does nothing.
type benchTraces struct {
	recv           *receiver.Receiver
	atStart, atEnd int64
}

// startBenchTraces starts the receiver when on.
func startBenchTraces(on bool) (*benchTraces, error) {
	if !on {
		return nil, nil
	}
	r, err := receiver.Start(false)
	if err != nil {
		return nil, err
	}
	return &benchTraces{recv: r}, nil
}

// env is what the child's environment gets: the receiver as its endpoint.
func (t *benchTraces) env() []string {
	if t == nil {
		return nil
	}
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + t.recv.URL}
}

// markStart and markEnd count the spans received by the measurement's
// start and end. The server sends spans in batches (bench.TraceStats says
// when); at a steady rate the lag at both ends cancels out.
func (t *benchTraces) markStart() {
	if t != nil {
		t.atStart = t.recv.SpanCount()
	}
}

func (t *benchTraces) markEnd() {
	if t != nil {
		t.atEnd = t.recv.SpanCount()
	}
}

// fill adds the counts to the report, once the server has stopped (and
// flushed what it had buffered).
func (t *benchTraces) fill(rep *bench.Report) {
	if t == nil {
		return
	}
	s := &bench.TraceStats{
		Spans: t.atEnd - t.atStart, TotalSpans: t.recv.SpanCount(),
		ExportRequests: t.recv.Requests(), Failures: t.recv.Failures(),
	}
	if rep.Requests > 0 {
		s.SpansPerRequest = round3(float64(s.Spans) / float64(rep.Requests))
	}
	rep.Traces = s
}

// close stops the receiver.
func (t *benchTraces) close() {
	if t != nil {
		_ = t.recv.Close()
	}
}
