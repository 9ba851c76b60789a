package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
	"github.com/paygate/paygate/internal/testenv"
	"github.com/paygate/paygate/internal/vault"
)

// newVaultKey returns a fresh master key, base64 as configured.
func newVaultKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, vault.KeySize)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// openTestVault builds a vault from configured keys.
func openTestVault(t *testing.T, keys ...string) *vault.Vault {
	t.Helper()
	raw, err := vault.ParseKeys(keys)
	if err != nil {
		t.Fatal(err)
	}
	v, err := vault.New(raw...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// storeCards stores n cards of a fresh customer of the merchant, sealed by
// v, and returns them.
func storeCards(t *testing.T, db, merchantID string, v *vault.Vault, numbers ...string) []paygate.StoredCard {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := paygate.SystemClock{}.Now()
	cust, err := st.UpsertCustomer(ctx, paygate.CustomerUpsert{NewID: id.New(), MerchantID: merchantID, Mode: paygate.ModeTest, ExternalID: "c-" + id.New(), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	var out []paygate.StoredCard
	for _, n := range numbers {
		c := paygate.StoredCard{
			ID: id.New(), MerchantID: merchantID, Mode: paygate.ModeTest, CustomerID: cust.ID,
			State: paygate.StoredCardActive, Brand: "visa", Last4: n[len(n)-4:], ExpMonth: 12, ExpYear: 2040,
			HolderName: "A", CreatedAt: now, UpdatedAt: now,
		}
		if c.Sealed, err = v.Seal(c, paygate.PAN(n)); err != nil {
			t.Fatal(err)
		}
		saved, _, err := paygate.SaveStoredCard(ctx, st, c, []string{c.Sealed.Fingerprint})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, saved)
	}
	return out
}

// reread returns the stored cards as the database now has them.
func reread(t *testing.T, db string, cards []paygate.StoredCard) []paygate.StoredCard {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var out []paygate.StoredCard
	for _, c := range cards {
		got, err := st.StoredCards(ctx, paygate.StoredCardQuery{MerchantID: c.MerchantID, Mode: c.Mode, CustomerID: c.CustomerID, ID: c.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("card %s: %d cards read", c.ID, len(got))
		}
		out = append(out, got[0])
	}
	return out
}

func TestVaultRewrap(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, db string) {
		m := newMerchant(t, db, "Rewrap")
		oldKey, newKey := newVaultKey(t), newVaultKey(t)
		numbers := []string{"4242424242424242", "5555555555554444", "378282246310005"}
		cards := storeCards(t, db, m.MerchantID, openTestVault(t, oldKey), numbers...)

		var out vaultRewrapped
		jsonLine(t, cliRun(t, nil, "vault", "rewrap", "--database-url", db, "--vault-key", newKey+","+oldKey, "--json"), &out)
		both := openTestVault(t, newKey, oldKey)
		if out.Rewrapped != 3 || out.KeyID != both.PrimaryKeyID() {
			t.Fatalf("rewrap printed %+v, want 3 cards under %s", out, both.PrimaryKeyID())
		}
		wantKeys(t, cliRun(t, nil, "vault", "rewrap", "--database-url", db, "--vault-key", newKey+","+oldKey, "--json").stdout, "keyId", "rewrapped")

		// Only the new key now opens every card; fingerprints follow it.
		newOnly := openTestVault(t, newKey)
		for i, c := range reread(t, db, cards) {
			if c.Sealed.KeyID != newOnly.PrimaryKeyID() || c.Sealed.Fingerprint != newOnly.Fingerprint(paygate.PAN(numbers[i])) {
				t.Errorf("card %d not moved: key %s", i, c.Sealed.KeyID)
			}
			if pan, err := newOnly.Open(c); err != nil || pan.Reveal() != numbers[i] {
				t.Errorf("card %d does not open under the new key: %v", i, err)
			}
		}

		// Again: nothing to do; from the environment too.
		r := cliRun(t, map[string]string{"PAYGATE_VAULT_KEY": newKey}, "vault", "rewrap", "--database-url", db).mustSucceed(t)
		if r.stdout != "Rewrapped 0 stored cards; every stored card is now sealed under key "+newOnly.PrimaryKeyID()+".\n" {
			t.Errorf("second rewrap printed %q", r.stdout)
		}

		// Without the key a card needs: the cards before it are moved, then
		// exit 1 naming the card and its key id, never a key.
		lost := storeCards(t, db, m.MerchantID, openTestVault(t, oldKey), "6011111111111117")
		other := newVaultKey(t)
		r = cliRun(t, nil, "vault", "rewrap", "--database-url", db, "--vault-key", other+","+newKey)
		r.mustFail(t, 1, "stored card "+lost[0].ID)
		if !strings.Contains(r.stderr, "not configured (3 cards were moved before)") {
			t.Errorf("stderr %q", r.stderr)
		}
		for _, k := range []string{oldKey, newKey, other} {
			if strings.Contains(r.stderr, k) {
				t.Error("the error shows a key")
			}
		}
		if !strings.Contains(r.stderr, openTestVault(t, oldKey).PrimaryKeyID()) {
			t.Errorf("the error does not name the missing key id: %s", r.stderr)
		}
	})
}

func TestVaultRewrapUsage(t *testing.T) {
	t.Parallel()
	db := sqliteURL(t)
	cliRun(t, nil, "vault", "rewrap", "--database-url", db, "--vault-key", "c2hvcnQ=").mustFail(t, 2, "--vault-key: key 1 is not base64 of 32 bytes")
	cliRun(t, nil, "vault", "rewrap", "--bogus").mustFail(t, 2, "unknown flag --bogus")
	cliRun(t, nil, "vault").mustFail(t, 2, "vault: missing subcommand (rewrap)")
	// SQLite without a key and without a key file: rewrap does not invent one.
	cliRun(t, nil, "vault", "rewrap", "--database-url", db).mustFail(t, 1, "no card vault master key")
	path, _ := store.SQLitePath(db)
	if _, err := os.Stat(path + vault.KeyFileSuffix); err == nil {
		t.Error("rewrap created a key file")
	}
	// PostgreSQL without a key.
	cliRun(t, nil, "vault", "rewrap", "--database-url", "postgres://u@127.0.0.1:1/db").mustFail(t, 1, "--vault-key")
	r := cliRun(t, nil, "vault", "rewrap", "--help").mustSucceed(t)
	if !strings.Contains(r.stdout, "--vault-key") {
		t.Errorf("help: %s", r.stdout)
	}
}

// TestServeVaultKey runs the real serve: on SQLite without a key it
// generates the key file (mode 0600) and says so; on PostgreSQL without a
// key it refuses to start, with one line.
func TestServeVaultKey(t *testing.T) {
	t.Parallel()
	t.Run("SQLiteKeyFile", func(t *testing.T) {
		t.Parallel()
		db := sqliteURL(t)
		path, _ := store.SQLitePath(db)
		keyFile := path + vault.KeyFileSuffix
		for round, want := range []string{"Generated the card vault master key into " + keyFile, "Using the card vault master key in " + keyFile} {
			ctx, cancel := context.WithCancel(context.Background())
			var stdout, stderr testenv.Buffer
			done := make(chan int, 1)
			go func() {
				done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db, "--drain-delay", "0s"}, nil, &stdout, &stderr)
			}()
			for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stderr.String(), `"msg":"listening"`); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					cancel()
					t.Fatalf("serve did not listen:\n%s", stderr.String())
				}
			}
			cancel()
			if code := <-done; code != 0 {
				t.Fatalf("round %d: exit %d\n%s", round, code, stderr.String())
			}
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("round %d: the log does not say %q:\n%s", round, want, stderr.String())
			}
			info, err := os.Stat(keyFile)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != 0o600 {
				t.Errorf("key file mode %04o, want 0600", info.Mode().Perm())
			}
			raw, _ := os.ReadFile(keyFile)
			if strings.Contains(stderr.String(), strings.TrimSpace(string(raw))) || stdout.String() != "" {
				t.Error("serve printed the key, or wrote to stdout")
			}
		}
	})
	t.Run("PostgreSQLRefused", func(t *testing.T) {
		t.Parallel()
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"serve", "--database-url", "postgres://u@127.0.0.1:1/db"},
			func(string) string { return "" }, &stdout, &stderr)
		r := result{code: code, stdout: stdout.String(), stderr: stderr.String()}
		r.mustFail(t, 1, "paygate: serve: a card vault master key is required with PostgreSQL: set --vault-key or PAYGATE_VAULT_KEY")
	})
}

