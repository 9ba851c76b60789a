package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"

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
	err = withStore(ctx, cfg.DatabaseURL, func(ctx context.Context, st paygate.Store) error {
		first, err := st.Merchants(ctx, paygate.MerchantQuery{Limit: 1})
		if err != nil {
			return fmt.Errorf("look for a merchant: %w", err)
		}
		if len(first) > 0 {
			existing = first[0]
			return nil
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
	// The example checkout needs the test keys, which only a merchant made
	// now has in hand; it runs as long as the server does.
	ctx, stopShop := context.WithCancel(ctx)
	defer stopShop()
	if created != nil {
		shop, err := startDemoShop(ctx, cfg.BaseURL, created.TestSecretKey, created.TestPublicKey)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(c.stdout, "\nTry the checkout in a browser: %s/\n", shop); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(c.stdout, "\nThe example checkout page runs when demo creates its merchant (on a new database).")
	}
	return runServer(ctx, c, cfg)
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
