package clientaddr

import (
	"context"
	"net/http/httptest"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"  ", ""},
		{"10.0.0.0/8", "10.0.0.0/8"},
		{"10.1.2.3/8", "10.0.0.0/8"},
		{"192.0.2.1", "192.0.2.1/32"},
		{"2001:db8::1", "2001:db8::1/128"},
		{"10.0.0.0/8, 2001:db8::/32 ,127.0.0.1", "10.0.0.0/8,2001:db8::/32,127.0.0.1/32"},
		{"::ffff:192.0.2.1", "192.0.2.1/32"},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8"},
	} {
		p, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if got := p.String(); got != c.want {
			t.Errorf("Parse(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, bad := range []string{"nonsense", "10.0.0.0/33", "10.0.0.1,", "10.0.0.1,,10.0.0.2", "192.0.2.1:80", "fe80::1%eth0", "example.com"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	proxies, err := Parse("10.0.0.0/8,2001:db8:ffff::/48,127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		proxies Proxies
		peer    string
		xff     []string
		want    string
	}{
		{"NoProxiesIgnoresHeader", nil, "10.0.0.5:4000", []string{"198.51.100.7"}, "10.0.0.5"},
		{"NoProxiesIPv6Peer", nil, "[2001:db8::1]:4000", []string{"198.51.100.7"}, "2001:db8::1"},
		{"SpoofFromUntrustedPeer", proxies, "203.0.113.9:4000", []string{"198.51.100.7"}, "203.0.113.9"},
		{"TrustedPeerNoHeader", proxies, "10.0.0.5:4000", nil, "10.0.0.5"},
		{"TrustedPeerEmptyHeader", proxies, "10.0.0.5:4000", []string{""}, "10.0.0.5"},
		{"TrustedPeerOneHop", proxies, "10.0.0.5:4000", []string{"198.51.100.7"}, "198.51.100.7"},
		{"ChainRightmostUntrusted", proxies, "10.0.0.5:4000", []string{"203.0.113.1, 198.51.100.7, 10.0.0.9"}, "198.51.100.7"},
		{"ChainOverSeveralHeaders", proxies, "10.0.0.5:4000", []string{"203.0.113.1, 198.51.100.7", "10.0.0.9,10.0.0.8"}, "198.51.100.7"},
		{"SpoofedLeftPartIgnored", proxies, "127.0.0.1:4000", []string{"1.2.3.4", "198.51.100.7"}, "198.51.100.7"},
		{"AllTrustedLeftmost", proxies, "10.0.0.5:4000", []string{"10.0.0.1, 10.0.0.2"}, "10.0.0.1"},
		{"Ports", proxies, "10.0.0.5:4000", []string{"198.51.100.7:5555, 10.0.0.9:80"}, "198.51.100.7"},
		{"IPv6", proxies, "[2001:db8:ffff::2]:443", []string{"2001:db8:1::7, 2001:db8:ffff::3"}, "2001:db8:1::7"},
		{"IPv6Brackets", proxies, "[2001:db8:ffff::2]:443", []string{"[2001:db8:1::7]:5000"}, "2001:db8:1::7"},
		{"IPv6BracketsNoPort", proxies, "[2001:db8:ffff::2]:443", []string{"[2001:db8:1::7]"}, "2001:db8:1::7"},
		{"MappedIPv4", proxies, "[::ffff:10.0.0.5]:443", []string{"::ffff:198.51.100.7"}, "198.51.100.7"},
		{"UnparsableDecidingEntry", proxies, "10.0.0.5:4000", []string{"198.51.100.7, unknown"}, "10.0.0.5"},
		{"UnparsableBehindClient", proxies, "10.0.0.5:4000", []string{"garbage, 198.51.100.7"}, "198.51.100.7"},
		{"Garbage", proxies, "10.0.0.5:4000", []string{"\x00;drop"}, "10.0.0.5"},
		{"PeerWithoutPort", proxies, "10.0.0.5", []string{"198.51.100.7"}, "198.51.100.7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.proxies.Resolve(c.peer, c.xff); got != c.want {
				t.Errorf("Resolve(%q, %q) = %q, want %q", c.peer, c.xff, got, c.want)
			}
		})
	}
}

func TestFromRequest(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "10.0.0.5:4000"
	r.Header.Set("X-Forwarded-For", "198.51.100.7")
	if got := FromRequest(r); got != "10.0.0.5" {
		t.Errorf("without a stored address: %q, want the peer", got)
	}
	r = r.WithContext(NewContext(context.Background(), "198.51.100.7"))
	if got := FromRequest(r); got != "198.51.100.7" {
		t.Errorf("with a stored address: %q", got)
	}
}
