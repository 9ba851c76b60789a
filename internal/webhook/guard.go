package webhook

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"syscall"

	"github.com/paygate/paygate/internal/paygate"
)

// The SSRF guard of decisions.md section 11. Live-mode endpoints must use
// https and must not reach loopback, private, link-local, multicast,
// unspecified or otherwise non-public addresses. The same rules run when an
// endpoint is set (CheckEndpointURL, on the URL as written) and at every
// delivery attempt (CheckEndpointURL again, then CheckAddr on every address
// actually dialled, from a net.Dialer Control hook, so that a DNS name that
// later resolves to an internal address is refused too). Test-mode
// endpoints may use http and local addresses.

// ErrRefused wraps every refusal of the guard.
var ErrRefused = errors.New("refused")

// blockedPrefixes are ranges that are not public destinations beyond what
// netip's predicates cover: "this network", carrier-grade NAT, IETF
// protocol assignments, benchmarking, reserved (with broadcast), IPv4-
// compatible IPv6, site-local IPv6, and NAT64 prefixes (which embed an IPv4
// address that may be private).
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("fec0::/10"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// CheckAddr returns nil when addr is a public unicast address a live-mode
// delivery may reach, and an error wrapping ErrRefused that names the class
// otherwise. IPv4-mapped IPv6 addresses are judged as the IPv4 address they
// carry; a zone is ignored.
func CheckAddr(addr netip.Addr) error {
	if !addr.IsValid() {
		return fmt.Errorf("%w: not an IP address", ErrRefused)
	}
	addr = addr.WithZone("").Unmap()
	switch {
	case addr.IsLoopback():
		return fmt.Errorf("%w: %s is a loopback address", ErrRefused, addr)
	case addr.IsPrivate():
		return fmt.Errorf("%w: %s is a private address", ErrRefused, addr)
	case addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast():
		return fmt.Errorf("%w: %s is a link-local address", ErrRefused, addr)
	case addr.IsMulticast(), addr.IsInterfaceLocalMulticast():
		return fmt.Errorf("%w: %s is a multicast address", ErrRefused, addr)
	case addr.IsUnspecified():
		return fmt.Errorf("%w: %s is the unspecified address", ErrRefused, addr)
	}
	for _, p := range blockedPrefixes {
		if p.Contains(addr) {
			return fmt.Errorf("%w: %s is not a public address", ErrRefused, addr)
		}
	}
	return nil
}

// Policy is where deliveries may go. The zero value is the default of
// decisions.md section 11: the address guard in live mode only.
type Policy struct {
	// GuardTestMode applies the live-mode address guard to test-mode
	// endpoints too (serve --allow-private-test-webhooks=false, decisions.md
	// section 15): no loopback, private, link-local, multicast or
	// unspecified address, when set and on every address dialled. Test mode
	// may still use http.
	GuardTestMode bool
}

// Guarded reports whether the address guard applies to endpoints of mode.
func (p Policy) Guarded(mode paygate.Mode) bool {
	return mode == paygate.ModeLive || p.GuardTestMode
}

// CheckEndpointURL applies the rules that the URL alone can show. Every
// endpoint needs http or https; live mode needs https. Where the address
// guard applies (Guarded), the host must be neither localhost (or a name
// under .localhost) nor a literal address that CheckAddr refuses, nor a
// numeric form some clients read as an IPv4 address (127.1, 2130706433,
// 0x7f.0.0.1). A DNS name passes: its addresses are checked when they are
// dialled. Errors wrap ErrRefused.
func (p Policy) CheckEndpointURL(u *url.URL, mode paygate.Mode) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: the scheme must be http or https, not %q", ErrRefused, u.Scheme)
	}
	if mode == paygate.ModeLive && u.Scheme != "https" {
		return fmt.Errorf("%w: a live-mode endpoint must use https, not %s", ErrRefused, u.Scheme)
	}
	if !p.Guarded(mode) {
		return nil
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return fmt.Errorf("%w: the URL has no host", ErrRefused)
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return fmt.Errorf("%w: a %s-mode endpoint must not be %s", ErrRefused, mode, host)
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		if numericHost(host) {
			return fmt.Errorf("%w: host %q is neither a DNS name nor a dotted-quad address", ErrRefused, host)
		}
		return nil // a DNS name: its addresses are checked when dialled
	}
	return CheckAddr(addr)
}

// CheckEndpointURL is Policy{}.CheckEndpointURL: the guard in live mode
// only.
func CheckEndpointURL(u *url.URL, mode paygate.Mode) error {
	return Policy{}.CheckEndpointURL(u, mode)
}

// PrivateHost reports whether the host of rawURL is, as written, one the
// address guard refuses (localhost, or a literal non-public address): what
// an attempt recorded before its connected address was recorded is judged
// by.
func PrivateHost(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return true
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || numericHost(host) {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && CheckAddr(addr) != nil
}

// numericHost reports whether the last label of host is a number (decimal,
// octal or 0x hex), which makes it an address in some parsers' eyes; no DNS
// name has a numeric last label.
func numericHost(host string) bool {
	last := host[strings.LastIndex(host, ".")+1:]
	if last == "" {
		return false
	}
	if h, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// checkDial is a net.Dialer Control hook: it refuses a connection to an
// address that CheckAddr refuses. It runs after name resolution, on the
// address about to be connected, for every address tried.
func checkDial(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot judge the address %q of %s", ErrRefused, address, network)
	}
	return CheckAddr(ap.Addr())
}
