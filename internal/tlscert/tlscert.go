// Package tlscert serves HTTPS from a certificate and key held in files
// and takes up a new pair when the files change, without a restart: a
// certificate renewed by an operator's tool (certbot, cert-manager, a
// deployment) is in use within a second, while connections opened under
// the old one carry on (decisions §16).
package tlscert

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultInterval is the least time between two looks at the files.
const DefaultInterval = time.Second

// Options tune a Pair. The zero value is ready to use.
type Options struct {
	// Interval is the least time between two looks at the files' metadata
	// (default DefaultInterval). A look is a stat of each file, made by the
	// handshake that finds the interval past.
	Interval time.Duration
	// Logger receives a line when a new pair is taken up or refused.
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Pair is a certificate and key read from two files, re-read when either
// file changes. Its GetCertificate serves the last pair that loaded: a pair
// that does not load (half written, a key that does not match the
// certificate, a file missing) never replaces a good one. It is safe for
// concurrent use.
type Pair struct {
	certFile, keyFile string
	interval          time.Duration
	log               *slog.Logger
	now               func() time.Time

	cur  atomic.Pointer[tls.Certificate]
	next atomic.Int64 // Unix nanoseconds of the next look

	// mu is held by the one handshake looking at the files; others serve
	// the current pair meanwhile.
	mu     sync.Mutex
	loaded stamp // the files of cur
	// failed is the files that last failed to load: they are not read
	// again until they change. missing is the last failure to stat them,
	// warned about once.
	failed  stamp
	missing string
}

// Load reads the pair from certFile and keyFile. It fails when either file
// cannot be read or parsed or the key is not the certificate's.
func Load(certFile, keyFile string, o Options) (*Pair, error) {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	p := &Pair{certFile: certFile, keyFile: keyFile, interval: o.Interval, log: o.Logger, now: o.Now}
	st, err := statPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	cert, err := loadPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	p.cur.Store(cert)
	p.loaded = st
	p.next.Store(p.now().Add(p.interval).UnixNano())
	return p, nil
}

// Certificate returns the pair in use.
func (p *Pair) Certificate() *tls.Certificate { return p.cur.Load() }

// GetCertificate is tls.Config's GetCertificate: the pair in use, after a
// look at the files when the interval has passed since the last one.
func (p *Pair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	p.refresh()
	return p.cur.Load(), nil
}

// ServerConfig returns the TLS configuration of an HTTPS server on the
// pair: TLS 1.2 and 1.3 only. HTTP/2 is offered by net/http's server.
func (p *Pair) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: p.GetCertificate,
	}
}

// refresh takes up the files' pair when their metadata changed since the
// pair in use was read and the new pair loads.
func (p *Pair) refresh() {
	now := p.now()
	if now.UnixNano() < p.next.Load() {
		return
	}
	if !p.mu.TryLock() {
		return // another handshake is looking
	}
	defer p.mu.Unlock()
	p.next.Store(now.Add(p.interval).UnixNano())
	// Stat before reading: a file that changes while it is read has
	// changed again at the next look, and is read again then.
	st, err := statPair(p.certFile, p.keyFile)
	if err != nil {
		if err.Error() != p.missing {
			p.missing = err.Error()
			p.refuse(err)
		}
		return
	}
	p.missing = ""
	if st.same(p.loaded) || st.same(p.failed) {
		return
	}
	cert, err := loadPair(p.certFile, p.keyFile)
	if err == nil && now.After(cert.Leaf.NotAfter) {
		// An expired certificate copied over a good one is a mistake
		// every client would pay for: keep the one in use.
		err = fmt.Errorf("TLS certificate %s expired at %s", p.certFile, cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if err != nil {
		p.failed = st
		p.refuse(err)
		return
	}
	p.cur.Store(cert)
	p.loaded, p.failed = st, stamp{}
	p.log.Info("TLS certificate reloaded", "subject", cert.Leaf.Subject.String(),
		"serial", cert.Leaf.SerialNumber.String(), "not_after", cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
}

// refuse says that the pair in use stays.
func (p *Pair) refuse(err error) {
	p.log.Warn("TLS certificate files changed but do not load; the previous certificate stays in use", "error", err.Error())
}

// stamp is what is known of the two files without reading them.
type stamp struct{ cert, key os.FileInfo }

// same reports whether both files are the ones of o, unchanged: the same
// file (device and inode: a rename or a new symbolic link target is a
// change), modification time and size.
func (s stamp) same(o stamp) bool {
	return sameFile(s.cert, o.cert) && sameFile(s.key, o.key)
}

func sameFile(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size()
}

func statPair(certFile, keyFile string) (stamp, error) {
	c, err := os.Stat(certFile)
	if err != nil {
		return stamp{}, fmt.Errorf("TLS certificate: %w", err)
	}
	k, err := os.Stat(keyFile)
	if err != nil {
		return stamp{}, fmt.Errorf("TLS key: %w", err)
	}
	return stamp{cert: c, key: k}, nil
}

// loadPair reads and checks the pair: the key must be the certificate's.
// The error names the files, never their contents.
func loadPair(certFile, keyFile string) (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS pair %s, %s: %w", certFile, keyFile, err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("TLS certificate %s: %w", certFile, err)
		}
	}
	return &cert, nil
}

// HSTSValue is the Strict-Transport-Security header of every HTTPS answer:
// browsers keep to HTTPS for this host for a year.
const HSTSValue = "max-age=31536000"

// HSTS sets Strict-Transport-Security on every answer to a request that
// came over TLS, before h writes anything.
func HSTS(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil {
			w.Header().Set("Strict-Transport-Security", HSTSValue)
		}
		h.ServeHTTP(w, r)
	})
}
