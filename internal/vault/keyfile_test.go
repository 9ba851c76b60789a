package vault

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestKeyFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "paygate.db"+KeyFileSuffix)

	if _, err := LoadKeyFile(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("LoadKeyFile of a missing file: %v", err)
	}
	key, created, err := LoadOrCreateKeyFile(path)
	if err != nil || !created {
		t.Fatalf("create: created %v, err %v", created, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("key file mode %04o, want 0600", perm)
	}
	if _, err := ParseKeys([]string{key}); err != nil {
		t.Errorf("generated key: %v", err)
	}
	again, created, err := LoadOrCreateKeyFile(path)
	if err != nil || created || again != key {
		t.Fatalf("second call: created %v, same key %v, err %v", created, again == key, err)
	}
	if got, err := LoadKeyFile(path); err != nil || got != key {
		t.Fatalf("LoadKeyFile: %v", err)
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d files, want only the key file", len(entries))
	}

	// A key file others may read is refused, and the error does not show it.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = LoadOrCreateKeyFile(path)
	if err == nil || !strings.Contains(err.Error(), "chmod 600") || strings.Contains(err.Error(), key) {
		t.Errorf("world-readable key file: %v", err)
	}

	// A file that holds no key is refused.
	bad := filepath.Join(t.TempDir(), "x"+KeyFileSuffix)
	if err := os.WriteFile(bad, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeyFile(bad); err == nil {
		t.Error("a file without a key was accepted")
	}
}

// TestKeyFileConcurrent starts several "processes" on a fresh database at
// once: they all end up with one key.
func TestKeyFileConcurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "paygate.db"+KeyFileSuffix)
	const n = 8
	keys := make([]string, n)
	var creators int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			k, created, err := LoadOrCreateKeyFile(path)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			keys[i] = k
			if created {
				creators++
			}
		})
	}
	wg.Wait()
	if creators != 1 {
		t.Errorf("%d callers created the key, want 1", creators)
	}
	for _, k := range keys {
		if k != keys[0] {
			t.Fatal("concurrent callers got different keys")
		}
	}
}
