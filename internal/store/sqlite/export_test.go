package sqlite

import (
	"context"
	"database/sql"
	"io/fs"
	"time"
)

// OpenWithBusyTimeoutForTest opens a store whose statements wait at most
// busy for a lock.
func OpenWithBusyTimeoutForTest(ctx context.Context, path string, busy time.Duration) (*Store, error) {
	return open(ctx, path, busy)
}

// DBForTest exposes a connection pool of the store to this package's tests.
func DBForTest(s *Store, write bool) *sql.DB {
	if write {
		return s.write
	}
	return s.read
}

// MigrationCountForTest returns the number of embedded migrations.
func MigrationCountForTest() int {
	files, _ := fs.Glob(migrationFiles, "migrations/*.sql")
	return len(files)
}
