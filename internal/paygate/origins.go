package paygate

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MaxAllowedOrigins is the most origins a merchant may allow to embed its
// card fields in one mode (decisions §19).
const MaxAllowedOrigins = 20

// AuditOriginsChanged is the audit action of a change of the origins
// allowed to embed a merchant's card fields.
const AuditOriginsChanged = "origins.changed"

// TestModeFrameOrigins are the sources that may always embed the card
// fields of a test-mode key (decisions §19), whatever the merchant lists:
// any port of localhost and 127.0.0.1 over http. They are CSP sources, not
// origins a merchant stores.
var TestModeFrameOrigins = []string{"http://localhost:*", "http://127.0.0.1:*"}

// NormalizeOrigin returns the origin s names in the one form stored and
// compared: a lower-case scheme and host, and the port only when it is not
// the scheme's default ("https://Shop.Example:443" is
// "https://shop.example"). An origin is http or https, a host name (letters,
// digits, hyphens and dots) or an IPv4 address, and an optional port: no
// user, path (a lone "/" is dropped), query, fragment or wildcard. Live mode
// takes https only, since card fields on a page served in the clear could
// be altered on their way.
//
// Errors: INVALID_REQUEST with param origins, its message naming s.
func NormalizeOrigin(mode Mode, s string) (string, error) {
	bad := func(why string) error {
		return Errorf(CodeInvalidRequest, "origins", "%q is not an allowed origin: %s", clip(s), why)
	}
	raw := strings.TrimSpace(s)
	if raw == "" {
		return "", bad("it is empty")
	}
	if strings.ContainsAny(raw, "*") {
		return "", bad("wildcards are not allowed; list each origin")
	}
	if strings.ContainsAny(raw, " \t\r\n;,'\"\\") {
		return "", bad("it must be scheme://host[:port]")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.Host == "" {
		return "", bad("it must be scheme://host[:port]")
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme != "http" && scheme != "https":
		return "", bad("the scheme must be https or http")
	case mode == ModeLive && scheme != "https":
		return "", bad("live mode takes https origins only")
	case u.User != nil:
		return "", bad("it must not carry a user name or password")
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.ForceQuery, u.Fragment != "", strings.Contains(raw, "#"):
		return "", bad("an origin has no path, query or fragment")
	}
	host := strings.ToLower(u.Hostname())
	if !validHost(host) {
		return "", bad("the host must be a domain name or an IPv4 address")
	}
	port := u.Port()
	if strings.HasSuffix(u.Host, ":") {
		return "", bad("the port is empty")
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || len(port) > 5 {
			return "", bad("the port must be 1 to 65535")
		}
		if (scheme == "https" && n == 443) || (scheme == "http" && n == 80) {
			port = ""
		} else {
			port = strconv.Itoa(n)
		}
	}
	out := scheme + "://" + host
	if port != "" {
		out += ":" + port
	}
	return out, nil
}

// NormalizeOrigins normalizes each origin of list (NormalizeOrigin),
// drops duplicates, keeps the first order, and refuses more than
// MaxAllowedOrigins. An empty list is valid: no origin but, in test mode,
// TestModeFrameOrigins may embed the fields.
func NormalizeOrigins(mode Mode, list []string) ([]string, error) {
	out := make([]string, 0, len(list))
	seen := make(map[string]bool, len(list))
	for _, s := range list {
		o, err := NormalizeOrigin(mode, s)
		if err != nil {
			return nil, err
		}
		if !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	if len(out) > MaxAllowedOrigins {
		return nil, Errorf(CodeInvalidRequest, "origins", "at most %d origins may be allowed, not %d", MaxAllowedOrigins, len(out))
	}
	return out, nil
}

// validHost reports whether host is a dotted-quad IPv4 address or a domain
// name of labels of letters, digits and inner hyphens, 253 characters at
// most. A name whose last label is a number ("1.2.3", "256.1.1.1",
// "10.0x1") is refused: a browser reads such a host as an IPv4 address in
// some other spelling, so the origin stored would not be the one a page has.
func validHost(host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		return ip.To4() != nil && !strings.Contains(host, ":")
	}
	if host == "" || len(host) > 253 {
		return false
	}
	labels := strings.Split(host, ".")
	if numericLabel(labels[len(labels)-1]) {
		return false
	}
	for _, label := range labels {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// numericLabel reports whether a label is a number as the URL standard's
// IPv4 parser reads one: decimal digits, or 0x followed by hex digits.
func numericLabel(label string) bool {
	digits := "0123456789"
	if rest, ok := strings.CutPrefix(label, "0x"); ok {
		label, digits = rest, "0123456789abcdef"
		if label == "" {
			return true
		}
	}
	if label == "" {
		return false
	}
	for i := 0; i < len(label); i++ {
		if !strings.ContainsRune(digits, rune(label[i])) {
			return false
		}
	}
	return true
}

// clip shortens what an error message repeats of its input.
func clip(s string) string {
	const most = 80
	if len(s) > most {
		return s[:most] + "…"
	}
	return s
}

// AllowsOrigin reports whether origin (as a browser sends it, e.g. in a
// page's location.origin) may embed the card fields of a key of mode whose
// merchant allows the origins allowed: one of them, or in test mode any
// http origin of localhost or 127.0.0.1.
func AllowsOrigin(mode Mode, allowed []string, origin string) bool {
	o, err := NormalizeOrigin(ModeTest, origin)
	if err != nil {
		return false
	}
	for _, a := range allowed {
		if a == o {
			return true
		}
	}
	if mode != ModeTest {
		return false
	}
	u, err := url.Parse(o)
	if err != nil || u.Scheme != "http" {
		return false
	}
	h := u.Hostname()
	return h == "localhost" || h == "127.0.0.1"
}

// OriginsStore is the part of Store for the origins allowed to embed a
// merchant's card fields. A change is a unit operation (OriginsChange).
type OriginsStore interface {
	// AllowedOrigins returns the origins allowed to embed the card fields
	// of (merchant, mode), in the order they were given; none (an empty,
	// non-nil slice) when none were, or the merchant does not exist.
	AllowedOrigins(ctx context.Context, merchantID string, mode Mode) ([]string, error)
}

// OriginsChange is a unit operation: it replaces the origins allowed to
// embed the card fields of (MerchantID, Mode) by Origins (none clears
// them). It fails the unit with NOT_FOUND when the merchant does not exist
// and with INVALID_REQUEST (param origins) when Origins is not what
// NormalizeOrigins returns for it; a caller audits it with an AuditEntry
// of action AuditOriginsChanged in the same unit.
type OriginsChange struct {
	MerchantID string
	Mode       Mode
	Origins    []string
	At         time.Time
}

func (OriginsChange) unitOp() {}

// Validate checks that the origins are valid, normalized and distinct.
func (c OriginsChange) Validate() error {
	norm, err := NormalizeOrigins(c.Mode, c.Origins)
	if err != nil {
		return err
	}
	if len(norm) != len(c.Origins) {
		return Errorf(CodeInvalidRequest, "origins", "the origins must be distinct")
	}
	for i := range norm {
		if norm[i] != c.Origins[i] {
			return Errorf(CodeInvalidRequest, "origins", "%q is not normalized (%q)", clip(c.Origins[i]), norm[i])
		}
	}
	return nil
}

// Describe is a short note of the change for the audit log.
func (c OriginsChange) Describe() string {
	if len(c.Origins) == 0 {
		return "none"
	}
	return strings.Join(c.Origins, " ")
}
