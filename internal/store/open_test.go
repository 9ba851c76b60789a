package store_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/store"
)

func TestSQLitePath(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url  string
		path string
		ok   bool
	}{
		{"sqlite:paygate.db", "paygate.db", true},
		{"sqlite:./data/paygate.db", "./data/paygate.db", true},
		{"sqlite:/var/lib/paygate.db", "/var/lib/paygate.db", true},
		{"sqlite://paygate.db", "paygate.db", true},
		{"sqlite:///var/lib/paygate.db", "/var/lib/paygate.db", true},
		{"SQLite:paygate.db", "paygate.db", true},
		{"sqlite:", "", true},
		{"postgres://u:p@localhost/db", "", false},
		{"paygate.db", "", false},
		{"", "", false},
	} {
		path, ok := store.SQLitePath(c.url)
		if path != c.path || ok != c.ok {
			t.Errorf("SQLitePath(%q) = %q, %v; want %q, %v", c.url, path, ok, c.path, c.ok)
		}
	}
	if path, ok := store.SQLitePath(store.DefaultURL); !ok || path != "paygate.db" {
		t.Errorf("SQLitePath(DefaultURL) = %q, %v", path, ok)
	}
}

func TestOpenSQLite(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"sqlite:", "sqlite://"} {
		path := filepath.Join(t.TempDir(), "paygate.db")
		s, err := store.Open(t.Context(), prefix+path)
		if err != nil {
			t.Fatalf("Open(%s%s): %v", prefix, path, err)
		}
		if err := s.Ping(t.Context()); err != nil {
			t.Error(err)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
}

func TestOpenRefusesOtherURLsWithoutEchoingThem(t *testing.T) {
	t.Parallel()
	for _, url := range []string{
		"mysql://admin:s3cretPassw0rd@db.example/paygate",
		"s3cretPassw0rd",
		"",
		"sqlite:",
	} {
		s, err := store.Open(t.Context(), url)
		if err == nil {
			_ = s.Close()
			t.Errorf("Open(%q) succeeded", url)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "s3cretPassw0rd") {
			t.Errorf("error for %q repeats the password: %s", url, msg)
		}
		if !strings.Contains(msg, "sqlite:PATH") || !strings.Contains(msg, "postgres://") {
			t.Errorf("error for %q does not name the accepted forms: %s", url, msg)
		}
	}
}
