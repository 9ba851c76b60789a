package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/account"
	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// demoMerchantName is the name of the merchant demo creates.
const demoMerchantName = "Demo merchant"

// cmdDemo prepares a demo merchant when the database has none, prints how
// to make a first payment, and runs the server.
func cmdDemo(ctx context.Context, c *cli, args []string) error {
	cfg, err := parseServeConfig("demo", args, c)
	if err != nil {
		return err
	}
	// Metrics are optional in a demo: when their default port is taken
	// (another exporter on a developer's machine), run without them rather
	// than refuse to start. serve, and an address given here, still fail.
	if cfg.MetricsAddr == defaultDemoMetricsAddr {
		if ln, err := net.Listen("tcp", cfg.MetricsAddr); err != nil {
			fmt.Fprintf(c.stderr, "metrics off: %s is in use (choose another with --metrics-addr)\n", cfg.MetricsAddr)
			cfg.MetricsAddr = ""
		} else {
			ln.Close()
		}
	}
	// Make (or find) the card vault key now, to say so on stdout; serve
	// finds the same key (vault.go).
	if _, src, err := resolveVaultKeys(cfg.DatabaseURL, cfg.VaultKeys, true); err != nil {
		return err
	} else if src.file != "" {
		if _, err := fmt.Fprintf(c.stdout, "%s\n\n", keyFileNote(src)); err != nil {
			return err
		}
	}
	var created *merchantCreated
	var existing paygate.Merchant
	var login demoLogin
	var shopKeys demoShopKeys
	err = withStore(ctx, cfg.DatabaseURL, func(ctx context.Context, st paygate.Store) error {
		first, err := st.Merchants(ctx, paygate.MerchantQuery{Limit: 1})
		if err != nil {
			return fmt.Errorf("look for a merchant: %w", err)
		}
		if len(first) > 0 {
			existing = first[0]
			// Its keys were shown once and only their hashes are kept:
			// the example checkout gets keys of its own.
			shopKeys, err = createDemoShopKeys(ctx, st, existing.ID, now())
			return err
		}
		out, err := createMerchant(ctx, st, demoMerchantName)
		if err != nil {
			return err
		}
		created = &out
		login, err = createDemoUser(ctx, st, out.MerchantID)
		return err
	})
	if err != nil {
		return err
	}
	if err := printDemo(c.stdout, cfg, created, existing, login); err != nil {
		return err
	}
	// The example checkout pays with test keys: the new merchant's, or
	// keys made for it now on a merchant that already existed. It runs as
	// long as the server does.
	shopCtx, stopShop := context.WithCancel(ctx)
	defer stopShop()
	if created != nil {
		shopKeys = demoShopKeys{Secret: created.TestSecretKey, Public: created.TestPublicKey}
	}
	shop, err := startDemoShop(shopCtx, cfg.BaseURL, shopKeys.Secret, shopKeys.Public)
	if err != nil {
		return errors.Join(err, revokeDemoShopKeys(ctx, cfg.DatabaseURL, shopKeys))
	}
	if _, err := fmt.Fprintf(c.stdout, "\nTry the checkout in a browser: %s/\n", shop); err != nil {
		return errors.Join(err, revokeDemoShopKeys(ctx, cfg.DatabaseURL, shopKeys))
	}
	if err := runServer(shopCtx, c, cfg); err != nil {
		// A failed server leaves its keys to expire (demoShopKeyLife).
		return err
	}
	return revokeDemoShopKeys(ctx, cfg.DatabaseURL, shopKeys)
}

// demoShopKeyLife is how long the keys made for the example checkout of an
// existing merchant work if demo does not end cleanly to revoke them.
const demoShopKeyLife = 24 * time.Hour

// demoShopKeys are the test keys the example checkout runs with; keys
// (their records) is set when demo made them for a merchant that already
// existed, and demo revokes those when it stops.
type demoShopKeys struct {
	Secret, Public string
	keys           []paygate.APIKey
}

