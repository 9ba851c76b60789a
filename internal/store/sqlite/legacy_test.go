package sqlite_test

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/store/sqlite"
)

// TestLegacyKeyErasedOnceTheFileIsFree stores an older release's card
// fingerprint key again, as a node of that release still running would,
// and opens the file while another connection keeps a read transaction
// open: the key is deleted, but the file cannot be rebuilt, so the open
// fails saying why and leaves the erase pending. The next open, with the
// file free, erases it: no byte of the key is left in the file or its WAL.
func TestLegacyKeyErasedOnceTheFileIsFree(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "paygate.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	key := bytes.Repeat([]byte("old-release-key!"), 2)
	if _, err := sqlite.DBForTest(s, true).ExecContext(ctx,
		`INSERT INTO instance_secrets (name, value) VALUES ('card-fingerprint-key', ?)`, key); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	reader, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	tx, err := reader.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM payments`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if s, err := sqlite.OpenWithBusyTimeoutForTest(ctx, path, 50*time.Millisecond); err == nil {
		_ = s.Close()
		t.Fatal("opened while another connection kept the file from being rebuilt")
	}
	_ = tx.Rollback()
	var pending, keys int
	if err := reader.QueryRowContext(ctx, `SELECT count(*) FROM instance_secrets WHERE name = 'card-fingerprint-key-erase'`).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if err := reader.QueryRowContext(ctx, `SELECT count(*) FROM instance_secrets WHERE name = 'card-fingerprint-key'`).Scan(&keys); err != nil {
		t.Fatal(err)
	}
	if pending != 1 || keys != 0 {
		t.Fatalf("after the failed open: %d erase notes, %d keys; want 1 and 0", pending, keys)
	}
	reader.Close()

	s, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("open with the file free: %v", err)
	}
	if err := sqlite.DBForTest(s, false).QueryRowContext(ctx, `SELECT count(*) FROM instance_secrets`).Scan(&n); err != nil || n != 0 {
		t.Errorf("instance_secrets holds %d rows (%v), want none", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal"} {
		raw, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(raw, key) {
			t.Errorf("%s still holds the key", filepath.Base(f))
		}
	}
}
