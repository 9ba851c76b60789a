package main

import (
	"strings"
	"testing"
)

// TestBenchTraces runs bench --traces briefly: the child server exports to
// the tool's receiver, which counts the spans of every payment (a server
// span, store spans, the provider's), and a run without --traces gets no
// OTEL_ variable of the tool's environment.
func TestBenchTraces(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and loads it for a second")
	}
	rep := benchJSON(t, "--duration", "1s", "--warmup", "200ms", "--concurrency", "4", "--traces")
	if rep.Payments <= 0 || rep.TransportErrors != 0 || len(rep.Errors) != 0 {
		t.Fatalf("report %+v", rep)
	}
	// Every measured request's spans (a server span, store spans, the
	// provider's) reach the receiver by the server's stop, which flushes
	// them; how many arrived within the measurement depends on batching
	// (a batch leaves when full or after five seconds), so it is only
	// bounded here.
	tr := rep.Traces
	if tr == nil || tr.TotalSpans < 3*rep.Requests || tr.Spans < 0 || tr.Spans > tr.TotalSpans || tr.ExportRequests <= 0 || tr.Failures != 0 {
		t.Fatalf("traces %+v for %d requests", tr, rep.Requests)
	}
}

func TestBenchTracesUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"bench", "--traces", "--self-test"},
		{"bench", "--traces", "--url", "http://127.0.0.1:1", "--key", "k"},
	} {
		cliRun(t, nil, args...).mustFail(t, exitUsage, "--traces needs the tool's own server")
	}
}

func TestServerEnvDropsOTel(t *testing.T) {
	t.Parallel()
	env, err := serverEnv([]string{"HOME=/h", "OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318", "OTEL_TRACES_SAMPLER=always_off"}, false)
	if err != nil || strings.Join(env, " ") != "HOME=/h" {
		t.Fatalf("serverEnv = %v, %v", env, err)
	}
}