// createDemoShopKeys makes a test secret key and a test public key for the
// merchant's example checkout, expiring after demoShopKeyLife, in one unit
// with their audit entries (actor cli, as every key the CLI makes).
func createDemoShopKeys(ctx context.Context, st paygate.Store, merchantID string, t time.Time) (demoShopKeys, error) {
	var out demoShopKeys
	expires := t.Add(demoShopKeyLife)
	var u paygate.Unit
	for _, typ := range []paygate.KeyType{paygate.KeySecret, paygate.KeyPublic} {
		secret, key, err := auth.NewKey(id.New(), merchantID, paygate.ModeTest, typ, t)
		if err != nil {
			return demoShopKeys{}, fmt.Errorf("generate key: %w", err)
		}
		key.ExpiresAt = &expires
		if typ == paygate.KeySecret {
			out.Secret = secret
		} else {
			out.Public = secret
		}
		out.keys = append(out.keys, key)
		u.Add(key)
		u.Add(account.CLI.Entry(merchantID, paygate.ModeTest, paygate.AuditKeyCreated, key.ID,
			fmt.Sprintf("%s key %s for the demo's example checkout, expires %s", typ, key.Hint, expires.UTC().Format(time.RFC3339)), t))
	}
	if err := st.Commit(ctx, u); err != nil {
		return demoShopKeys{}, fmt.Errorf("create the example checkout's keys: %w", err)
	}
	return out, nil
}

// revokeDemoShopKeys revokes the keys demo made for the example checkout of
// an existing merchant (none when it created the merchant), audited as the
// CLI's.
func revokeDemoShopKeys(ctx context.Context, dbURL string, k demoShopKeys) error {
	if len(k.keys) == 0 {
		return nil
	}
	// The server stopped because ctx was cancelled: the revocation still
	// runs, for a bounded time.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		for _, key := range k.keys {
			if _, err := account.RevokeKeyBy(ctx, st, key, now(), account.CLI); err != nil {
				return fmt.Errorf("revoke the example checkout's key %s: %w", key.ID, err)
			}
		}
		return nil
	})
}

