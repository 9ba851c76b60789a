package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/id"
)

// TestLogFormat checks how --log-format is resolved: as given, else JSON
// unless stderr is a terminal (a file, a pipe or a buffer is not).
func TestLogFormat(t *testing.T) {
	t.Parallel()
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, c := range []struct {
		name   string
		w      io.Writer
		format string
		want   string
	}{
		{"BufferDefault", &bytes.Buffer{}, "", "json"},
		{"FileDefault", f, "", "json"},
		{"PipeDefault", w, "", "json"},
		{"TextGiven", f, "text", "text"},
		{"JSONGiven", f, "json", "json"},
	} {
		var out bytes.Buffer
		got := logFormat(c.w, c.format)
		newLogger(&out, "info", got).Info("hello", "k", "v")
		if got != c.want {
			t.Errorf("%s: format %q, want %q", c.name, got, c.want)
		}
		if isJSON := json.Valid(bytes.TrimSpace(out.Bytes())); isJSON != (c.want == "json") || !strings.Contains(out.String(), "hello") {
			t.Errorf("%s: the %s logger wrote %q", c.name, c.want, out.String())
		}
	}
}

// TestServeTextLog runs serve with --log-format text and checks one line
// per request with the fields of decisions §15, as key=value pairs.
func TestServeTextLog(t *testing.T) {
	t.Parallel()
	db := sqliteURL(t)
	m := newMerchant(t, db, "Text log")
	s := startServe(t, nil, "serve", "--database-url", db, "--addr", "127.0.0.1:0", "--log-format", "text", "--drain-delay", "0s")

	body := regexp.MustCompile(`-d '(\{.*\})'`).FindStringSubmatch(demoCurl("http://"+s.addr, m.TestSecretKey, time.Now().Year()))
	req, err := http.NewRequest(http.MethodPost, "http://"+s.addr+"/v1/payments", strings.NewReader(body[1]))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", m.TestSecretKey)
	req.Header.Set("Idempotency-Key", "text-"+id.New())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "text-log-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("payment: %d", resp.StatusCode)
	}
	if code := s.stop(t); code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, s.logs.String())
	}

	var line string
	for _, l := range strings.Split(s.logs.String(), "\n") {
		if json.Valid([]byte(l)) && l != "" {
			t.Errorf("a JSON line in the text log: %s", l)
		}
		if strings.Contains(l, "msg=request ") && strings.Contains(l, "request_id=text-log-1") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no request line for text-log-1:\n%s", s.logs.String())
	}
	for _, want := range []string{
		"level=INFO", "method=POST", "route=/v1/payments", "status=201", "latency_ms=",
		"key_id=" + m.TestSecretKeyID, "merchant_id=" + m.MerchantID, "mode=test", "client_ip=127.0.0.1",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("the request line lacks %q: %s", want, line)
		}
	}
	if all := s.logs.String(); strings.Contains(all, m.TestSecretKey) || strings.Contains(all, "4242424242424242") {
		t.Errorf("the log holds the key or the card number:\n%s", all)
	}
}
