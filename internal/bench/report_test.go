package bench

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// sampleResult is a recorded run with known contents.
func sampleResult() *Result {
	start := time.Now()
	rec := NewRecorder(start)
	for i := range 100 {
		at := start.Add(time.Duration(i) * 30 * time.Millisecond) // over 3 seconds
		rec.Record(KindPayment, at, time.Duration(i+1)*time.Millisecond, Outcome{Status: 201})
	}
	rec.Record(KindPayment, start, time.Millisecond, Outcome{Status: 400, Name: "CARD_DECLINED", Expected: true})
	rec.Record(KindRefund, start, time.Millisecond, Outcome{Status: 502, Name: "PROVIDER_ERROR"})
	rec.Record(KindGet, start, time.Millisecond, Outcome{Err: errors.New("connection reset")})
	return &Result{Rec: rec, Elapsed: 2 * time.Second, Operations: 102}
}

func TestReportJSONShape(t *testing.T) {
	rep := &Report{Target: "sqlite", URL: "http://127.0.0.1:1", Loop: "closed", Concurrency: 4, Mix: Mix{OpApprove: 1}.Map()}
	rep.Fill(sampleResult())
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Count(buf.String(), "\n") != 1 {
		t.Fatalf("not one line: %q", buf.String())
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"target", "url", "loop", "rate", "concurrency", "mix", "warmupSeconds", "elapsedSeconds",
		"interrupted", "operations", "missed", "requests", "requestsPerSecond", "payments", "paymentsPerSecond",
		"latency", "kinds", "errors", "expected", "transportErrors", "transportError", "clientCpuSeconds",
		"server", "baseline", "provider", "providerAlone", "timeline"} {
		if _, ok := m[k]; !ok {
			t.Errorf("the JSON report has no %q", k)
		}
	}
	if m["server"] != nil || m["baseline"] != nil || m["providerAlone"] != nil {
		t.Errorf("server %v baseline %v providerAlone %v, want null when unknown", m["server"], m["baseline"], m["providerAlone"])
	}
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Requests != 103 || back.RequestsPerSecond != 51.5 || back.Payments != 101 || back.PaymentsPerSecond != 50.5 {
		t.Errorf("requests %d (%v/s) payments %d (%v/s)", back.Requests, back.RequestsPerSecond, back.Payments, back.PaymentsPerSecond)
	}
	if back.Errors["PROVIDER_ERROR"] != 1 || back.Expected["CARD_DECLINED"] != 1 || back.TransportErrors != 1 || back.TransportError != "connection reset" {
		t.Errorf("errors %v expected %v transport %d %q", back.Errors, back.Expected, back.TransportErrors, back.TransportError)
	}
	if l := back.Kinds["payment"]; l.Count != 101 || l.Max != 100 || l.P50 < 49 || l.P50 > 51 {
		t.Errorf("payment latency %+v", l)
	}
	if len(back.Timeline) != 3 || back.Timeline[0].Requests != 37 {
		t.Errorf("timeline %+v", back.Timeline)
	}
	rep.Server = &ServerStats{CPUSeconds: 1.5, PeakRSSBytes: 42 << 20, RSSBytes: []int64{1, 2}}
	buf.Reset()
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var withServer struct {
		Server map[string]any `json:"server"`
	}
	if err := json.Unmarshal(buf.Bytes(), &withServer); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"cpuSeconds", "cpuPerRequestMs", "cores", "peakRssBytes", "rssBytes"} {
		if _, ok := withServer.Server[k]; !ok {
			t.Errorf("server has no %q", k)
		}
	}
}

func TestReportText(t *testing.T) {
	rep := &Report{Target: "postgres", Loop: "open", Rate: 500, Concurrency: 32, Mix: Mix{OpApprove: 9, OpDecline: 1}.Map()}
	res := sampleResult()
	rep.Fill(res)
	rep.SetBaseline(res)
	var buf bytes.Buffer
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"open loop at 500 operations/s", "approve=9,decline=1", "Requests:", "51.5/s",
		"PROVIDER_ERROR 1", "CARD_DECLINED 1", "connection reset", "Server CPU:", "unknown", "Ratio:"} {
		if !strings.Contains(out, want) {
			t.Errorf("the text report lacks %q:\n%s", want, out)
		}
	}
}

