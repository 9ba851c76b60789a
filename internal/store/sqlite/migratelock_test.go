//go:build unix

package sqlite

import (
	"path/filepath"
	"testing"
	"time"
)

// TestMigrationsWaitForTheLock: a store opening a file waits for whoever
// holds the file's migration lock (another process migrating it) before
// it looks for pending migrations, and then opens.
func TestMigrationsWaitForTheLock(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "paygate.db")
	release, err := lockMigrations(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		s, err := Open(t.Context(), path)
		if err == nil {
			_ = s.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		release()
		t.Fatalf("opened (%v) while another held the migration lock", err)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("open after the lock was released: %v", err)
	}
}
