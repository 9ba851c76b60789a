// Package store opens the paygate.Store named by a database URL: the
// embedded SQLite file by default, or PostgreSQL.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/postgres"
	"github.com/paygate/paygate/internal/store/sqlite"
)

// DefaultURL is the database URL used when none is configured: a SQLite
// file in the working directory.
const DefaultURL = "sqlite:paygate.db"

// acceptedForms names the URL forms in error messages.
const acceptedForms = "sqlite:PATH (also sqlite://PATH) or postgres://USER:PASSWORD@HOST:PORT/DATABASE (also postgresql://)"

// Open opens the store of databaseURL and applies pending migrations:
//
//	sqlite:PATH, sqlite://PATH          the SQLite file at PATH (relative to
//	                                    the working directory unless absolute:
//	                                    sqlite:///var/lib/paygate.db)
//	postgres://..., postgresql://...    PostgreSQL
//
// Any other URL is an error naming the accepted forms; the error never
// repeats the URL, which may hold a password.
func Open(ctx context.Context, databaseURL string) (paygate.Store, error) {
	return OpenWith(ctx, databaseURL, Options{})
}

// Options are the engine settings that the wiring chooses, the same for
// every engine.
type Options struct {
	// OnEvents, when set, is called after every commit that wrote outbox
	// events (a payment's or a refund's transition, a refund's creation, a
	// 3-D Secure challenge's start or finish), so that this node's webhook
	// dispatcher sends them at once instead of at its next poll. It runs in
	// the caller's goroutine after the commit and must not block. Events
	// written on other nodes go out at the next poll.
	OnEvents func()
}

// OpenWith is Open with options. The store it returns is the engine's own,
// with every optional interface the engine implements.
func OpenWith(ctx context.Context, databaseURL string, o Options) (paygate.Store, error) {
	if path, ok := SQLitePath(databaseURL); ok {
		if path == "" {
			return nil, errors.New("store: the sqlite: database URL names no file; use " + acceptedForms)
		}
		s, err := sqlite.OpenWith(ctx, path, sqlite.Options{OnEvents: o.OnEvents})
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	if isPostgres(databaseURL) {
		s, err := postgres.OpenWith(ctx, databaseURL, postgres.Options{OnEvents: o.OnEvents})
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("store: unsupported database URL (%s); use %s", describeScheme(databaseURL), acceptedForms)
}

// SQLitePath returns the file path of a SQLite database URL (sqlite:PATH or
// sqlite://PATH) and true, or "" and false for any other URL. The path is
// "" when the URL names no file.
func SQLitePath(databaseURL string) (string, bool) {
	u := strings.TrimSpace(databaseURL)
	if !hasPrefixFold(u, "sqlite:") {
		return "", false
	}
	rest := u[len("sqlite:"):]
	if strings.HasPrefix(rest, "//") {
		rest = rest[2:]
	}
	return rest, true
}

// isPostgres reports whether the URL names a PostgreSQL database.
func isPostgres(databaseURL string) bool {
	u := strings.TrimSpace(databaseURL)
	return hasPrefixFold(u, "postgres://") || hasPrefixFold(u, "postgresql://")
}

// describeScheme names the scheme of a refused URL without showing the rest
// of it.
func describeScheme(databaseURL string) string {
	u := strings.TrimSpace(databaseURL)
	if u == "" {
		return "empty"
	}
	i := strings.Index(u, ":")
	if i <= 0 {
		return "no scheme"
	}
	scheme := u[:i]
	for _, r := range scheme {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.') {
			return "no scheme"
		}
	}
	return fmt.Sprintf("scheme %q", scheme)
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
