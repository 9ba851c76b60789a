package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEnvironmentFiles checks PAYGATE_<FLAG>_FILE, how a container's secrets
// (deploy/compose.yaml: the vault key and the database URL) reach paygate:
// the named file's content is the value, the flag and PAYGATE_<FLAG> still
// win or conflict as documented, and no error repeats the secret.
func TestEnvironmentFiles(t *testing.T) {
	t.Parallel()
	vaultA := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	vaultB := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{8}, 32))
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// As `openssl rand -base64 32 > vault-key` writes it: a final newline.
	keyFile := write("vault-key", vaultA+"\n")
	dbFile := write("database-url", "postgres://paygate:s3cret-pw@db:5432/paygate\n")

	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		var cfg serveConfig
		var called bool
		env := map[string]string{"PAYGATE_VAULT_KEY_FILE": keyFile, "PAYGATE_DATABASE_URL_FILE": dbFile}
		cliRunServe(t, env, captureServe(&cfg, &called), "serve").mustSucceed(t)
		if !slices.Equal(cfg.VaultKeys, []string{vaultA}) || cfg.DatabaseURL != "postgres://paygate:s3cret-pw@db:5432/paygate" {
			t.Errorf("from files: vault keys %d, database %s", len(cfg.VaultKeys), cfg)
		}
	})

	t.Run("KeyList", func(t *testing.T) {
		t.Parallel()
		var cfg serveConfig
		var called bool
		env := map[string]string{"PAYGATE_VAULT_KEY_FILE": write("two-keys", vaultB+","+vaultA+"\n")}
		cliRunServe(t, env, captureServe(&cfg, &called), "serve").mustSucceed(t)
		if !slices.Equal(cfg.VaultKeys, []string{vaultB, vaultA}) {
			t.Errorf("a file of two keys gave %d keys, want the two in order", len(cfg.VaultKeys))
		}
	})

	t.Run("FlagWins", func(t *testing.T) {
		t.Parallel()
		var cfg serveConfig
		var called bool
		env := map[string]string{"PAYGATE_VAULT_KEY_FILE": keyFile}
		cliRunServe(t, env, captureServe(&cfg, &called), "serve", "--vault-key", vaultB).mustSucceed(t)
		if !slices.Equal(cfg.VaultKeys, []string{vaultB}) {
			t.Error("--vault-key did not win over PAYGATE_VAULT_KEY_FILE")
		}
	})

	t.Run("OtherCommands", func(t *testing.T) {
		// Every command's environment flags read files alike: the
		// database URL of merchant create, here.
		t.Parallel()
		db := sqliteURL(t)
		env := map[string]string{"PAYGATE_DATABASE_URL_FILE": write("sqlite-url", db+"\n")}
		var m merchantCreated
		jsonLine(t, cliRun(t, env, "merchant", "create", "--name", "From a file", "--json"), &m)
		if got := len(listKeys(t, db, m.MerchantID)); got != 4 {
			t.Errorf("the file's database has %d keys of the merchant, want 4", got)
		}
	})

	t.Run("ErrBoth", func(t *testing.T) {
		t.Parallel()
		env := map[string]string{"PAYGATE_VAULT_KEY": vaultB, "PAYGATE_VAULT_KEY_FILE": keyFile}
		r := cliRun(t, env, "serve")
		r.mustFail(t, 2, "both PAYGATE_VAULT_KEY and PAYGATE_VAULT_KEY_FILE are set")
		if strings.Contains(r.stderr, vaultB) || strings.Contains(r.stderr, vaultA) {
			t.Errorf("the error shows a key: %q", r.stderr)
		}
	})

	t.Run("ErrMissingFile", func(t *testing.T) {
		t.Parallel()
		env := map[string]string{"PAYGATE_VAULT_KEY_FILE": filepath.Join(dir, "nope")}
		cliRun(t, env, "serve").mustFail(t, 2, "PAYGATE_VAULT_KEY_FILE")
	})

	t.Run("ErrEmptyFile", func(t *testing.T) {
		t.Parallel()
		env := map[string]string{"PAYGATE_VAULT_KEY_FILE": write("empty", "\n")}
		cliRun(t, env, "serve").mustFail(t, 2, "is empty")
	})

	t.Run("ErrBadValue", func(t *testing.T) {
		// A value the flag refuses: the message names the file and the
		// variable, never the content.
		t.Parallel()
		secret := "not-a-number-but-a-secret"
		env := map[string]string{"PAYGATE_RATE_LIMIT_LIVE_FILE": write("limit", secret)}
		r := cliRun(t, env, "serve")
		r.mustFail(t, 2, "PAYGATE_RATE_LIMIT_LIVE_FILE")
		if strings.Contains(r.stderr, secret) {
			t.Errorf("the error repeats the file's content: %q", r.stderr)
		}
	})

	t.Run("ErrBadKey", func(t *testing.T) {
		// A key that is not base64 of 32 bytes is refused by Validate,
		// which names its position only.
		t.Parallel()
		bad := "c2hvcnQ="
		r := cliRun(t, map[string]string{"PAYGATE_VAULT_KEY_FILE": write("bad-key", bad+"\n")}, "serve")
		r.mustFail(t, 2, "--vault-key: key 1 is not base64 of 32 bytes")
		if strings.Contains(r.stderr, bad) {
			t.Errorf("the error shows the key: %q", r.stderr)
		}
	})
}
