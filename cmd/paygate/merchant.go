package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/paygate/paygate/internal/account"
	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// maxMerchantName is the longest merchant name, in characters.
const maxMerchantName = 200

// merchantCreated is the --json output of merchant create (decisions.md
// section 14); the field order is the contract's.
type merchantCreated struct {
	MerchantID      string `json:"merchantId"`
	Name            string `json:"name"`
	TestSecretKeyID string `json:"testSecretKeyId"`
	TestSecretKey   string `json:"testSecretKey"`
	LiveSecretKeyID string `json:"liveSecretKeyId"`
	LiveSecretKey   string `json:"liveSecretKey"`
	TestPublicKey   string `json:"testPublicKey"`
	LivePublicKey   string `json:"livePublicKey"`
}

func cmdMerchantCreate(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("merchant create", "--name NAME [--json] [--database-url URL]")
	var dbURL, name string
	var asJSON bool
	fs.databaseURL(&dbURL)
	fs.StringVar(&name, "name", "", "the merchant's name, 1 to 200 characters (required)")
	fs.BoolVar(&asJSON, "json", false, "print the result as one line of JSON")
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "name"); err != nil {
		return err
	}
	if err := checkMerchantName(name); err != nil {
		return err
	}
	var out merchantCreated
	err := withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		var err error
		out, err = createMerchant(ctx, st, name)
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c.stdout, out)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Merchant created:\t%s\t(%s)\n", out.MerchantID, out.Name)
	fmt.Fprintf(tw, "Test secret key:\t%s\t(id %s)\n", out.TestSecretKey, out.TestSecretKeyID)
	fmt.Fprintf(tw, "Live secret key:\t%s\t(id %s)\n", out.LiveSecretKey, out.LiveSecretKeyID)
	fmt.Fprintf(tw, "Test public key:\t%s\n", out.TestPublicKey)
	fmt.Fprintf(tw, "Live public key:\t%s\n", out.LivePublicKey)
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintln(c.stdout, "The keys are shown only now; only their hashes are stored. Keep the secret keys secret.")
	return err
}

// checkMerchantName accepts 1 to 200 characters of valid UTF-8, not all
// blank, without control characters.
func checkMerchantName(name string) error {
	if strings.TrimSpace(name) == "" {
		return usageErrorf("--name must not be empty")
	}
	if !utf8.ValidString(name) {
		return usageErrorf("--name must be valid UTF-8")
	}
	if n := utf8.RuneCountInString(name); n > maxMerchantName {
		return usageErrorf("--name must be at most %d characters (got %d)", maxMerchantName, n)
	}
	if strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return usageErrorf("--name must not contain control characters")
	}
	return nil
}

// createMerchant creates a merchant with a secret and a public key for
// each mode, in one transaction.
func createMerchant(ctx context.Context, st paygate.Store, name string) (merchantCreated, error) {
	t := now()
	m := paygate.Merchant{ID: id.New(), Name: name, CreatedAt: t}
	type spec struct {
		mode paygate.Mode
		typ  paygate.KeyType
	}
	specs := []spec{
		{paygate.ModeTest, paygate.KeySecret}, {paygate.ModeLive, paygate.KeySecret},
		{paygate.ModeTest, paygate.KeyPublic}, {paygate.ModeLive, paygate.KeyPublic},
	}
	secrets := make([]string, len(specs))
	keys := make([]paygate.APIKey, len(specs))
	for i, s := range specs {
		secret, key, err := auth.NewKey(id.New(), m.ID, s.mode, s.typ, t)
		if err != nil {
			return merchantCreated{}, fmt.Errorf("generate key: %w", err)
		}
		secrets[i], keys[i] = secret, key
	}
	// The merchant and its first keys are one unit.
	u := paygate.Unit{Ops: []paygate.Op{m}}
	for _, k := range keys {
		u.Add(k)
	}
	// ...and so is its audit entry, after the merchant it belongs to. The
	// key ids are named; the keys never.
	u.Add(account.CLI.Entry(m.ID, "", paygate.AuditMerchantCreated, m.ID,
		fmt.Sprintf("%q with secret keys %s (test) and %s (live)", name, keys[0].ID, keys[1].ID), t))
	if err := st.Commit(ctx, u); err != nil {
		return merchantCreated{}, fmt.Errorf("create merchant: %w", err)
	}
	return merchantCreated{
		MerchantID:      m.ID,
		Name:            m.Name,
		TestSecretKeyID: keys[0].ID,
		TestSecretKey:   secrets[0],
		LiveSecretKeyID: keys[1].ID,
		LiveSecretKey:   secrets[1],
		TestPublicKey:   secrets[2],
		LivePublicKey:   secrets[3],
	}, nil
}

// merchantListed is one element of the --json output of merchant list.
type merchantListed struct {
	MerchantID string `json:"merchantId"`
	Name       string `json:"name"`
	CreatedAt  string `json:"createdAt"`
}

func cmdMerchantList(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("merchant list", "[--json] [--database-url URL]")
	var dbURL string
	var asJSON bool
	fs.databaseURL(&dbURL)
	fs.BoolVar(&asJSON, "json", false, "print the merchants as one line of JSON: [{\"merchantId\",\"name\",\"createdAt\"}]")
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	var ms []paygate.Merchant
	err := withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		var err error
		if ms, err = st.Merchants(ctx, paygate.MerchantQuery{}); err != nil {
			return fmt.Errorf("list merchants: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	out := make([]merchantListed, 0, len(ms))
	for _, m := range ms {
		out = append(out, merchantListed{MerchantID: m.ID, Name: m.Name, CreatedAt: formatTime(m.CreatedAt)})
	}
	if asJSON {
		return writeJSON(c.stdout, out)
	}
	if len(out) == 0 {
		// Most often a command pointed at another database than serve's.
		_, err := fmt.Fprintf(c.stdout, "No merchants in database %s.\n", redactURL(dbURL))
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREATED\tNAME")
	for _, m := range out {
		// A name is free text (no control characters): %q would be
		// noisy, and the name is last on its line.
		fmt.Fprintf(tw, "%s\t%s\t%s\n", m.MerchantID, m.CreatedAt, m.Name)
	}
	return tw.Flush()
}
