package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/paygate/paygate/internal/account"
	"github.com/paygate/paygate/internal/paygate"
)

// defaultGrace is how long a rotated key keeps working (decisions.md
// section 4).
const defaultGrace = account.DefaultGrace

// keyCreated is the --json output of key create.
type keyCreated struct {
	ID   string `json:"id"`
	Mode string `json:"mode"`
	Key  string `json:"key"`
}

// keyListed is one element of the --json output of key list.
type keyListed struct {
	ID        string  `json:"id"`
	Mode      string  `json:"mode"`
	Type      string  `json:"type"`
	Hint      string  `json:"hint"`
	CreatedAt string  `json:"createdAt"`
	ExpiresAt *string `json:"expiresAt"`
	RevokedAt *string `json:"revokedAt"`
}

// keyRotated is the --json output of key rotate: the new key, and when the
// old one stops working.
type keyRotated struct {
	ID              string `json:"id"`
	Mode            string `json:"mode"`
	Key             string `json:"key"`
	OldKeyExpiresAt string `json:"oldKeyExpiresAt"`
}

// keyRevoked is the --json output of key revoke.
type keyRevoked struct {
	ID        string `json:"id"`
	RevokedAt string `json:"revokedAt"`
}

func cmdKeyCreate(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("key create", "--merchant ID --mode test|live [--json] [--database-url URL]")
	var dbURL, merchantID, mode string
	var asJSON bool
	fs.databaseURL(&dbURL)
	fs.StringVar(&merchantID, "merchant", "", "merchant `ID` (required)")
	fs.Var(modeFlag{&mode}, "mode", "the key's mode, `test|live` (required)")
	fs.BoolVar(&asJSON, "json", false, "print the result as one line of JSON")
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "merchant", "mode"); err != nil {
		return err
	}
	var secret string
	var key paygate.APIKey
	err := withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		m, err := findMerchant(ctx, st, dbURL, merchantID)
		if err != nil {
			return err
		}
		secret, key, err = account.CreateKeyBy(ctx, st, m.ID, paygate.Mode(mode), now(), account.CLI)
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c.stdout, keyCreated{ID: key.ID, Mode: string(key.Mode), Key: secret})
	}
	_, err = fmt.Fprintf(c.stdout, "Created %s secret key %s for merchant %s:\n%s\nThe key is shown only now; keep it secret.\n",
		key.Mode, key.ID, key.MerchantID, secret)
	return err
}

