package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/testenv"
)

// running is a serve started in-process through run, as main starts it;
// cancelling its context is what SIGTERM does to main's.
type running struct {
	addr   string
	logs   *testenv.Buffer // stderr: the log
	stdout *testenv.Buffer
	cancel context.CancelFunc
	done   chan int // the exit status, once run returns
}

// listeningRE finds the address in serve's "listening" line, in either
// log format.
var listeningRE = regexp.MustCompile(`"msg":"listening".*?"addr":"([^"]+)"|msg=listening addr=(\S+)`)

// startServe runs paygate with args (serve and its flags; pass --addr
// 127.0.0.1:0) and env, and returns once it listens. The test's end stops
// it if the test did not.
func startServe(t *testing.T, env map[string]string, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{logs: &testenv.Buffer{}, stdout: &testenv.Buffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() {
		r.done <- run(ctx, args, func(k string) string { return env[k] }, r.stdout, r.logs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-r.done:
			r.done <- code
		case <-time.After(60 * time.Second):
			t.Errorf("serve did not stop within 60s of the test's end")
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		select {
		case code := <-r.done:
			r.done <- code
			t.Fatalf("serve exited %d before listening; log:\n%s", code, r.logs.String())
		default:
		}
		if m := listeningRE.FindStringSubmatch(r.logs.String()); m != nil {
			r.addr = m[1] + m[2]
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not listen within 30s; log:\n%s", r.logs.String())
		}
	}
}

// stop cancels serve's context and returns its exit status.
func (r *running) stop(t *testing.T) int {
	t.Helper()
	r.cancel()
	select {
	case code := <-r.done:
		r.done <- code
		return code
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop within 60s; log:\n%s", r.logs.String())
		return -1
	}
}

// writeTestFile writes content to a file of the test's directory and
// returns its path.
func writeTestFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
