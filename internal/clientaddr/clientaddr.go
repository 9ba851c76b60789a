// Package clientaddr decides which address a request comes from: the peer
// of the connection, or, when the peer is a trusted reverse proxy, the
// client that proxy names in X-Forwarded-For (decisions §15). The address
// is computed once per request, kept in the request's context, and read
// from there by everything that keys on it: the failed-authentication
// limit, billing.ipAddress's default, the dashboard's sign-in throttle,
// sessions, the audit log and the request log.
package clientaddr

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Proxies is the list of trusted proxies (serve --trusted-proxies). The
// zero value trusts nobody: X-Forwarded-For is then ignored entirely.
type Proxies []netip.Prefix

// Parse reads a comma-separated list of CIDR prefixes; a bare address is
// the prefix of that one address (/32 or /128). Spaces around entries are
// ignored; an empty list is no proxies. An entry that is neither fails,
// naming the entry.
func Parse(list string) (Proxies, error) {
	var out Proxies
	for _, e := range strings.Split(list, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			if strings.TrimSpace(list) == "" {
				continue
			}
			return nil, fmt.Errorf("empty entry in %q", list)
		}
		if strings.Contains(e, "/") {
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, fmt.Errorf("%q is not an address or CIDR prefix", e)
			}
			if p.Addr().Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(e)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("%q is not an address or CIDR prefix", e)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// String writes the list as Parse reads it.
func (p Proxies) String() string {
	s := make([]string, len(p))
	for i, pr := range p {
		s[i] = pr.String()
	}
	return strings.Join(s, ",")
}

// trusts reports whether a is the address of a trusted proxy.
func (p Proxies) trusts(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, pr := range p {
		if pr.Contains(a) {
			return true
		}
	}
	return false
}

// Resolve returns the client address of a request from peer remoteAddr
// (host:port, as http.Request.RemoteAddr) carrying the X-Forwarded-For
// header values xff, in order. When the peer is not a trusted proxy, or
// there are none, it is the peer's host. When it is, the client is the
// rightmost address of the header (all values joined by commas, in order)
// that is not trusted; when every address is trusted, the leftmost one;
// when the header is missing, or an entry that would decide is not an
// address, the peer. Entries may carry a port (1.2.3.4:80, [::1]:80).
func (p Proxies) Resolve(remoteAddr string, xff []string) string {
	peer := peerHost(remoteAddr)
	if len(p) == 0 || len(xff) == 0 {
		return peer
	}
	pa, err := netip.ParseAddr(peer)
	if err != nil || !p.trusts(pa) {
		return peer
	}
	entries := strings.Split(strings.Join(xff, ","), ",")
	var leftmost netip.Addr
	for i := len(entries) - 1; i >= 0; i-- {
		a, ok := parseEntry(entries[i])
		if !ok {
			return peer
		}
		if !p.trusts(a) {
			return a.String()
		}
		leftmost = a
	}
	return leftmost.String()
}

// ClientAddr is Resolve for a request.
func (p Proxies) ClientAddr(r *http.Request) string {
	return p.Resolve(r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
}

// parseEntry reads one X-Forwarded-For entry: an address, with or without
// a port, IPv6 with or without brackets. IPv4-mapped IPv6 addresses are
// returned as IPv4, zones are dropped.
func parseEntry(e string) (netip.Addr, bool) {
	e = strings.TrimSpace(e)
	if e == "" {
		return netip.Addr{}, false
	}
	if a, err := netip.ParseAddr(e); err == nil {
		return a.Unmap().WithZone(""), true
	}
	if ap, err := netip.ParseAddrPort(e); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	if s, ok := strings.CutPrefix(e, "["); ok {
		if s, ok := strings.CutSuffix(s, "]"); ok {
			if a, err := netip.ParseAddr(s); err == nil {
				return a.Unmap().WithZone(""), true
			}
		}
	}
	return netip.Addr{}, false
}

// peerHost is the host of a host:port, or the whole string when it has no
// port.
func peerHost(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	return host
}

type ctxKey struct{}

// NewContext returns ctx carrying addr as the request's client address.
func NewContext(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, ctxKey{}, addr)
}

// FromRequest returns the client address stored in r's context by the
// server's entry point, or, when none was stored (a handler used on its
// own), the peer's host: a forwarding header is never trusted by default.
func FromRequest(r *http.Request) string {
	if a, ok := r.Context().Value(ctxKey{}).(string); ok {
		return a
	}
	return peerHost(r.RemoteAddr)
}
