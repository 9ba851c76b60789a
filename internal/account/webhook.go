package account

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/vault"
	"github.com/paygate/paygate/internal/webhook"
)

// MaxWebhookURL bounds the length of an endpoint URL.
const MaxWebhookURL = 2048

// ParseWebhookURL accepts an absolute http(s) URL with a host, at most
// MaxWebhookURL long. It does not judge where the URL points (see
// CheckWebhookTarget).
func ParseWebhookURL(raw string) (*url.URL, error) {
	if len(raw) > MaxWebhookURL {
		return nil, fmt.Errorf("longer than %d characters", MaxWebhookURL)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a valid URL", raw)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%q must be an absolute http:// or https:// URL", raw)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("%q has no host", raw)
	}
	if _, err := url.ParseRequestURI(raw); err != nil {
		return nil, fmt.Errorf("%q is not a valid URL", raw)
	}
	return u, nil
}

// CheckWebhookTarget applies the rules of decisions.md sections 11 and 15
// that the URL alone can show when an endpoint is set (live: https; where
// p guards the mode, always in live mode: not a loopback, private,
// link-local, multicast or unspecified address); the dispatcher applies
// the same rules, and checks every address it dials, at each delivery. The
// error wraps webhook.ErrRefused.
func CheckWebhookTarget(u *url.URL, mode paygate.Mode, p webhook.Policy) error {
	return p.CheckEndpointURL(u, mode)
}

// ShownResponse is what the dashboard and the command line show of an
// attempt's answer (decisions.md section 15): at most
// paygate.MaxAttemptResponse bytes of valid UTF-8, and nothing when the
// address guard applies to the mode under p and the attempt reached a
// non-public address (the address it connected to when recorded, else the
// URL's host as written), so that the gateway cannot be used to read
// internal services.
func ShownResponse(a paygate.DeliveryAttempt, mode paygate.Mode, p webhook.Policy) string {
	if p.Guarded(mode) {
		private := webhook.PrivateHost(a.URL)
		if a.PrivateAddress != nil {
			private = *a.PrivateAddress || private
		}
		if private {
			return ""
		}
	}
	s := strings.ToValidUTF8(string(a.Response), "\uFFFD")
	if len(s) <= paygate.MaxAttemptResponse {
		return s
	}
	cut := paygate.MaxAttemptResponse
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// EventNames lists the subscribable events.
func EventNames() []string {
	names := make([]string, len(paygate.EventTypes))
	for i, e := range paygate.EventTypes {
		names[i] = string(e)
	}
	return names
}

// CheckEvents validates subscribed event names and removes duplicates,
// keeping their order. An empty list means every event.
func CheckEvents(events []string) ([]string, error) {
	var out []string
	for _, e := range events {
		if !slices.Contains(paygate.EventTypes, paygate.EventType(e)) {
			return nil, fmt.Errorf("unknown event %q (known: %s)", e, strings.Join(EventNames(), ","))
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

// SetWebhook sets the merchant's endpoint of mode to rawURL with the
// subscribed events (checked by the caller with ParseWebhookURL,
// CheckWebhookTarget and CheckEvents), and enables it again after a 410.
// The secret is kept unless rotateSecret; a rotated-out secret keeps
// signing beside the new one for paygate.WebhookSecretOverlap. The secrets
// are stored sealed by the vault v, and returned opened.
func SetWebhook(ctx context.Context, st paygate.Store, v *vault.Vault, merchantID string, mode paygate.Mode, rawURL string, events []string, rotateSecret bool, now time.Time) (paygate.WebhookEndpointState, error) {
	return setWebhook(ctx, st, v, merchantID, mode, rawURL, events, rotateSecret, now, nil)
}

// SetWebhookBy is SetWebhook that records the change (and the rotation of
// the secret, when rotateSecret) in the audit log, in the change's unit.
// The entries name the URL without a password and never a secret.
func SetWebhookBy(ctx context.Context, st paygate.Store, v *vault.Vault, merchantID string, mode paygate.Mode, rawURL string, events []string, rotateSecret bool, now time.Time, by Actor) (paygate.WebhookEndpointState, error) {
	return setWebhook(ctx, st, v, merchantID, mode, rawURL, events, rotateSecret, now, &by)
}

func setWebhook(ctx context.Context, st paygate.Store, v *vault.Vault, merchantID string, mode paygate.Mode, rawURL string, events []string, rotateSecret bool, now time.Time, by *Actor) (paygate.WebhookEndpointState, error) {
	sealed, err := webhook.SealSecret(v, merchantID, mode, webhook.NewSecret())
	if err != nil {
		return paygate.WebhookEndpointState{}, fmt.Errorf("set webhook endpoint: %w", err)
	}
	e := paygate.WebhookEndpoint{
		MerchantID:   merchantID,
		Mode:         mode,
		URL:          rawURL,
		SealedSecret: sealed,
		Events:       events,
		CreatedAt:    now,
		UpdatedAt:    now,
	}
	set := paygate.Unit{Ops: []paygate.Op{paygate.WebhookEndpointConfig{
		Endpoint: e, RotateSecret: rotateSecret, PreviousUntil: now.Add(paygate.WebhookSecretOverlap),
	}}}
	if by != nil {
		detail := "every event"
		if len(events) > 0 {
			detail = strings.Join(events, ", ")
		}
		set.Add(by.Entry(merchantID, mode, paygate.AuditWebhookChanged, AuditURL(rawURL), detail, now))
		if rotateSecret {
			set.Add(by.Entry(merchantID, mode, paygate.AuditWebhookRotated, AuditURL(rawURL), "new signing secret", now))
		}
	}
	err = st.Commit(ctx, set)
	if rotateSecret && errors.Is(err, paygate.ErrStateConflict) {
		// The row still holds a plain secret (written before secrets were
		// sealed), which a rotation would copy: seal it, then rotate.
		if _, err := webhook.SealStoredSecrets(ctx, st, v); err != nil {
			return paygate.WebhookEndpointState{}, fmt.Errorf("set webhook endpoint: %w", err)
		}
		err = st.Commit(ctx, set)
	}
	if err != nil {
		return paygate.WebhookEndpointState{}, fmt.Errorf("set webhook endpoint: %w", err)
	}
	ep, err := st.WebhookEndpointState(ctx, merchantID, mode)
	if err != nil {
		return ep, fmt.Errorf("set webhook endpoint: %w", err)
	}
	if err := webhook.OpenSecrets(v, &ep); err != nil {
		return ep, fmt.Errorf("set webhook endpoint: %w", err)
	}
	return ep, nil
}
