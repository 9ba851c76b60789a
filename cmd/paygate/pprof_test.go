package main

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

func TestCheckLoopbackAddr(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:6060", "[::1]:0", "localhost:6060", "127.0.0.2:1"} {
		if err := checkLoopbackAddr(addr); err != nil {
			t.Errorf("checkLoopbackAddr(%q) = %v, want nil", addr, err)
		}
	}
	for _, addr := range []string{":6060", "0.0.0.0:6060", "10.0.0.1:6060", "example.com:6060", "127.0.0.1", "127.0.0.1:x", "127.0.0.1:70000"} {
		if err := checkLoopbackAddr(addr); err == nil {
			t.Errorf("checkLoopbackAddr(%q) = nil, want an error", addr)
		}
	}
}

func TestStartPprof(t *testing.T) {
	addr, stop, err := startPprof(t.Context(), "127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	res, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile") {
		t.Fatalf("GET goroutine profile: %d %.200s", res.StatusCode, body)
	}
	if _, _, err := startPprof(t.Context(), "0.0.0.0:0", slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("startPprof on 0.0.0.0 succeeded, want an error")
	}
}
