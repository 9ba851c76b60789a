package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/bench"
)

// TestBenchMetrics: bench --metrics runs the child with its metrics on and
// scrapes them through the run; every scrape is answered.
func TestBenchMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and loads it for a few seconds")
	}
	rep := benchJSON(t, "--duration", "2s", "--warmup", "200ms", "--concurrency", "4", "--metrics")
	m := rep.Metrics
	if m == nil || m.Scrapes < 2 || m.Failures != 0 || m.Series < 100 || m.Bytes <= 0 || m.MeanMs <= 0 || m.IntervalSeconds != 1 {
		t.Fatalf("metrics %+v", m)
	}
	if rep.Payments <= 0 || rep.TransportErrors != 0 || len(rep.Errors) != 0 {
		t.Errorf("report %+v", rep)
	}

	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"bench", "--self-test", "--metrics"}, func(string) string { return "" }, &stdout, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), "--metrics needs the tool's own server") {
		t.Errorf("bench --self-test --metrics: exit %d, stderr %q", code, stderr.String())
	}
}

// benchJSON runs bench with args and --json in the test process (the child
// server is this binary: benchChildEnv) and returns its report; a non-zero
// exit fails the test.
func benchJSON(t *testing.T, args ...string) bench.Report {
	t.Helper()
	t.Setenv(benchChildEnv, "1")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append(append([]string{"bench"}, args...), "--json"),
		func(string) string { return "" }, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep bench.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	return rep
}
