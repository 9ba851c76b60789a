package webhook

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addr  string
		class string // "" when allowed
	}{
		// Public addresses.
		{"8.8.8.8", ""},
		{"93.184.215.14", ""},
		{"2606:4700::1111", ""},
		{"2001:4860:4860::8888", ""},
		{"::ffff:8.8.8.8", ""},
		// Loopback.
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		// Private.
		{"10.0.0.1", "private"},
		{"172.16.5.4", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"fd00::1", "private"},
		{"fc00::1", "private"},
		{"::ffff:10.0.0.1", "private"},
		{"::ffff:192.168.0.1", "private"},
		// Link-local (cloud metadata lives here).
		{"169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"::ffff:169.254.169.254", "link-local"},
		{"ff02::1", "link-local"}, // link-local multicast
		// Multicast.
		{"224.0.0.1", "link-local"}, // 224.0.0.0/24 is link-local multicast
		{"239.1.2.3", "multicast"},
		{"ff05::2", "multicast"},
		{"ff01::1", "multicast"}, // interface-local
		{"::ffff:239.1.2.3", "multicast"},
		// Unspecified.
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"::ffff:0.0.0.0", "unspecified"},
		// Other non-public ranges.
		{"0.1.2.3", "not a public"},
		{"100.64.0.1", "not a public"},
		{"192.0.0.8", "not a public"},
		{"198.18.0.1", "not a public"},
		{"240.0.0.1", "not a public"},
		{"255.255.255.255", "not a public"},
		{"::a00:1", "not a public"},        // IPv4-compatible 10.0.0.1
		{"fec0::1", "not a public"},        // site-local
		{"64:ff9b::a00:1", "not a public"}, // NAT64 of 10.0.0.1
		{"64:ff9b:1::1", "not a public"},
	} {
		t.Run(c.addr, func(t *testing.T) {
			err := CheckAddr(netip.MustParseAddr(c.addr))
			if c.class == "" {
				if err != nil {
					t.Fatalf("CheckAddr(%s): %v, want allowed", c.addr, err)
				}
				return
			}
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.class) {
				t.Fatalf("CheckAddr(%s): %v, want a refusal naming %q", c.addr, err, c.class)
			}
		})
	}
	if err := CheckAddr(netip.Addr{}); !errors.Is(err, ErrRefused) {
		t.Errorf("the zero address: %v, want refused", err)
	}
}

func TestCheckEndpointURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url  string
		mode paygate.Mode
		ok   bool
	}{
		{"http://localhost:3000/hook", paygate.ModeTest, true},
		{"http://127.0.0.1:3000/hook", paygate.ModeTest, true},
		{"http://10.0.0.1/hook", paygate.ModeTest, true},
		{"ftp://example.com/hook", paygate.ModeTest, false},
		{"https://hooks.example.com/x", paygate.ModeLive, true},
		{"https://hooks.example.com:8443/x?token=a", paygate.ModeLive, true},
		{"https://8.8.8.8/x", paygate.ModeLive, true},
		{"https://[2606:4700::1111]/x", paygate.ModeLive, true},
		{"https://example.123x/x", paygate.ModeLive, true},
		{"http://hooks.example.com/x", paygate.ModeLive, false},
		{"https://127.0.0.1/x", paygate.ModeLive, false},
		{"https://127.0.0.2/x", paygate.ModeLive, false},
		{"https://10.0.0.1/x", paygate.ModeLive, false},
		{"https://localhost/x", paygate.ModeLive, false},
		{"https://LOCALHOST./x", paygate.ModeLive, false},
		{"https://api.localhost/x", paygate.ModeLive, false},
		{"https://[::1]/x", paygate.ModeLive, false},
		{"https://[::ffff:127.0.0.1]/x", paygate.ModeLive, false},
		{"https://[fc00::1]/x", paygate.ModeLive, false},
		{"https://[fe80::1%25eth0]/x", paygate.ModeLive, false},
		{"https://[ff02::1]/x", paygate.ModeLive, false},
		{"https://169.254.169.254/latest", paygate.ModeLive, false},
		{"https://0.0.0.0/x", paygate.ModeLive, false},
		{"https://255.255.255.255/x", paygate.ModeLive, false},
		{"https://192.168.0.10./x", paygate.ModeLive, false},
		{"https://2130706433/x", paygate.ModeLive, false},
		{"https://017700000001/x", paygate.ModeLive, false},
		{"https://127.1/x", paygate.ModeLive, false},
		{"https://0x7f.0.0.1/x", paygate.ModeLive, false},
		{"https://0x/x", paygate.ModeLive, false},
	} {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckEndpointURL(u, c.mode)
		if (err == nil) != c.ok {
			t.Errorf("%s in %s mode: error %v, want ok=%v", c.url, c.mode, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrRefused) {
			t.Errorf("%s: error %v does not wrap ErrRefused", c.url, err)
		}
	}
}

// TestLiveClientRefusesDialledAddresses checks the guard where DNS cannot
// fool it: at the address actually dialled. "localhost" passes no URL
// check here; the dialer's control hook refuses the loopback address the
// name resolves to, and the receiver never sees a request.
func TestLiveClientRefusesDialledAddresses(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]

	live := newClient(2*time.Second, checkDial)
	for _, u := range []string{"http://localhost:" + port + "/", "http://127.0.0.1:" + port + "/", "http://[::ffff:127.0.0.1]:" + port + "/"} {
		resp, err := live.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Errorf("live client reached %s", u)
			continue
		}
		if !errors.Is(err, ErrRefused) {
			t.Errorf("live client to %s: %v, want a refusal", u, err)
		}
		if msg := describe(err, time.Second); !strings.Contains(msg, "loopback") || strings.Contains(msg, port) {
			t.Errorf("described as %q, want the address class without the URL", msg)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the receiver saw %d requests through the live client", n)
	}
	// The test-mode client may reach loopback.
	resp, err := newClient(2*time.Second, nil).Get("http://localhost:" + port + "/")
	if err != nil {
		t.Fatalf("test client: %v", err)
	}
	resp.Body.Close()
}
