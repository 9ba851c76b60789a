package cluster

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/testenv"
)

// nginxPath is Debian's nginx (package nginx).
const nginxPath = "/usr/sbin/nginx"

// nginxSite is where an adapted deploy/nginx.conf runs: its own directory
// for pid, logs, temporary files and certificate, a loopback port for the
// TLS listener, and a loopback address for each node of the upstream.
type nginxSite struct {
	dir    string
	listen string            // 127.0.0.1:PORT, for "listen 8443"
	nodes  map[string]string // "paygate-1:8080" → "127.0.0.1:PORT"
}

var (
	pathDirective = regexp.MustCompile(`(?m)^(\s*(pid|error_log|access_log|ssl_certificate|ssl_certificate_key)\s+)(\S+?)(;|\s)`)
	serverLine    = regexp.MustCompile(`(?m)^(\s*server\s+)([a-z0-9-]+:\d+)(\s|;)`)
	listenLine    = regexp.MustCompile(`(?m)^(\s*listen\s+)(\d+)(\s|;)`)
	httpBlock     = regexp.MustCompile(`(?m)^http\s*\{\n`)
)

// adaptNginx rewrites deploy/nginx.conf for a run on this machine: files
// under s.dir, the listener and the nodes on loopback ports, temporary
// files under s.dir, and (as root) workers as root, who alone may enter
// the test's private directory. Everything else is the committed file's.
// Every name it rewrites must be found, each node exactly once, so that
// the committed file cannot drift from what runs here unnoticed.
func adaptNginx(conf string, s nginxSite) (string, error) {
	seen := map[string]int{}
	conf = pathDirective.ReplaceAllStringFunc(conf, func(m string) string {
		g := pathDirective.FindStringSubmatch(m)
		seen[g[2]]++
		return g[1] + filepath.Join(s.dir, filepath.Base(g[3])) + g[4]
	})
	for _, d := range []string{"pid", "error_log", "access_log", "ssl_certificate", "ssl_certificate_key"} {
		if seen[d] != 1 {
			return "", fmt.Errorf("nginx.conf has %d %s directives, want 1", seen[d], d)
		}
	}
	var bad []string
	conf = serverLine.ReplaceAllStringFunc(conf, func(m string) string {
		g := serverLine.FindStringSubmatch(m)
		addr, ok := s.nodes[g[2]]
		if !ok {
			bad = append(bad, g[2])
			return m
		}
		seen[g[2]]++
		return g[1] + addr + g[3]
	})
	if len(bad) > 0 {
		return "", fmt.Errorf("nginx.conf names servers %v the test does not run", bad)
	}
	for name := range s.nodes {
		if seen[name] != 1 {
			return "", fmt.Errorf("nginx.conf names server %s %d times, want once", name, seen[name])
		}
	}
	n := 0
	conf = listenLine.ReplaceAllStringFunc(conf, func(m string) string {
		g := listenLine.FindStringSubmatch(m)
		if g[2] != "8443" {
			return m
		}
		n++
		return g[1] + s.listen + g[3]
	})
	if n != 1 {
		return "", fmt.Errorf("nginx.conf listens on 8443 %d times, want once", n)
	}
	var temps strings.Builder
	for _, d := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&temps, "    %s_temp_path %s;\n", d, filepath.Join(s.dir, d+"_temp"))
	}
	if !httpBlock.MatchString(conf) {
		return "", fmt.Errorf("nginx.conf has no http block")
	}
	conf = httpBlock.ReplaceAllLiteralString(conf, "http {\n"+temps.String())
	if os.Geteuid() == 0 {
		conf = "user root;\n" + conf
	}
	return conf, nil
}

