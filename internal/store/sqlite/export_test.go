package sqlite

import (
	"database/sql"
	"io/fs"
)

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
