package sqlite_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/vault"
)

// TestFileModes: under the usual umask 022 the database file, its -wal and
// -shm files and the vault key file are created 0600, and an existing 0644
// database of an earlier release is tightened on open. Not parallel: the
// umask is process-wide.
func TestFileModes(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)

	wantMode := func(t *testing.T, path string) {
		t.Helper()
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != 0o600 {
			t.Errorf("%s has mode %04o, want 0600", filepath.Base(path), got)
		}
	}
	t.Run("Created", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "paygate.db")
		s := open(t, path)
		now := paygate.SystemClock{}.Now()
		if err := s.Commit(t.Context(), paygate.Unit{Ops: []paygate.Op{paygate.Merchant{ID: id.New(), Name: "Modes", CreatedAt: now}}}); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			wantMode(t, p)
		}
		key := path + vault.KeyFileSuffix
		if _, _, err := vault.LoadOrCreateKeyFile(key); err != nil {
			t.Fatal(err)
		}
		wantMode(t, key)
	})
	t.Run("EarlierReleaseTightened", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "paygate.db")
		s := open(t, path)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			if _, err := os.Stat(p); err == nil {
				if err := os.Chmod(p, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		open(t, path)
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			if _, err := os.Stat(p); err == nil {
				wantMode(t, p)
			}
		}
	})
}
