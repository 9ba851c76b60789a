package vault

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeyFileSuffix names the key file beside a SQLite database: the embedded
// database's master key lives in "<database file>.vault-key" when the
// operator configures none.
const KeyFileSuffix = ".vault-key"

// LoadOrCreateKeyFile returns the master key (base64, as configured) kept in
// the file at path, creating the file with a fresh key, readable by its owner
// only (mode 0600), when it does not exist. created tells which happened.
//
// Creation is atomic: the key is written to a temporary file that is then
// linked into place, so concurrent starts agree on one key and no reader
// ever sees a partial file. An existing file that others may read (group or
// world permission bits) is refused rather than used.
func LoadOrCreateKeyFile(path string) (key string, created bool, err error) {
	key, err = readKeyFile(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	fresh, err := GenerateKey()
	if err != nil {
		return "", false, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return "", false, fmt.Errorf("vault: create key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600 already; say so explicitly.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", false, fmt.Errorf("vault: create key file: %w", err)
	}
	if _, err := tmp.WriteString(fresh + "\n"); err != nil {
		tmp.Close()
		return "", false, fmt.Errorf("vault: write key file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", false, fmt.Errorf("vault: write key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", false, fmt.Errorf("vault: write key file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Another process created it first: use its key.
			key, err = readKeyFile(path)
			return key, false, err
		}
		return "", false, fmt.Errorf("vault: create key file: %w", err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync() // make the new name durable
		d.Close()
	}
	return fresh, true, nil
}

// LoadKeyFile returns the master key kept in the file at path, refusing a
// file that others may read. A missing file is an error wrapping
// fs.ErrNotExist.
func LoadKeyFile(path string) (string, error) { return readKeyFile(path) }

// readKeyFile reads and checks an existing key file.
func readKeyFile(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("vault: the key file %s may be read by other users (mode %04o); make it readable by its owner only (chmod 600)", path, perm)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("vault: read key file: %w", err)
	}
	key := strings.TrimSpace(string(raw))
	if _, err := ParseKeys([]string{key}); err != nil {
		return "", fmt.Errorf("vault: the key file %s does not hold base64 of %d bytes", path, KeySize)
	}
	return key, nil
}