// printDemo tells the operator the demo merchant and a first payment to
// paste.
func printDemo(w io.Writer, cfg serveConfig, created *merchantCreated, existing paygate.Merchant, login demoLogin) error {
	var b strings.Builder
	key := "<your test secret key>"
	if created != nil {
		key = created.TestSecretKey
		fmt.Fprintf(&b, "Created the demo merchant %q.\n\n", created.Name)
		fmt.Fprintf(&b, "  Merchant id:      %s\n", created.MerchantID)
		fmt.Fprintf(&b, "  Test secret key:  %s\n", created.TestSecretKey)
		fmt.Fprintf(&b, "  Test public key:  %s\n\n", created.TestPublicKey)
		b.WriteString("The secret key is shown only now; only its hash is stored. Live keys were made too;\n")
		fmt.Fprintf(&b, "mint a live one when you need it with: %s --mode live\n\n", keyCreateCommand(cfg, created.MerchantID))
	} else {
		fmt.Fprintf(&b, "Using the existing merchant %q.\n\n", existing.Name)
		fmt.Fprintf(&b, "  Merchant id:      %s\n\n", existing.ID)
		b.WriteString("Its secret keys were shown when it was created and cannot be shown again.\n")
		fmt.Fprintf(&b, "Mint a fresh test key with:\n\n  %s --mode test\n\n", keyCreateCommand(cfg, existing.ID))
	}
	b.WriteString("Once the server is listening, make a first test payment:\n\n")
	b.WriteString(demoCurl(cfg.BaseURL, key, now().Year()))
	b.WriteString("\n")
	fmt.Fprintf(&b, "Then see it in the merchant dashboard: %s/dashboard/\n", cfg.BaseURL)
	if login.Email != "" {
		fmt.Fprintf(&b, "  Email:     %s\n  Password:  %s   (shown only now)\n", login.Email, login.Password)
	} else {
		b.WriteString("Create a login with:\n\n  printf '%s\\n' \"$PASSWORD\" | paygate user create --merchant " + existing.ID + " --email you@example.com --password-stdin\n")
	}
	if cfg.MetricsAddr != "" {
		fmt.Fprintf(&b, "\nPrometheus metrics: http://%s/metrics\n", cfg.MetricsAddr)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// keyCreateCommand is the command that mints a key for the merchant on the
// demo's database. A PostgreSQL URL is not repeated: it may hold a password.
func keyCreateCommand(cfg serveConfig, merchantID string) string {
	cmd := "paygate key create --merchant " + merchantID
	if cfg.DatabaseURL != defaultDatabaseURL && strings.HasPrefix(cfg.DatabaseURL, "sqlite:") {
		cmd += " --database-url " + shellQuote(cfg.DatabaseURL)
	} else if cfg.DatabaseURL != defaultDatabaseURL {
		cmd += " --database-url URL"
	}
	return cmd
}

// demoCurl returns a curl command for a first card payment of 10.00 EUR
// with the test card that is always captured.
func demoCurl(baseURL, apiKey string, year int) string {
	var r [8]byte
	_, _ = rand.Read(r[:])
	type card struct {
		Number      string `json:"number"`
		ExpiryMonth string `json:"expiryMonth"`
		ExpiryYear  string `json:"expiryYear"`
		CVV         string `json:"cvv"`
		HolderName  string `json:"holderName"`
	}
	body := struct {
		Amount        string `json:"amount"`
		Currency      string `json:"currency"`
		PaymentMethod string `json:"paymentMethod"`
		CustomerID    string `json:"customerId"`
		Card          card   `json:"card"`
	}{"10.00", "EUR", "card", "demo-customer-1", card{
		Number:      "4242424242424242",
		ExpiryMonth: "12",
		ExpiryYear:  fmt.Sprintf("%02d", (year+3)%100),
		CVV:         "123",
		HolderName:  "Demo Customer",
	}}
	js, _ := json.Marshal(body) // strings only: cannot fail
	lines := []string{
		"curl -sS -X POST " + shellQuote(baseURL+"/v1/payments"),
		"-H " + shellQuote("X-API-Key: "+apiKey),
		"-H " + shellQuote("Idempotency-Key: demo-"+hex.EncodeToString(r[:])),
		"-H " + shellQuote("Content-Type: application/json"),
		"-d " + shellQuote(string(js)),
	}
	return "  " + strings.Join(lines, " \\\n    ") + "\n"
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// demoEmail is the dashboard login demo creates with its merchant.
const demoEmail = "demo@example.com"

// demoLogin is the dashboard login made for the demo merchant.
type demoLogin struct {
	Email, Password string
}

// createDemoUser makes a dashboard login for the demo merchant with a
// random password, returned so that demo can print it once.
func createDemoUser(ctx context.Context, st paygate.Store, merchantID string) (demoLogin, error) {
	var r [15]byte
	if _, err := rand.Read(r[:]); err != nil {
		return demoLogin{}, fmt.Errorf("generate the demo password: %w", err)
	}
	password := base64.RawURLEncoding.EncodeToString(r[:]) // 20 characters
	hash, err := auth.HashPassword(password)
	if err != nil {
		return demoLogin{}, fmt.Errorf("hash the demo password: %w", err)
	}
	t := now()
	u := paygate.User{ID: id.New(), MerchantID: merchantID, Email: demoEmail, PasswordHash: hash, CreatedAt: t, UpdatedAt: t}
	if err := st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{u}}); err != nil {
		return demoLogin{}, fmt.Errorf("create the demo dashboard user: %w", err)
	}
	return demoLogin{Email: demoEmail, Password: password}, nil
}
