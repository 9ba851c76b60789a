package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/paygate/paygate/internal/account"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/webhook"
)

// webhookSet is the --json output of webhook set.
type webhookSet struct {
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

func cmdWebhookSet(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("webhook set", "--merchant ID --mode test|live --url URL [--events a,b] [--rotate-secret] [--vault-key KEY[,KEY...]] [--allow-private-test-webhooks=true] [--json] [--database-url URL]")
	var dbURL, merchantID, mode, rawURL string
	var events, keys []string
	var rotate, asJSON, allowPrivate bool
	fs.databaseURL(&dbURL)
	allowPrivateTestWebhooksFlag(fs, &allowPrivate)
	fs.StringVar(&merchantID, "merchant", "", "merchant `ID` (required)")
	fs.Var(modeFlag{&mode}, "mode", "the endpoint's mode, `test|live` (required)")
	fs.StringVar(&rawURL, "url", "", "endpoint `URL`: https in live mode, and not a loopback, private or link-local address in live mode or with --allow-private-test-webhooks=false (required)")
	fs.Var(&stringList{list: &events}, "events", "subscribed `events`, comma-separated (default: every event): "+eventList())
	fs.BoolVar(&rotate, "rotate-secret", false, "replace the signing secret (setting again otherwise keeps it)")
	fs.BoolVar(&asJSON, "json", false, "print the result as one line of JSON")
	vaultKeyFlag(fs, &keys)
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "merchant", "mode", "url"); err != nil {
		return err
	}
	if err := checkVaultKeys(keys); err != nil {
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
	if err := checkWebhookTarget(u, paygate.Mode(mode), webhookPolicy(allowPrivate)); err != nil {
		return fmt.Errorf("--url %v", err) // "--url refused: ..."
	}
	// The secret is stored sealed by the vault: PostgreSQL without a key
	// is refused in one line, as serve does; SQLite uses (or creates) the
	// database's key file, as serve would, unless the database shows that
	// serve runs with other keys (see commandVault).
	if err := vaultKeyRequired(dbURL, keys); err != nil {
		return err
	}
	var ep paygate.WebhookEndpointState
	err = withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		v, err := commandVault(ctx, st, dbURL, keys, true, true)
		if err != nil {
			return err
		}
		if err := sealWebhookSecrets(ctx, nil, st, v); err != nil {
			return err
		}
		m, err := findMerchant(ctx, st, dbURL, merchantID)
		if err != nil {
			return err
		}
		// Setting the endpoint enables it again (after a 410); a rotation
		// keeps the old secret signing beside the new one for a while.
		ep, err = account.SetWebhookBy(ctx, st, v, m.ID, paygate.Mode(mode), rawURL, subscribed, rotate, now(), account.CLI)
		return err
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
	if err == nil && ep.PreviousSecret != "" && ep.PreviousSecretExpiresAt != nil && now().Before(*ep.PreviousSecretExpiresAt) {
		_, err = fmt.Fprintf(c.stdout, "The previous secret also signs deliveries until %s.\n", formatTime(*ep.PreviousSecretExpiresAt))
	}
	return err
}

// eventList is the subscribable events, comma-separated.
func eventList() string { return strings.Join(account.EventNames(), ",") }

// checkEvents validates --events and removes duplicates, keeping order.
func checkEvents(events []string) ([]string, error) {
	out, err := account.CheckEvents(events)
	if err != nil {
		return nil, usageErrorf("--events: %v", err)
	}
	return out, nil
}

// parseWebhookURL accepts an absolute http(s) URL with a host.
func parseWebhookURL(raw string) (*url.URL, error) { return account.ParseWebhookURL(raw) }

// checkWebhookTarget applies the rules of decisions.md sections 11 and 15
// that the URL alone can show when an endpoint is set; the dispatcher
// applies the same rules, and checks every address it dials, at each
// delivery.
func checkWebhookTarget(u *url.URL, mode paygate.Mode, p webhook.Policy) error {
	return account.CheckWebhookTarget(u, mode, p)
}