// TestDemoVaultKey: demo on SQLite says on stdout that it generated the
// key file, then that it uses it.
func TestDemoVaultKey(t *testing.T) {
	t.Parallel()
	db := sqliteURL(t)
	path, _ := store.SQLitePath(db)
	var cfg serveConfig
	var called bool
	r := cliRunServe(t, nil, captureServe(&cfg, &called), "demo", "--database-url", db).mustSucceed(t)
	if !regexp.MustCompile(`(?m)^Generated the card vault master key into ` + regexp.QuoteMeta(path+vault.KeyFileSuffix) + ` \(readable by its owner only\)`).MatchString(r.stdout) {
		t.Errorf("demo output:\n%s", r.stdout)
	}
	if info, err := os.Stat(path + vault.KeyFileSuffix); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v", err)
	}
	r = cliRunServe(t, nil, captureServe(&cfg, &called), "demo", "--database-url", db).mustSucceed(t)
	if !strings.Contains(r.stdout, "Using the card vault master key in "+path+vault.KeyFileSuffix) {
		t.Errorf("second demo output:\n%s", r.stdout)
	}
	// A configured key wins: no key file is made.
	db2 := sqliteURL(t)
	path2, _ := store.SQLitePath(db2)
	r = cliRunServe(t, nil, captureServe(&cfg, &called), "demo", "--database-url", db2, "--vault-key", newVaultKey(t)).mustSucceed(t)
	if _, err := os.Stat(path2 + vault.KeyFileSuffix); err == nil || strings.Contains(r.stdout, "vault master key") {
		t.Errorf("a key file was made although a key was configured:\n%s", r.stdout)
	}
}

