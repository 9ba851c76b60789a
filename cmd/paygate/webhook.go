package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/paygate/paygate/internal/paygate"
)

// maxWebhookURL bounds the length of an endpoint URL.
const maxWebhookURL = 2048

// webhookSet is the --json output of webhook set.
type webhookSet struct {
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

func cmdWebhookSet(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("webhook set", "--merchant ID --mode test|live --url URL [--events a,b] [--rotate-secret] [--json] [--database-url URL]")
	var dbURL, merchantID, mode, rawURL string
	var events []string
	var rotate, asJSON bool
	fs.databaseURL(&dbURL)
	fs.StringVar(&merchantID, "merchant", "", "merchant `ID` (required)")
	fs.Var(modeFlag{&mode}, "mode", "the endpoint's mode, `test|live` (required)")
	fs.StringVar(&rawURL, "url", "", "endpoint `URL`: https in live mode, and not a loopback, private or link-local address (required)")
	fs.Var(&stringList{list: &events}, "events", "subscribed `events`, comma-separated (default: every event): "+eventList())
	fs.BoolVar(&rotate, "rotate-secret", false, "replace the signing secret (setting again otherwise keeps it)")
	fs.BoolVar(&asJSON, "json", false, "print the result as one line of JSON")
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "merchant", "mode", "url"); err != nil {
		return err
	}
	u, err := parseWebhookURL(rawURL)
	if err != nil {
		return usageErrorf("--url: %v", err)
	}
	subscribed, err := checkEvents(events)
	if err != nil {
		return err
	}
	// A policy refusal, not a usage mistake: exit 1.
	if err := checkWebhookTarget(u, paygate.Mode(mode)); err != nil {
		return fmt.Errorf("--url refused: %v", err)
	}
	var ep paygate.WebhookEndpoint
	err = withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		m, err := merchantByID(ctx, st, merchantID)
		if err != nil {
			return err
		}
		t := now()
		ep, err = st.SetWebhookEndpoint(ctx, paygate.WebhookEndpoint{
			MerchantID: m.ID,
			Mode:       paygate.Mode(mode),
			URL:        rawURL,
			Secret:     newWebhookSecret(),
			Events:     subscribed,
			CreatedAt:  t,
			UpdatedAt:  t,
		}, rotate)
		if err != nil {
			return fmt.Errorf("set webhook endpoint: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c.stdout, webhookSet{URL: ep.URL, Secret: ep.Secret})
	}
	evs := "every event"
	if len(ep.Events) > 0 {
		evs = strings.Join(ep.Events, ", ")
	}
	_, err = fmt.Fprintf(c.stdout, "Webhook endpoint of merchant %s (%s mode): %s\nEvents: %s\nSigning secret: %s\n",
		ep.MerchantID, ep.Mode, ep.URL, evs, ep.Secret)
	return err
}

// newWebhookSecret returns whsec_ and the base64 of 32 random bytes.
func newWebhookSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails; a broken random source panics
	return "whsec_" + base64.StdEncoding.EncodeToString(b[:])
}

// eventList is the subscribable events, comma-separated.
func eventList() string {
	names := make([]string, len(paygate.EventTypes))
	for i, e := range paygate.EventTypes {
		names[i] = string(e)
	}
	return strings.Join(names, ",")
}

// checkEvents validates --events and removes duplicates, keeping order.
func checkEvents(events []string) ([]string, error) {
	var out []string
	for _, e := range events {
		if !slices.Contains(paygate.EventTypes, paygate.EventType(e)) {
			return nil, usageErrorf("--events: unknown event %q (known: %s)", e, eventList())
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

// parseWebhookURL accepts an absolute http(s) URL with a host.
func parseWebhookURL(raw string) (*url.URL, error) {
	if len(raw) > maxWebhookURL {
		return nil, fmt.Errorf("longer than %d characters", maxWebhookURL)
	}
	if err := checkHTTPURL(raw); err != nil {
		return nil, err
	}
	return url.Parse(raw)
}

// blockedPrefixes are address ranges that are not public destinations,
// beyond what netip's predicates cover: "this network", carrier-grade NAT,
// IETF protocol assignments, benchmarking, reserved, and NAT64 prefixes
// (which embed an IPv4 address that may be private).
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// checkWebhookTarget applies decisions.md section 11 when an endpoint is
// set. Test mode may use http and local addresses. Live mode needs https
// and a host that is neither localhost nor a literal loopback, private,
// link-local, multicast, unspecified or otherwise non-public address. DNS
// names are checked again at every delivery, as their addresses may change.
func checkWebhookTarget(u *url.URL, mode paygate.Mode) error {
	if mode != paygate.ModeLive {
		return nil
	}
	if u.Scheme != "https" {
		return fmt.Errorf("a live-mode endpoint must use https, not %s", u.Scheme)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return fmt.Errorf("a live-mode endpoint must not be %s", host)
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		if numericHost(host) {
			// 127.1, 2130706433, 0x7f.0.0.1: some clients read these as
			// IPv4 addresses; no DNS name has a numeric last label.
			return fmt.Errorf("host %q is neither a DNS name nor a dotted-quad address", host)
		}
		return nil // a DNS name: checked at delivery
	}
	addr = addr.WithZone("").Unmap()
	switch {
	case addr.IsLoopback():
		return fmt.Errorf("%s is a loopback address", addr)
	case addr.IsPrivate():
		return fmt.Errorf("%s is a private address", addr)
	case addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast():
		return fmt.Errorf("%s is a link-local address", addr)
	case addr.IsMulticast(), addr.IsInterfaceLocalMulticast():
		return fmt.Errorf("%s is a multicast address", addr)
	case addr.IsUnspecified():
		return fmt.Errorf("%s is the unspecified address", addr)
	}
	for _, p := range blockedPrefixes {
		if p.Contains(addr) {
			return fmt.Errorf("%s is not a public address", addr)
		}
	}
	return nil
}

// numericHost reports whether the last label of host is a number (decimal,
// octal or 0x hex), which makes it an address in some parsers' eyes.
func numericHost(host string) bool {
	last := host[strings.LastIndex(host, ".")+1:]
	if last == "" {
		return false
	}
	if h, ok := strings.CutPrefix(last, "0x"); ok {
		last = h
		if last == "" {
			return true
		}
		return strings.Trim(last, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}
