// Package testenv finds the services tests run against: PostgreSQL and
// Redis. Tests locate them through PAYGATE_TEST_POSTGRES_URL and
// PAYGATE_TEST_REDIS_URL, falling back to the standard local addresses.
// When a service is unreachable the test is skipped with a clear message,
// unless PAYGATE_TEST_REQUIRE_SERVICES=1 (as in CI), where it fails.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultPostgresURL and DefaultRedisURL are used when the environment names
// no service.
const (
	DefaultPostgresURL = "postgres://root@127.0.0.1:5432/test"
	DefaultRedisURL    = "redis://127.0.0.1:6379/0"
)

func required() bool { return os.Getenv("PAYGATE_TEST_REQUIRE_SERVICES") == "1" }

func unavailable(t testing.TB, service, addr string, err error) {
	t.Helper()
	if required() {
		t.Fatalf("%s at %s is required (PAYGATE_TEST_REQUIRE_SERVICES=1) but unreachable: %v", service, addr, err)
	}
	t.Skipf("skipping: %s at %s is unreachable (%v); set PAYGATE_TEST_POSTGRES_URL / PAYGATE_TEST_REDIS_URL or start it", service, addr, err)
}

// PostgresURL returns the URL of the test PostgreSQL server, skipping (or
// failing, when services are required) the test if it does not answer.
func PostgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("PAYGATE_TEST_POSTGRES_URL")
	if u == "" {
		u = DefaultPostgresURL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		unavailable(t, "PostgreSQL", redact(u), err)
		return ""
	}
	_ = conn.Close(ctx)
	return u
}

// PostgresSchema creates a fresh, empty schema for one test and returns a URL
// whose connections use it (search_path), so tests can run in parallel on
// one database. The schema is dropped when the test ends.
func PostgresSchema(t testing.TB) string {
	t.Helper()
	base := PostgresURL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
	})
	return WithSearchPath(base, schema)
}

// WithSearchPath returns the PostgreSQL URL with search_path set to schema.
func WithSearchPath(base, schema string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// RedisURL returns the URL of the test Redis server, skipping (or failing,
// when services are required) the test if it does not answer.
func RedisURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("PAYGATE_TEST_REDIS_URL")
	if u == "" {
		u = DefaultRedisURL
	}
	parsed, err := url.Parse(u)
	if err != nil {
		unavailable(t, "Redis", redact(u), err)
		return ""
	}
	host := parsed.Host
	if !strings.Contains(host, ":") {
		host += ":6379"
	}
	conn, err := net.DialTimeout("tcp", host, 3*time.Second)
	if err != nil {
		unavailable(t, "Redis", redact(u), err)
		return ""
	}
	_ = conn.Close()
	return u
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