// TestReportProviderAlone: the provider measured alone, its rates (two
// calls per payment) and the ratio, in JSON and text.
func TestReportProviderAlone(t *testing.T) {
	rep := &Report{Target: "sqlite", Provider: "stripe-mock", Concurrency: 4, Mix: Mix{OpDecline: 1}.Map()}
	rep.Fill(sampleResult()) // 50.5 payments/s
	start := time.Now()
	rec := NewRecorder(start)
	for range 200 {
		rec.Record(KindPayment, start, 2*time.Millisecond, Outcome{Status: 201})
	}
	rec.Record(KindPayment, start, time.Millisecond, Outcome{Status: 500, Name: "BASELINE_FAILED"})
	rep.SetProviderAlone("stripe-mock", "http://127.0.0.1:1", 2, &Result{Rec: rec, Elapsed: 2 * time.Second, ErrorSample: "boom"})
	a := rep.ProviderAlone
	if a.Payments != 200 || a.PaymentsPerSecond != 100 || a.RequestsPerSecond != 200 || a.Errors != 1 || a.Error != "boom" || a.Ratio != 0.505 {
		t.Fatalf("providerAlone %+v", a)
	}
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var m struct {
		Provider      string         `json:"provider"`
		ProviderAlone map[string]any `json:"providerAlone"`
	}
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m.Provider != "stripe-mock" {
		t.Errorf("provider %q", m.Provider)
	}
	for _, k := range []string{"provider", "url", "callsPerPayment", "elapsedSeconds", "payments", "paymentsPerSecond", "requestsPerSecond",
		"latency", "errors", "missed", "ratio", "cpuSeconds", "gatewayRunCpuSeconds", "machine"} {
		if _, ok := m.ProviderAlone[k]; !ok {
			t.Errorf("providerAlone has no %q", k)
		}
	}
	buf.Reset()
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Provider:", "stripe-mock alone:", "200 payments (100.0/s; 200.0 requests/s, 2 per payment)",
		"stripe-mock ratio:", "0.505"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the text report lacks %q:\n%s", want, buf.String())
		}
	}
}

// checkXML parses the whole document and returns the names of its
// elements.
func checkXML(t *testing.T, doc []byte) map[string]int {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	names := map[string]int{}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed: %v\n%s", err, doc)
		}
		if se, ok := tok.(xml.StartElement); ok {
			names[se.Name.Local]++
		}
	}
	return names
}

func TestSVGWellFormed(t *testing.T) {
	rep := &Report{Target: `sqlite <&> "quoted"`, Concurrency: 2}
	res := sampleResult()
	rep.Fill(res)
	var buf bytes.Buffer
	if err := WriteSVG(&buf, rep, res.Rec.All()); err != nil {
		t.Fatal(err)
	}
	names := checkXML(t, buf.Bytes())
	if names["svg"] != 1 || names["polyline"] != 3 {
		t.Errorf("elements %v, want one svg and three curves (p50, p99, distribution)", names)
	}
	// With the server's memory, a third panel.
	rep.Server = &ServerStats{RSSBytes: []int64{30 << 20, 31 << 20, 31 << 20}}
	buf.Reset()
	if err := WriteSVG(&buf, rep, res.Rec.All()); err != nil {
		t.Fatal(err)
	}
	if names := checkXML(t, buf.Bytes()); names["polyline"] != 4 {
		t.Errorf("elements %v, want four curves with the memory panel", names)
	}
	// An empty run still gives a valid document.
	empty := &Report{}
	buf.Reset()
	if err := WriteSVG(&buf, empty, &Histogram{}); err != nil {
		t.Fatal(err)
	}
	checkXML(t, buf.Bytes())
}

func TestParseStatCPU(t *testing.T) {
	// The command name may hold spaces and parentheses.
	stat := "4242 (pay gate) (x)) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 12 0 100 0 0\n"
	got, err := parseStatCPU([]byte(stat))
	if err != nil || got != 3250*time.Millisecond {
		t.Fatalf("parseStatCPU = %v, %v; want 3.25s", got, err)
	}
	for _, bad := range []string{"", "42 (x", "42 (x) S 1 2"} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("parseStatCPU(%q) accepted", bad)
		}
	}
}