// deployNginxConf reads the committed deploy/nginx.conf.
func deployNginxConf(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// freeAddr returns a loopback address no one listens on now. A node
// restarted on it must find it again, so it cannot be port 0.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// writeCert writes a fresh self-signed certificate for 127.0.0.1, as
// dir/tls.crt and dir/tls.key, and returns a pool trusting it alone.
func writeCert(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "paygate cluster test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return pool
}

// nginx is a running nginx with the adapted deploy configuration.
type nginx struct {
	url    string // https://127.0.0.1:PORT
	dir    string
	client *http.Client // trusts the site's certificate
}

// newNginxSite prepares a directory, a certificate and an adapted
// configuration for nodes (their names in nginx.conf → loopback
// addresses), and checks it with `nginx -t`.
func newNginxSite(t *testing.T, nodes map[string]string) (nginxSite, *x509.CertPool) {
	t.Helper()
	path := testenv.Program(t, nginxPath, "nginx")
	s := nginxSite{dir: t.TempDir(), listen: freeAddr(t), nodes: nodes}
	pool := writeCert(t, s.dir)
	conf, err := adaptNginx(deployNginxConf(t), s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, nginxArgs(s, "-t")...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "test is successful") {
		t.Fatalf("nginx -t on the adapted deploy/nginx.conf: %v\n%s\n--- configuration ---\n%s", err, out, conf)
	}
	return s, pool
}

// nginxArgs is nginx's command line for site s: its prefix, configuration
// and early error log (before the configuration is read), then extra.
func nginxArgs(s nginxSite, extra ...string) []string {
	return append([]string{"-p", s.dir, "-c", filepath.Join(s.dir, "nginx.conf"), "-e", filepath.Join(s.dir, "error.log")}, extra...)
}

// startNginx runs nginx in the foreground for site s until the test ends,
// and waits until it accepts TLS connections.
func startNginx(t *testing.T, s nginxSite, pool *x509.CertPool) *nginx {
	t.Helper()
	cmd := exec.Command(nginxPath, nginxArgs(s, "-g", "daemon off;")...)
	out := &strings.Builder{}
	var mu sync.Mutex
	cmd.Stdout, cmd.Stderr = lockedWriter{&mu, out}, lockedWriter{&mu, out}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt) // SIGINT: nginx's fast shutdown
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	n := &nginx{url: "https://" + s.listen, dir: s.dir, client: &http.Client{
		Timeout:   60 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 64},
	}}
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := tls.Dial("tcp", s.listen, &tls.Config{RootCAs: pool})
		if err == nil {
			c.Close()
			return n
		}
		select {
		case <-exited:
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("nginx exited: %s\n%s", out.String(), n.errorLog())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx does not accept TLS connections on %s: %v\n%s", s.listen, err, n.errorLog())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// errorLog returns nginx's error log.
func (n *nginx) errorLog() string {
	b, _ := os.ReadFile(filepath.Join(n.dir, "error.log"))
	return string(b)
}

// accessLog returns nginx's access log lines (log_format upstream).
func (n *nginx) accessLog() []string {
	b, _ := os.ReadFile(filepath.Join(n.dir, "access.log"))
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// lockedWriter serializes writes of two streams into one builder.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// threeNodes maps the upstream servers of deploy/nginx.conf to addrs.
func threeNodes(addrs [3]string) map[string]string {
	return map[string]string{"paygate-1:8080": addrs[0], "paygate-2:8080": addrs[1], "paygate-3:8080": addrs[2]}
}

// TestNginxConfig checks deploy/nginx.conf with `nginx -t`, adapted to
// loopback, and that the adaptation refuses a file whose names moved.
func TestNginxConfig(t *testing.T) {
	t.Parallel()
	addrs := [3]string{freeAddr(t), freeAddr(t), freeAddr(t)}
	newNginxSite(t, threeNodes(addrs)) // fails the test unless nginx -t passes

	conf := deployNginxConf(t)
	s := nginxSite{dir: t.TempDir(), listen: "127.0.0.1:1", nodes: threeNodes(addrs)}
	for name, broken := range map[string]string{
		"NodeRenamed":   strings.Replace(conf, "paygate-2:8080", "gateway-2:8080", 1),
		"NodeMissing":   regexp.MustCompile(`(?m)^\s*server paygate-3:8080.*\n`).ReplaceAllString(conf, ""),
		"PortMoved":     strings.Replace(conf, "listen 8443", "listen 9443", 1),
		"NoAccessLog":   regexp.MustCompile(`(?m)^\s*access_log .*\n`).ReplaceAllString(conf, ""),
		"CertRenamed":   strings.Replace(conf, "ssl_certificate ", "#ssl_certificate ", 1),
		"NodeTwice":     strings.Replace(conf, "server paygate-3:8080", "server paygate-1:8080", 1),
		"UnknownServer": strings.Replace(conf, "server paygate-3:8080", "server paygate-4:8080", 1),
	} {
		if _, err := adaptNginx(broken, s); err == nil {
			t.Errorf("%s: adaptNginx accepted a configuration that no longer matches", name)
		}
	}
}

// fakeNode is a loopback HTTP/1 server standing in for a paygate node. It
// counts requests by method; dying nodes read a request whole and close
// the connection without answering, as a node killed mid-request does.
type fakeNode struct {
	addr  string
	posts atomic.Int32
	gets  atomic.Int32
	mu    sync.Mutex
	keys  []string // the Idempotency-Key of every POST, in order
}

func startFakeNode(t *testing.T, dying bool) *fakeNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeNode{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				if req.Method == http.MethodPost {
					f.posts.Add(1)
					f.mu.Lock()
					f.keys = append(f.keys, req.Header.Get("Idempotency-Key"))
					f.mu.Unlock()
				} else {
					f.gets.Add(1)
				}
				if dying {
					return
				}
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
			}()
		}
	}()
	return f
}

