//go:build unix

package sqlite

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockMigrations takes an exclusive lock on a file beside the database
// (path + "-migrate.lock"), held until the returned release is called,
// so that processes (and stores of one process) opening one file at once
// apply its migrations one after the other: the next finds nothing
// pending. Without it two of them may both apply a migration that does
// not fail the second time (an UPDATE of rows, say), and record it twice.
// The lock is flock(2)'s: the kernel drops it when its holder dies, so a
// crash never leaves the file locked.
func lockMigrations(ctx context.Context, path string) (release func(), err error) {
	f, err := os.OpenFile(path+"-migrate.lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: the migration lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			_ = f.Close()
			return nil, fmt.Errorf("sqlite: the migration lock: %w", err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("sqlite: waiting for the migration lock: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
