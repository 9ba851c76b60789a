package sqlite

import (
	"database/sql"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/pressly/goose/v3"
)

// schemaAt returns a fresh file migrated up to version (and no further),
// for an upgrade test to write rows as that schema allowed before Open
// migrates the rest: its path, a database/sql handle on it (the test closes
// it before Open) and the goose provider that migrated it.
func schemaAt(t *testing.T, version int64) (string, *sql.DB, *goose.Provider) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "paygate.db")
	db, err := sql.Open("sqlite", dsn(path, true, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	files, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, files, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(t.Context(), version); err != nil {
		t.Fatal(err)
	}
	return path, db, p
}
