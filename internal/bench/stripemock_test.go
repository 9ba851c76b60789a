package bench

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestFindStripeMock: on PATH first, then in $GOPATH/bin; neither is
// ErrNoStripeMock, which names the install command.
func TestFindStripeMock(t *testing.T) {
	onPath, gopath := t.TempDir(), t.TempDir()
	t.Setenv("PATH", t.TempDir())
	t.Setenv("GOBIN", "")
	t.Setenv("GOPATH", gopath)
	if _, err := FindStripeMock(); !errors.Is(err, ErrNoStripeMock) {
		t.Fatalf("nothing installed: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(gopath, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	inGopath := filepath.Join(gopath, "bin", "stripe-mock")
	if err := os.WriteFile(inGopath, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := FindStripeMock(); err != nil || p != inGopath {
		t.Fatalf("in GOPATH/bin: %q, %v", p, err)
	}
	first := filepath.Join(onPath, "stripe-mock")
	if err := os.WriteFile(first, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", onPath)
	if p, err := FindStripeMock(); err != nil || p != first {
		t.Fatalf("on PATH: %q, %v", p, err)
	}
}
