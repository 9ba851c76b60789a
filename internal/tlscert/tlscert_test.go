package tlscert_test

import (
	"crypto/tls"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/testenv"
	"github.com/paygate/paygate/internal/tlscert"
)

// files is a certificate and key file in a fresh directory.
type files struct{ cert, key string }

func newFiles(t *testing.T) files {
	dir := t.TempDir()
	return files{filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")}
}

// served returns the serial number of the certificate a handshake gets.
func served(t *testing.T, p *tlscert.Pair) *big.Int {
	t.Helper()
	c, err := p.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil || c == nil || c.Leaf == nil {
		t.Fatalf("GetCertificate: %v, %v", c, err)
	}
	return c.Leaf.SerialNumber
}

// TestReload swaps the files under a Pair and checks which certificate
// handshakes get, with the clock moved by hand past the interval.
func TestReload(t *testing.T) {
	t.Parallel()
	f := newFiles(t)
	a, b, c := testenv.NewCertPair(t, "a"), testenv.NewCertPair(t, "b"), testenv.NewCertPair(t, "c")
	a.Write(t, f.cert, f.key)
	clock := testenv.NewClock(time.Now())
	var logs testenv.Buffer
	p, err := tlscert.Load(f.cert, f.key, tlscert.Options{Now: clock.Now, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	want := func(step string, pair testenv.CertPair) {
		t.Helper()
		if got := served(t, p); got.Cmp(pair.Serial) != 0 {
			t.Fatalf("%s: serving serial %s, want %s", step, got, pair.Serial)
		}
	}
	want("start", a)

	// Within the interval the files are not looked at.
	b.Write(t, f.cert, f.key)
	clock.Add(500 * time.Millisecond)
	want("half an interval after the swap", a)
	clock.Add(600 * time.Millisecond)
	want("an interval after the swap", b)

	// Half written: the new certificate with the old key. The old pair
	// stays, and stays after another look at the unchanged files.
	testenv.WriteFile(t, f.cert, c.CertPEM)
	clock.Add(2 * time.Second)
	want("certificate without its key", b)
	clock.Add(2 * time.Second)
	want("certificate without its key, looked at again", b)
	// The key arrives: the new pair is taken up.
	testenv.WriteFile(t, f.key, c.KeyPEM)
	clock.Add(2 * time.Second)
	want("the key written", c)

	// A truncated certificate, then a missing key, keep the pair too.
	testenv.WriteFile(t, f.cert, a.CertPEM[:len(a.CertPEM)/2])
	clock.Add(2 * time.Second)
	want("truncated certificate", c)
	if err := os.Remove(f.key); err != nil {
		t.Fatal(err)
	}
	clock.Add(2 * time.Second)
	want("key missing", c)
	clock.Add(2 * time.Second)
	want("key still missing", c)
	a.Write(t, f.cert, f.key)
	clock.Add(2 * time.Second)
	want("a whole pair again", a)

	out := logs.String()
	if n := strings.Count(out, "TLS certificate reloaded"); n != 3 {
		t.Errorf("%d reload lines, want 3:\n%s", n, out)
	}
	// One warning per bad state of the files: the half-written pair, the
	// truncated certificate, the missing key.
	if n := strings.Count(out, "do not load"); n != 3 {
		t.Errorf("%d warnings, want 3:\n%s", n, out)
	}
	if strings.Contains(out, "PRIVATE KEY") || strings.Contains(out, string(a.KeyPEM[40:80])) {
		t.Errorf("the log shows key material:\n%s", out)
	}
}

// TestReplacedInPlace checks that a file rewritten in place (same inode,
// not renamed) is noticed as well as a renamed one.
func TestReplacedInPlace(t *testing.T) {
	t.Parallel()
	f := newFiles(t)
	a, b := testenv.NewCertPair(t, "a"), testenv.NewCertPair(t, "b")
	a.Write(t, f.cert, f.key)
	clock := testenv.NewClock(time.Now())
	p, err := tlscert.Load(f.cert, f.key, tlscert.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		path string
		data []byte
	}{{f.key, b.KeyPEM}, {f.cert, b.CertPEM}} {
		if err := os.WriteFile(w.path, w.data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Some file systems keep coarse modification times: make the change
	// visible in the time too, as the size may not differ.
	later := time.Now().Add(time.Minute)
	_ = os.Chtimes(f.cert, later, later)
	_ = os.Chtimes(f.key, later, later)
	clock.Add(2 * time.Second)
	if got := served(t, p); got.Cmp(b.Serial) != 0 {
		t.Fatalf("serving serial %s, want the rewritten pair's %s", got, b.Serial)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	a, b := testenv.NewCertPair(t, "a"), testenv.NewCertPair(t, "b")
	for _, c := range []struct {
		name      string
		cert, key []byte // nil: no file
	}{
		{"ErrMissingCert", nil, a.KeyPEM},
		{"ErrMissingKey", a.CertPEM, nil},
		{"ErrKeyOfAnotherCert", a.CertPEM, b.KeyPEM},
		{"ErrNotPEM", []byte("hello"), a.KeyPEM},
		{"ErrSwapped", a.KeyPEM, a.CertPEM},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFiles(t)
			if c.cert != nil {
				testenv.WriteFile(t, f.cert, c.cert)
			}
			if c.key != nil {
				testenv.WriteFile(t, f.key, c.key)
			}
			p, err := tlscert.Load(f.cert, f.key, tlscert.Options{})
			if err == nil {
				t.Fatalf("Load succeeded: %v", p.Certificate().Leaf.Subject)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Errorf("the error shows key material: %v", err)
			}
		})
	}
}

// TestServerConfig serves HTTPS with the pair's configuration and HSTS:
// TLS 1.2 and 1.3 connect, TLS 1.1 is refused, HTTP/2 is negotiated, and
// every answer carries Strict-Transport-Security.
func TestServerConfig(t *testing.T) {
	t.Parallel()
	f := newFiles(t)
	a := testenv.NewCertPair(t, "a")
	a.Write(t, f.cert, f.key)
	p, err := tlscert.Load(f.cert, f.key, tlscert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Not httptest's TLS server: it sets a certificate of its own, which
	// crypto/tls prefers to GetCertificate when the client sends no name.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: tlscert.HSTS(http.NotFoundHandler()), TLSConfig: p.ServerConfig()}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	defer srv.Close()
	url := "https://" + ln.Addr().String()

	get := func(min, max uint16) (*http.Response, error) {
		tr := &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: a.Pool, MinVersion: min, MaxVersion: max},
			ForceAttemptHTTP2: true,
		}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	for _, c := range []struct {
		name     string
		min, max uint16
		tls      uint16
	}{
		{"TLS12", tls.VersionTLS12, tls.VersionTLS12, tls.VersionTLS12},
		{"TLS13", tls.VersionTLS13, tls.VersionTLS13, tls.VersionTLS13},
	} {
		resp, err := get(c.min, c.max)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if resp.TLS.Version != c.tls || resp.ProtoMajor != 2 || resp.Header.Get("Strict-Transport-Security") != "max-age=31536000" {
			t.Errorf("%s: version %x, protocol %s, HSTS %q", c.name, resp.TLS.Version, resp.Proto, resp.Header.Get("Strict-Transport-Security"))
		}
	}
	if _, err := get(tls.VersionTLS10, tls.VersionTLS11); err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Errorf("TLS 1.1 client: %v, want a protocol version alert", err)
	}
}

// TestHSTSOnlyOverTLS checks that a plain HTTP answer does not claim HSTS
// (browsers ignore it there, and it would be false).
func TestHSTSOnlyOverTLS(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	tlscert.HSTS(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if v := rec.Header().Get("Strict-Transport-Security"); v != "" {
		t.Errorf("plain HTTP answer has HSTS %q", v)
	}
}

// BenchmarkGetCertificate is the cost a handshake pays for the reload:
// mostly an atomic load, and two stats once an interval.
func BenchmarkGetCertificate(b *testing.B) {
	dir := b.TempDir()
	f := files{filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")}
	testenv.NewCertPair(b, "a").Write(b, f.cert, f.key)
	for _, c := range []struct {
		name     string
		interval time.Duration
	}{{"Default", 0}, {"LookEveryTime", time.Nanosecond}} {
		b.Run(c.name, func(b *testing.B) {
			p, err := tlscert.Load(f.cert, f.key, tlscert.Options{Interval: c.interval})
			if err != nil {
				b.Fatal(err)
			}
			hello := &tls.ClientHelloInfo{}
			for b.Loop() {
				if _, err := p.GetCertificate(hello); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestExpiredNotTakenUp checks that an expired certificate copied over the
// files does not replace the pair in use.
func TestExpiredNotTakenUp(t *testing.T) {
	t.Parallel()
	f := newFiles(t)
	a, b := testenv.NewCertPair(t, "a"), testenv.NewCertPair(t, "b")
	a.Write(t, f.cert, f.key)
	clock := testenv.NewClock(time.Now())
	var logs testenv.Buffer
	p, err := tlscert.Load(f.cert, f.key, tlscert.Options{Now: clock.Now, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	b.Write(t, f.cert, f.key)
	clock.Add(25 * time.Hour) // b (valid for a day) has expired when it is looked at
	if got := served(t, p); got.Cmp(a.Serial) != 0 {
		t.Fatalf("serving serial %s, want the pair in use %s, not the expired one", got, a.Serial)
	}
	if !strings.Contains(logs.String(), "expired") {
		t.Errorf("no warning names the expiry:\n%s", logs.String())
	}
}