// TestVaultRewrapCountsTokens: card tokens are not rewrapped (they live 15
// minutes) but counted, so that the operator keeps an older key that
// still seals live tokens until they expire.
func TestVaultRewrapCountsTokens(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, db string) {
		m := newMerchant(t, db, "Token Rewrap")
		oldKey, newKey := newVaultKey(t), newVaultKey(t)
		old := openTestVault(t, oldKey)
		ctx := context.Background()
		st, err := store.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		now := paygate.SystemClock{}.Now()
		tok := paygate.CardToken{
			ID: paygate.TokenPrefix + strings.Repeat("ab", 16), MerchantID: m.MerchantID, Mode: paygate.ModeTest,
			Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: 2040, HolderName: "A",
			CreatedAt: now, ExpiresAt: now.Add(paygate.TokenLifetime), APIKeyID: testPublicKeyID(t, st, m.MerchantID),
		}
		ctxSeal := vault.SecretContext{Purpose: "card-token:" + tok.ID, MerchantID: m.MerchantID, Mode: paygate.ModeTest}
		if tok.Sealed, err = old.SealSecret(ctxSeal, []byte("4242424242424242|123")); err != nil {
			t.Fatal(err)
		}
		tok.KeyID = old.PrimaryKeyID()
		err = st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{tok}})
		st.Close()
		if err != nil {
			t.Fatal(err)
		}

		r := cliRun(t, nil, "vault", "rewrap", "--database-url", db, "--vault-key", newKey+","+oldKey).mustSucceed(t)
		if !strings.Contains(r.stdout, "1 card tokens stay sealed under older keys: they expire within 15 minutes; keep those keys configured until then.\n") {
			t.Errorf("rewrap printed %q", r.stdout)
		}
		r = cliRun(t, nil, "vault", "rewrap", "--database-url", db, "--vault-key", newKey+","+oldKey, "--json")
		wantKeys(t, r.stdout, "keyId", "rewrapped")
		if r.code != 0 || !strings.Contains(r.stderr, "1 card tokens stay sealed") {
			t.Errorf("rewrap --json said on stderr %q", r.stderr)
		}
	})
}

// TestServeWarnsOfTokensUnderAnotherKey: serve started without the key
// that sealed live card tokens says so at start, naming its id; with the
// key kept second, it says the tokens are under an older key.
func TestServeWarnsOfTokensUnderAnotherKey(t *testing.T) {
	t.Parallel()
	db := sqliteURL(t)
	m := newMerchant(t, db, "Token Warned")
	sealKey, serveKey := newVaultKey(t), newVaultKey(t)
	st, err := store.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sealer := openTestVault(t, sealKey)
	now := paygate.SystemClock{}.Now()
	tok := paygate.CardToken{
		ID: paygate.TokenPrefix + strings.Repeat("cd", 16), MerchantID: m.MerchantID, Mode: paygate.ModeTest,
		Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: 2040, HolderName: "A",
		KeyID: sealer.PrimaryKeyID(), Sealed: []byte("sealed bytes as the store keeps them"),
		CreatedAt: now, ExpiresAt: now.Add(paygate.TokenLifetime), APIKeyID: testPublicKeyID(t, st, m.MerchantID),
	}
	if err := st.Commit(t.Context(), paygate.Unit{Ops: []paygate.Op{tok}}); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	if err := logVault(t.Context(), newLogger(&logs, "info", "json"), st, openTestVault(t, serveKey), vaultKeySource{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "card tokens are sealed under master keys that are not configured") ||
		!strings.Contains(logs.String(), sealer.PrimaryKeyID()) {
		t.Fatalf("serve's start log does not warn of the tokens sealed under %s:\n%s", sealer.PrimaryKeyID(), logs.String())
	}
	logs.Reset()
	if err := logVault(t.Context(), newLogger(&logs, "info", "json"), st, openTestVault(t, serveKey, sealKey), vaultKeySource{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "card tokens are sealed under an older master key") || strings.Contains(logs.String(), "not configured") {
		t.Fatalf("with the older key kept:\n%s", logs.String())
	}
}

// testPublicKeyID returns the id of the merchant's test public key, which
// a token's insert re-checks.
func testPublicKeyID(t *testing.T, st paygate.Store, merchantID string) string {
	t.Helper()
	keys, err := st.APIKeys(t.Context(), paygate.APIKeyQuery{MerchantID: merchantID, Mode: paygate.ModeTest})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.Type == paygate.KeyPublic {
			return k.ID
		}
	}
	t.Fatal("the merchant has no test public key")
	return ""
}
