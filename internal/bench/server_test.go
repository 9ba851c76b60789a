package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func TestProcReaders(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	// Burn a little CPU so that the reading is not zero.
	deadline := time.Now().Add(50 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	cpu, err := processCPU(os.Getpid())
	if err != nil || cpu <= 0 {
		t.Fatalf("processCPU = %v, %v", cpu, err)
	}
	rss, err := procStatusBytes(os.Getpid(), "VmRSS:")
	if err != nil || rss < 1<<20 {
		t.Fatalf("VmRSS = %d, %v", rss, err)
	}
	if _, err := procStatusBytes(os.Getpid(), "NoSuchField:"); err == nil {
		t.Fatal("a missing field was read")
	}
}

func TestStartServerThatExits(t *testing.T) {
	_, err := StartServer(context.Background(), ServerConfig{Path: "/bin/sh", Args: []string{"-c", "exit 3"}, ReadyTimeout: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Fatalf("err = %v", err)
	}
}