func cmdKeyList(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("key list", "--merchant ID [--json] [--database-url URL]")
	var dbURL, merchantID string
	var asJSON bool
	fs.databaseURL(&dbURL)
	fs.StringVar(&merchantID, "merchant", "", "merchant `ID` (required)")
	fs.BoolVar(&asJSON, "json", false, "print the result as one line of JSON")
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "merchant"); err != nil {
		return err
	}
	var keys []paygate.APIKey
	err := withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		if _, err := findMerchant(ctx, st, dbURL, merchantID); err != nil {
			return err
		}
		var err error
		keys, err = st.APIKeys(ctx, paygate.APIKeyQuery{MerchantID: merchantID})
		if err != nil {
			return fmt.Errorf("list keys: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	out := make([]keyListed, 0, len(keys))
	for _, k := range keys {
		out = append(out, keyListed{
			ID:        k.ID,
			Mode:      string(k.Mode),
			Type:      string(k.Type),
			Hint:      k.Hint,
			CreatedAt: formatTime(k.CreatedAt),
			ExpiresAt: formatTimePtr(k.ExpiresAt),
			RevokedAt: formatTimePtr(k.RevokedAt),
		})
	}
	if asJSON {
		return writeJSON(c.stdout, out)
	}
	t := now()
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	// The JSON is exactly decisions.md section 14's; when a key was last
	// used (recorded at most once a minute) is shown here only.
	fmt.Fprintln(tw, "ID\tMODE\tTYPE\tHINT\tCREATED\tLAST USED\tSTATUS")
	for i, k := range keys {
		used := "never"
		if k.LastUsedAt != nil {
			used = formatTime(*k.LastUsedAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Mode, k.Type, k.Hint, out[i].CreatedAt, used, keyStatus(k, t))
	}
	return tw.Flush()
}

// keyStatus describes a key's state at t for the human listing.
func keyStatus(k paygate.APIKey, t time.Time) string {
	switch {
	case k.RevokedAt != nil && !t.Before(*k.RevokedAt):
		return "revoked " + formatTime(*k.RevokedAt)
	case k.ExpiresAt != nil && !t.Before(*k.ExpiresAt):
		return "expired " + formatTime(*k.ExpiresAt)
	case k.ExpiresAt != nil:
		return "active, expires " + formatTime(*k.ExpiresAt)
	}
	return "active"
}

func cmdKeyRotate(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("key rotate", "--key KEY_ID [--grace 24h] [--json] [--database-url URL]")
	var dbURL, keyID string
	var grace time.Duration
	var asJSON bool
	fs.databaseURL(&dbURL)
	fs.StringVar(&keyID, "key", "", "`KEY_ID` of the key to replace (required)")
	fs.DurationVar(&grace, "grace", defaultGrace, "how long the old key keeps working, at most 720h; 0 stops it now")
	fs.BoolVar(&asJSON, "json", false, "print the result as one line of JSON")
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "key"); err != nil {
		return err
	}
	if grace < 0 {
		return usageErrorf("--grace must not be negative")
	}
	if grace > account.MaxGrace {
		return usageErrorf("--grace must be at most %dh (30 days)", account.MaxGrace/time.Hour)
	}
	var secret string
	var next, old paygate.APIKey
	err := withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		var err error
		old, err = findKey(ctx, st, dbURL, keyID)
		if err != nil {
			return err
		}
		// The store keeps an earlier expiry the key already had: old
		// comes back as stored, with the expiry that holds.
		secret, next, old, err = account.RotateKeyBy(ctx, st, old, grace, now(), account.CLI)
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c.stdout, keyRotated{ID: next.ID, Mode: string(next.Mode), Key: secret, OldKeyExpiresAt: formatTime(*old.ExpiresAt)})
	}
	// A public key is for the browser (decisions.md section 19): shown
	// once, as every key, but there is nothing secret to keep.
	keep := "The key is shown only now; keep it secret.\n"
	if next.Type == paygate.KeyPublic {
		keep = "The key is shown only now; it is public: use it in the browser, never to call the API.\n"
	}
	_, err = fmt.Fprintf(c.stdout, "Created %s %s key %s to replace %s:\n%s\n%sThe old key %s stops working at %s.\n",
		next.Mode, next.Type, next.ID, old.ID, secret, keep, old.Hint, formatTime(*old.ExpiresAt))
	return err
}

func cmdKeyRevoke(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("key revoke", "--key KEY_ID [--json] [--database-url URL]")
	var dbURL, keyID string
	var asJSON bool
	fs.databaseURL(&dbURL)
	fs.StringVar(&keyID, "key", "", "`KEY_ID` of the key to revoke (required)")
	fs.BoolVar(&asJSON, "json", false, "print the result as one line of JSON")
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "key"); err != nil {
		return err
	}
	var k paygate.APIKey
	err := withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		found, err := findKey(ctx, st, dbURL, keyID)
		if err != nil {
			return err
		}
		// The revocation and its audit entry are one unit.
		k, err = account.RevokeKeyBy(ctx, st, found, now(), account.CLI)
		if paygate.IsNotFound(err) {
			return notFound("key", keyID, dbURL)
		}
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c.stdout, keyRevoked{ID: k.ID, RevokedAt: formatTime(*k.RevokedAt)})
	}
	_, err = fmt.Fprintf(c.stdout, "Revoked %s %s key %s (%s) at %s.\n", k.Mode, k.Type, k.ID, k.Hint, formatTime(*k.RevokedAt))
	return err
}
