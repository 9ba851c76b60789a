package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/pressly/goose/v3"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationAttempts bounds how often Open retries a migration that failed,
// typically because another process applied it at the same moment.
const migrationAttempts = 10

// migrate applies the pending migrations to the file at path with goose.
//
// SQLite has no advisory lock goose could take: the opens of one file
// migrate one after the other under a file lock beside it
// (lockMigrations). Where there is none, two processes opening a fresh
// file at once may both start the same migration; each migration runs in
// one BEGIN IMMEDIATE transaction, so one of them applies it and the other
// fails (a table already exists) without changing anything, and the loser
// looks again and finds nothing pending.
func migrate(ctx context.Context, path string, busy time.Duration) error {
	release, err := lockMigrations(ctx, path)
	if err != nil {
		return err
	}
	defer release()
	migrations, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("sqlite: migrations: %w", err)
	}
	db, err := sql.Open("sqlite", dsn(path, true, busy))
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	var errs []error
	for attempt := range migrationAttempts {
		err := migrateOnce(ctx, db, migrations)
		if err == nil {
			return eraseLegacyCardFingerprints(ctx, db)
		}
		errs = append(errs, err)
		wait := time.Duration(attempt+1) * 50 * time.Millisecond
		select {
		case <-ctx.Done():
			return fmt.Errorf("sqlite: migrate %s: %w", path, errors.Join(append(errs, ctx.Err())...))
		case <-time.After(wait):
		}
	}
	return fmt.Errorf("sqlite: migrate %s: %w", path, errors.Join(errs...))
}

// migrateOnce applies what is pending, with a fresh goose provider (goose
// remembers per provider that it created its version table).
func migrateOnce(ctx context.Context, db *sql.DB, migrations fs.FS) error {
	p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return err
	}
	pending, err := p.HasPending(ctx)
	if err != nil {
		return err
	}
	if !pending {
		return nil
	}
	_, err = p.Up(ctx)
	return err
}
