package sqlite

import (
	"database/sql"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/pressly/goose/v3"
)

// TestMigrationsFailWhenRunAgain applies each migration, then runs it again
// as a second process would that started it at the same moment (migrate.go):
// goose's own run, in its transaction, must fail, so that the second process
// changes nothing, records nothing and looks again.
//
// 00007 is the exception: it only erases what it finds, so a second run
// changes nothing either (it was released so; it is not edited).
func TestMigrationsFailWhenRunAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "paygate.db")
	db, err := sql.Open("sqlite", dsn(path, true, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(1)
	files, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, files, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	idempotent := map[int64]bool{7: true}
	for _, src := range p.ListSources() {
		v := src.Version
		if _, err := p.UpTo(ctx, v); err != nil {
			t.Fatalf("apply %d: %v", v, err)
		}
		if idempotent[v] {
			continue
		}
		// Forget that it was applied, and apply it again.
		if _, err := db.ExecContext(ctx, `DELETE FROM goose_db_version WHERE version_id = ?`, v); err != nil {
			t.Fatal(err)
		}
		if _, err := p.ApplyVersion(ctx, v, true); err == nil {
			t.Errorf("migration %s succeeded when run a second time", filepath.Base(src.Path))
			continue // goose recorded it again
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, 1)`, v); err != nil {
			t.Fatal(err)
		}
	}
	var applied int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM goose_db_version WHERE version_id > 0`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if applied != len(p.ListSources()) {
		t.Errorf("%d migrations recorded, want %d", applied, len(p.ListSources()))
	}
}
