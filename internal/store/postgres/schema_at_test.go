package postgres

import (
	"database/sql"
	"io/fs"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/paygate/paygate/internal/testenv"
)

// schemaAt returns a fresh schema migrated up to version (and no further),
// for an upgrade test to write rows as that schema allowed before Open
// migrates the rest: its URL, a database/sql handle on it (closed when the
// test ends) and the goose provider that migrated it.
func schemaAt(t *testing.T, version int64) (string, *sql.DB, *goose.Provider) {
	t.Helper()
	url := testenv.PostgresSchema(t)
	cc, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cc)
	t.Cleanup(func() { _ = db.Close() })
	files, err := fs.Sub(migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, files, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(t.Context(), version); err != nil {
		t.Fatal(err)
	}
	return url, db, p
}
