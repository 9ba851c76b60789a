package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/testenv"
)

// pinnedClient is an HTTPS client that trusts only pool and counts the
// connections it opens. h2 chooses HTTP/2 or HTTP/1.1 with keep-alive.
type pinnedClient struct {
	*http.Client
	dials atomic.Int32
}

func newPinnedClient(pool *x509.CertPool, h2 bool) *pinnedClient {
	c := &pinnedClient{}
	d := &net.Dialer{Timeout: 10 * time.Second}
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c.dials.Add(1)
			return d.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2: h2,
	}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // HTTP/1.1 only
	}
	c.Client = &http.Client{Transport: tr, Timeout: 30 * time.Second}
	return c
}

// get fetches url and returns the answer with its body read.
func (c *pinnedClient) get(url string) (*http.Response, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, nil
}

// TestServeTLS runs serve with --tls-cert and --tls-key (decisions §16):
// HTTPS only, TLS 1.2+, HTTP/2, HSTS on every answer; then it swaps the
// files under the running server: a client that trusts only the new
// certificate's authority connects, and keep-alive connections opened
// before the swap (HTTP/1.1 and HTTP/2) go on serving their requests.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first, second := testenv.NewCertPair(t, "first"), testenv.NewCertPair(t, "second")
	first.Write(t, certFile, keyFile)
	s := startServe(t, nil, "serve", "--database-url", sqliteURL(t), "--addr", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile, "--drain-delay", "0s")
	base := "https://" + s.addr
	if !strings.Contains(s.logs.String(), `"base_url":"https://127.0.0.1:`) {
		t.Errorf("the base URL is not https:\n%s", s.logs.String())
	}

	h1, h2 := newPinnedClient(first.Pool, false), newPinnedClient(first.Pool, true)
	for _, path := range []string{"/healthz", "/readyz", "/v1/payments", "/no/such/path", "/dashboard/login"} {
		for _, c := range []struct {
			name   string
			client *pinnedClient
			proto  int
		}{{"HTTP/1.1", h1, 1}, {"HTTP/2", h2, 2}} {
			resp, err := c.client.get(base + path)
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, path, err)
			}
			if resp.ProtoMajor != c.proto || resp.Header.Get("Strict-Transport-Security") != "max-age=31536000" {
				t.Errorf("%s %s: %d over %s, HSTS %q", c.name, path, resp.StatusCode, resp.Proto, resp.Header.Get("Strict-Transport-Security"))
			}
			if resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
				t.Errorf("%s %s: TLS state %+v", c.name, path, resp.TLS)
			}
		}
	}

	// TLS 1.1 is refused; plain HTTP on the port is not served.
	old := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: first.Pool, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11,
	}}}
	if _, err := old.Get(base + "/healthz"); err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Errorf("TLS 1.1 client: %v, want a protocol version alert", err)
	}
	if resp, err := http.Get("http://" + s.addr + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP on the TLS port: %d, want 400", resp.StatusCode)
		}
	}

	// The swap: new files under the running server. A client that trusts
	// only the new authority connects within a few seconds.
	second.Write(t, certFile, keyFile)
	var swapped bool
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		c := newPinnedClient(second.Pool, true)
		resp, err := c.get(base + "/healthz")
		c.CloseIdleConnections()
		if err == nil && resp.StatusCode == http.StatusOK && resp.TLS.PeerCertificates[0].SerialNumber.Cmp(second.Serial) == 0 {
			swapped = true
			break
		}
	}
	if !swapped {
		t.Fatalf("a client pinned to the new certificate never connected; log:\n%s", s.logs.String())
	}
	// The connections opened before the swap still serve their requests,
	// on the connection they had.
	for i := range 5 {
		for name, c := range map[string]*pinnedClient{"HTTP/1.1": h1, "HTTP/2": h2} {
			resp, err := c.get(base + "/healthz")
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%s keep-alive connection, request %d after the swap: %v", name, i, err)
			}
			if got := resp.TLS.PeerCertificates[0].SerialNumber; got.Cmp(first.Serial) != 0 {
				t.Errorf("%s request %d after the swap: on a connection of certificate %s, want the first one", name, i, got)
			}
		}
	}
	if h1.dials.Load() != 1 || h2.dials.Load() != 1 {
		t.Errorf("connections opened: HTTP/1.1 %d, HTTP/2 %d; want 1 each (kept alive across the swap)", h1.dials.Load(), h2.dials.Load())
	}
	// A new connection of a client that trusts only the old authority is
	// refused now.
	c := newPinnedClient(first.Pool, false)
	if _, err := c.get(base + "/healthz"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a new connection trusting only the old certificate: %v, want a certificate error", err)
	}
	if !strings.Contains(s.logs.String(), "TLS certificate reloaded") {
		t.Errorf("no reload in the log:\n%s", s.logs.String())
	}
	if code := s.stop(t); code != 0 {
		t.Errorf("serve exited %d; log:\n%s", code, s.logs.String())
	}
}

// TestServeTLSBadPair checks that serve refuses to start on a pair that
// does not load, with one line naming the files and no key material.
func TestServeTLSBadPair(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	a, b := testenv.NewCertPair(t, "a"), testenv.NewCertPair(t, "b")
	testenv.WriteFile(t, certFile, a.CertPEM)
	testenv.WriteFile(t, keyFile, b.KeyPEM)
	r := cliRunServe(t, nil, serve, "serve", "--database-url", sqliteURL(t), "--addr", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile)
	if r.code != 1 || !strings.Contains(r.stderr, "paygate: serve: TLS pair "+certFile) || strings.Contains(r.stderr, "PRIVATE KEY") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
