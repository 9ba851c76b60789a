package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/store"
	"github.com/paygate/paygate/internal/vault"
)

// noKeyFile fails when the SQLite database db has a key file.
func noKeyFile(t *testing.T, db string) {
	t.Helper()
	path, _ := store.SQLitePath(db)
	if _, err := os.Stat(path + vault.KeyFileSuffix); err == nil {
		t.Fatal("a key file was created")
	}
}

// TestWebhookSetWithoutServesKey: serve runs with PAYGATE_VAULT_KEY; the
// operator then runs webhook set on the same SQLite database without it.
// It must not generate a second key into a key file and seal under it (the
// running serve could not open the secret): exit 1, naming the key id in
// use and telling to pass --vault-key / PAYGATE_VAULT_KEY.
func TestWebhookSetWithoutServesKey(t *testing.T) {
	t.Parallel()
	serveKey := newVaultKey(t)
	serveID := openTestVault(t, serveKey).PrimaryKeyID()

	t.Run("SealedSecrets", func(t *testing.T) {
		t.Parallel()
		db := sqliteURL(t)
		m := newMerchant(t, db, "Guard")
		// As serve (or the dashboard) would have sealed it.
		cliRun(t, map[string]string{"PAYGATE_VAULT_KEY": serveKey}, "webhook", "set", "--merchant", m.MerchantID,
			"--mode", "test", "--url", "http://127.0.0.1:9/a", "--database-url", db).mustSucceed(t)
		noKeyFile(t, db)
		for _, args := range [][]string{
			{"webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", "http://127.0.0.1:9/b", "--json"},
			{"webhook", "set", "--merchant", m.MerchantID, "--mode", "live", "--url", "https://hooks.example.com/x", "--json"},
			{"vault", "rewrap", "--json"},
		} {
			r := cliRun(t, nil, append(args, "--database-url", db)...)
			r.mustFail(t, 1, "master key "+serveID+", which is not configured")
			if !strings.Contains(r.stderr, "--vault-key or PAYGATE_VAULT_KEY") {
				t.Errorf("%s: %q does not tell to pass the key", args[0]+" "+args[1], r.stderr)
			}
			noKeyFile(t, db)
		}
		// With serve's key it goes on.
		cliRun(t, map[string]string{"PAYGATE_VAULT_KEY": serveKey}, "webhook", "set", "--merchant", m.MerchantID,
			"--mode", "test", "--url", "http://127.0.0.1:9/c", "--database-url", db).mustSucceed(t)
	})

	t.Run("StoredCards", func(t *testing.T) {
		t.Parallel()
		db := sqliteURL(t)
		m := newMerchant(t, db, "Guard")
		storeCards(t, db, m.MerchantID, openTestVault(t, serveKey), "4242424242424242")
		cliRun(t, nil, "webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", "http://127.0.0.1:9/a",
			"--json", "--database-url", db).mustFail(t, 1, "master key "+serveID+", which is not configured")
		noKeyFile(t, db)
	})

	t.Run("FreshDatabaseCreatesTheKeyFile", func(t *testing.T) {
		t.Parallel()
		// Nothing sealed yet: the key file is made, as serve would make it,
		// and the next command uses it.
		db := sqliteURL(t)
		m := newMerchant(t, db, "Fresh")
		cliRun(t, nil, "webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", "http://127.0.0.1:9/a",
			"--database-url", db).mustSucceed(t)
		cliRun(t, nil, "webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", "http://127.0.0.1:9/a",
			"--rotate-secret", "--database-url", db).mustSucceed(t)
	})
}

