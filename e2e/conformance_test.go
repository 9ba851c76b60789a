package e2e

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paygate/paygate/internal/apidoc/apidoctest"
)

// Every exchange the tests make with a gateway is checked against the
// API's OpenAPI description (docs/openapi.json, the document the gateway
// serves): the HTTP clients of the harness send their requests through
// conformingTransport, which hands each request and its answer to an
// apidoctest.Checker and fails the test of the gateway on any departure.
// A test that sends an invalid request on purpose needs nothing special:
// the checker then only requires that the answer conforms and refuses the
// request. Exchanges with anything but a gateway (a webhook receiver, a
// proxy in front of a gateway) pass unchecked; the proxy's own requests to
// the gateway are checked.

// checker is loaded by TestMain.
var checker *apidoctest.Checker

// checked counts the exchanges checked, and checking the time they took,
// for TestMain's summary.
var checked, checking atomic.Int64

// gateways maps the address (host:port) of each running gateway to it, so
// that the transport knows whose test an exchange belongs to.
var gateways sync.Map

// watch registers g, listening at addr, for checking; its cleanup stops
// reporting (call it after g has stopped).
func watch(addr string, g *gateway) (cleanup func()) {
	gateways.Store(addr, g)
	return func() {
		gateways.CompareAndDelete(addr, g)
		g.mu.Lock()
		g.unwatched = true
		g.mu.Unlock()
	}
}

// nonconforming fails g's test with err, unless the test is over.
func (g *gateway) nonconforming(req *http.Request, status int, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.unwatched {
		return
	}
	g.t.Errorf("%s %s → %d does not conform to docs/openapi.json: %v", req.Method, req.URL.RequestURI(), status, err)
}

// conformingTransport is an http.RoundTripper that checks every exchange
// with a gateway against the document (see above).
type conformingTransport struct {
	next http.RoundTripper
	// report is told of an exchange that does not conform; nil fails the
	// gateway's test (gateway.nonconforming).
	report func(g *gateway, req *http.Request, status int, err error)
}

func (t conformingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	v, ok := gateways.Load(req.URL.Host)
	if !ok || !apidoctest.Described(req.URL) {
		return t.next.RoundTrip(req)
	}
	g := v.(*gateway)
	var reqBody []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		// RoundTrip must not change req: its copy carries the body on.
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		// A connection cut under the answer (a killed server): the test
		// sees what it would have seen, and a partial answer is not
		// checked.
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
		return resp, nil
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	checked.Add(1)
	start := time.Now()
	err = checker.Check(req, reqBody, resp.StatusCode, resp.Header, body)
	checking.Add(int64(time.Since(start)))
	if err != nil {
		if t.report != nil {
			t.report(g, req, resp.StatusCode, err)
		} else {
			g.nonconforming(req, resp.StatusCode, err)
		}
	}
	return resp, nil
}

// CloseIdleConnections closes the idle connections of the transport
// underneath, as http.Client.CloseIdleConnections expects.
func (t conformingTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
