package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
)

// fileMode is the mode of the database file and of its -wal and -shm files
// (decisions.md section 15): they hold payments, customers and sealed
// secrets, so only their owner may read them.
const fileMode = 0o600

// secureFiles creates the database file with mode fileMode when it does not
// exist, before the driver opens it (SQLite would create it 0644 under the
// usual umask, and gives -wal and -shm the main file's mode), and tightens
// the database file, -wal and -shm of an earlier release that others may
// read, saying so in the log. A mode is only ever narrowed.
func secureFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		info, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("sqlite: %w", err)
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			if err := os.Chmod(p, perm&^0o077); err != nil {
				return fmt.Errorf("sqlite: make %s readable by its owner only: %w", p, err)
			}
			slog.Warn("database file was readable by other users; made it readable by its owner only",
				"file", p, "old_mode", fmt.Sprintf("%04o", perm), "new_mode", fmt.Sprintf("%04o", perm&^0o077))
		}
	}
	return nil
}