// deadAddr returns a loopback address that refuses connections.
func deadAddr(t *testing.T) string { return freeAddr(t) }

// TestNginxRetryPolicy checks, with the committed nginx.conf in front of
// stand-in nodes, that nginx retries on another node only what is safe: a
// POST without an Idempotency-Key that reached a node which died before
// answering is answered 502 and sent nowhere else (the node may have acted
// on it); the same POST with a key is sent to the next node with that key
// (paygate answers a key once: the second send gets the first one's answer,
// or 409 while it is in flight); a GET in the same case is tried on the
// next node; and a connection refused, which carries no request, moves any
// method to the next node.
func TestNginxRetryPolicy(t *testing.T) {
	t.Parallel()
	send := func(t *testing.T, n *nginx, method string, key ...string) int {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"amount":"1.00"}`)
		}
		req, _ := http.NewRequest(method, n.url+"/v1/payments", body)
		for _, k := range key {
			req.Header.Set("Idempotency-Key", k)
		}
		resp, err := n.client.Do(req)
		if err != nil {
			t.Fatalf("%s through nginx: %v", method, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	total := func(nodes []*fakeNode, method string) int {
		sum := 0
		for _, f := range nodes {
			if method == http.MethodPost {
				sum += int(f.posts.Load())
			} else {
				sum += int(f.gets.Load())
			}
		}
		return sum
	}

	t.Run("PostSentIsNotRetried", func(t *testing.T) {
		t.Parallel()
		nodes := []*fakeNode{startFakeNode(t, true), startFakeNode(t, true), startFakeNode(t, true)}
		s, pool := newNginxSite(t, threeNodes([3]string{nodes[0].addr, nodes[1].addr, nodes[2].addr}))
		n := startNginx(t, s, pool)
		if got := send(t, n, http.MethodPost); got != http.StatusBadGateway {
			t.Errorf("POST to a node dying mid-request: %d, want 502", got)
		}
		if got := total(nodes, http.MethodPost); got != 1 {
			t.Errorf("the POST reached %d nodes, want exactly 1: nginx must not resend a POST it sent", got)
		}
	})

	t.Run("KeyedPostSentIsRetried", func(t *testing.T) {
		t.Parallel()
		dying := []*fakeNode{startFakeNode(t, true), startFakeNode(t, true)}
		alive := startFakeNode(t, false)
		s, pool := newNginxSite(t, threeNodes([3]string{dying[0].addr, dying[1].addr, alive.addr}))
		n := startNginx(t, s, pool)
		for i := range 3 {
			key := fmt.Sprintf("key-%d", i)
			if got := send(t, n, http.MethodPost, key); got != http.StatusOK {
				t.Errorf("POST %d with a key and one live node of three: %d, want 200", i, got)
			}
		}
		alive.mu.Lock()
		defer alive.mu.Unlock()
		if want := []string{"key-0", "key-1", "key-2"}; fmt.Sprint(alive.keys) != fmt.Sprint(want) {
			t.Errorf("the live node got POSTs with keys %q, want %q: the key must travel with the retry", alive.keys, want)
		}
	})

	t.Run("GetSentIsRetried", func(t *testing.T) {
		t.Parallel()
		dying := []*fakeNode{startFakeNode(t, true), startFakeNode(t, true)}
		alive := startFakeNode(t, false)
		s, pool := newNginxSite(t, threeNodes([3]string{dying[0].addr, dying[1].addr, alive.addr}))
		n := startNginx(t, s, pool)
		for i := range 3 {
			if got := send(t, n, http.MethodGet); got != http.StatusOK {
				t.Errorf("GET %d with one live node of three: %d, want 200", i, got)
			}
		}
		if alive.gets.Load() != 3 {
			t.Errorf("the live node served %d GETs, want 3", alive.gets.Load())
		}
	})

	t.Run("RefusedMovesOn", func(t *testing.T) {
		t.Parallel()
		alive := startFakeNode(t, false)
		s, pool := newNginxSite(t, threeNodes([3]string{deadAddr(t), alive.addr, deadAddr(t)}))
		n := startNginx(t, s, pool)
		for i := range 6 {
			if got := send(t, n, http.MethodPost); got != http.StatusOK {
				t.Errorf("POST %d with two nodes refusing connections: %d, want 200", i, got)
			}
		}
		if alive.posts.Load() != 6 {
			t.Errorf("the live node got %d POSTs, want 6", alive.posts.Load())
		}
	})
}