// TestWebhookSetWithAnotherKey: the database's sealed webhook secrets (or
// stored cards) are all under keys other than the one given (flag, or the
// key file): webhook set refuses rather than seal under a key serve may not
// have. A key list that includes one in use (a rotation) is accepted.
func TestWebhookSetWithAnotherKey(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, db string) {
		m := newMerchant(t, db, "Other")
		serveKey, other := newVaultKey(t), newVaultKey(t)
		serveID := openTestVault(t, serveKey).PrimaryKeyID()
		set := func(key string, args ...string) result {
			return cliRun(t, nil, append([]string{"webhook", "set", "--merchant", m.MerchantID, "--database-url", db, "--vault-key", key}, args...)...)
		}
		set(serveKey, "--mode", "test", "--url", "http://127.0.0.1:9/a").mustSucceed(t)
		r := set(other, "--mode", "live", "--url", "https://hooks.example.com/x", "--json")
		r.mustFail(t, 1, "webhook signing secrets are sealed under master key "+serveID)
		if !strings.Contains(r.stderr, openTestVault(t, other).PrimaryKeyID()) || strings.Contains(r.stderr, other) || strings.Contains(r.stderr, serveKey) {
			t.Errorf("stderr %q: want the given key's id, never a key", r.stderr)
		}
		// A rotation: the new key first, serve's still given.
		set(other+","+serveKey, "--mode", "live", "--url", "https://hooks.example.com/x").mustSucceed(t)
	})

	t.Run("KeyFile", func(t *testing.T) {
		t.Parallel()
		// A key file made by an earlier run, while serve runs with its own
		// key: webhook set without a key would use the file's key.
		db := sqliteURL(t)
		m := newMerchant(t, db, "File")
		path, _ := store.SQLitePath(db)
		if _, _, err := vault.LoadOrCreateKeyFile(path + vault.KeyFileSuffix); err != nil {
			t.Fatal(err)
		}
		serveKey := newVaultKey(t)
		cliRun(t, map[string]string{"PAYGATE_VAULT_KEY": serveKey}, "webhook", "set", "--merchant", m.MerchantID,
			"--mode", "test", "--url", "http://127.0.0.1:9/a", "--database-url", db).mustSucceed(t)
		cliRun(t, nil, "webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", "http://127.0.0.1:9/b",
			"--rotate-secret", "--database-url", db).mustFail(t, 1, "sealed under master key "+openTestVault(t, serveKey).PrimaryKeyID())
	})

	t.Run("StoredCards", func(t *testing.T) {
		t.Parallel()
		db := sqliteURL(t)
		m := newMerchant(t, db, "Cards")
		serveKey := newVaultKey(t)
		storeCards(t, db, m.MerchantID, openTestVault(t, serveKey), "4242424242424242")
		cliRun(t, nil, "webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", "http://127.0.0.1:9/a",
			"--vault-key", newVaultKey(t), "--database-url", db).
			mustFail(t, 1, "stored cards are sealed under master key "+openTestVault(t, serveKey).PrimaryKeyID())
		cliRun(t, nil, "webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", "http://127.0.0.1:9/a",
			"--vault-key", serveKey, "--database-url", db).mustSucceed(t)
	})
}

// TestServeWarnsOfSecretsUnderAnotherKey: serve started with a key that
// did not seal the webhook secrets says so at start, naming the key id
// that did, since every delivery to those endpoints will fail.
func TestServeWarnsOfSecretsUnderAnotherKey(t *testing.T) {
	t.Parallel()
	db := sqliteURL(t)
	m := newMerchant(t, db, "Warned")
	sealKey, serveKey := newVaultKey(t), newVaultKey(t)
	cliRun(t, nil, "webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", "http://127.0.0.1:9/a",
		"--database-url", db, "--vault-key", sealKey).mustSucceed(t)
	st, err := store.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var logs bytes.Buffer
	if err := logVault(t.Context(), newLogger(&logs, "info", "json"), st, openTestVault(t, serveKey), vaultKeySource{}); err != nil {
		t.Fatal(err)
	}
	sealID := openTestVault(t, sealKey).PrimaryKeyID()
	if !strings.Contains(logs.String(), "webhook signing secrets are sealed under master keys that are not configured") ||
		!strings.Contains(logs.String(), sealID) {
		t.Fatalf("serve's start log does not warn of the secrets sealed under %s:\n%s", sealID, logs.String())
	}
	logs.Reset()
	if err := logVault(t.Context(), newLogger(&logs, "info", "json"), st, openTestVault(t, sealKey), vaultKeySource{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "webhook signing secrets are sealed") {
		t.Fatalf("a warning with the right key:\n%s", logs.String())
	}
}
