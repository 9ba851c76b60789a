package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/store"
	"github.com/paygate/paygate/internal/vault"
	"github.com/paygate/paygate/internal/webhook"
)

// vaultKeySource tells where the card vault's master keys came from.
type vaultKeySource struct {
	file    string // the SQLite key file used, "" when keys were configured
	created bool   // the key file was generated just now
}

// resolveVaultKeys returns the master keys of the card vault: the configured
// ones (--vault-key, PAYGATE_VAULT_KEY); without any, on SQLite, the key in
// "<database file>.vault-key", generated (mode 0600) when the file does not
// exist and create is true. PostgreSQL without a configured key is refused:
// several nodes share the database, and a key generated on one of them
// would be unknown to the others. Any other URL gets no keys and no error:
// opening the store refuses it with the proper message.
func resolveVaultKeys(databaseURL string, configured []string, create bool) ([]string, vaultKeySource, error) {
	if len(configured) > 0 {
		return configured, vaultKeySource{}, nil
	}
	path, ok := store.SQLitePath(databaseURL)
	if !ok {
		u := strings.ToLower(strings.TrimSpace(databaseURL))
		if strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://") {
			return nil, vaultKeySource{}, errors.New("a card vault master key is required with PostgreSQL: set --vault-key or PAYGATE_VAULT_KEY to base64 of 32 random bytes (openssl rand -base64 32)")
		}
		return nil, vaultKeySource{}, nil
	}
	if path == "" {
		return nil, vaultKeySource{}, fmt.Errorf("the sqlite: database URL names no file")
	}
	file := path + vault.KeyFileSuffix
	if !create {
		key, err := vault.LoadKeyFile(file)
		if errors.Is(err, os.ErrNotExist) {
			return nil, vaultKeySource{}, fmt.Errorf("no card vault master key: set --vault-key or PAYGATE_VAULT_KEY (there is no key file %s)", file)
		}
		return []string{key}, vaultKeySource{file: file}, err
	}
	key, created, err := vault.LoadOrCreateKeyFile(file)
	if err != nil {
		return nil, vaultKeySource{}, err
	}
	return []string{key}, vaultKeySource{file: file, created: created}, nil
}

// openVault resolves the master keys (see resolveVaultKeys) and builds the
// vault; nil (and no error) for a database URL that is not supported.
func openVault(databaseURL string, configured []string, create bool) (*vault.Vault, vaultKeySource, error) {
	encoded, src, err := resolveVaultKeys(databaseURL, configured, create)
	if err != nil || encoded == nil {
		return nil, src, err
	}
	keys, err := vault.ParseKeys(encoded)
	if err != nil {
		return nil, src, err
	}
	v, err := vault.New(keys...)
	return v, src, err
}

// keyFileNote is the sentence that tells the operator about a key file.
func keyFileNote(src vaultKeySource) string {
	if src.created {
		return fmt.Sprintf("Generated the card vault master key into %s (readable by its owner only). "+
			"Back it up, apart from the database's backups: stored cards cannot be decrypted without it.", src.file)
	}
	return fmt.Sprintf("Using the card vault master key in %s.", src.file)
}

// logVault says which keys the vault uses, and warns about stored cards
// sealed under a key that is not configured: they cannot be used until that
// key is given again.
func logVault(ctx context.Context, log *slog.Logger, st paygate.Store, v *vault.Vault, src vaultKeySource) error {
	if v == nil {
		return errors.New("no card vault master key")
	}
	attrs := []any{"key_ids", strings.Join(v.KeyIDs(), ","), "sealing_key_id", v.PrimaryKeyID()}
	if src.file != "" {
		attrs = append(attrs, "key_file", src.file, "generated", src.created)
		log.Info(keyFileNote(src), attrs...)
	} else {
		log.Info("card vault keys configured", attrs...)
	}
	used, err := st.StoredCardKeyIDs(ctx)
	if err != nil {
		return fmt.Errorf("count stored cards: %w", err)
	}
	var unknown []string
	lost, older := 0, 0
	for id, n := range used {
		switch {
		case !slices.Contains(v.KeyIDs(), id):
			unknown, lost = append(unknown, id), lost+n
		case id != v.PrimaryKeyID():
			older += n
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		log.Warn("stored cards are sealed under master keys that are not configured; payments with them fail until the keys are given again",
			"key_ids", strings.Join(unknown, ","), "cards", lost)
	}
	if older > 0 {
		log.Info("stored cards are sealed under an older master key; run 'paygate vault rewrap' to move them to the first key", "cards", older)
	}
	return nil
}

// vaultKeyFlag registers --vault-key (and PAYGATE_VAULT_KEY) on a command
// that seals or opens webhook signing secrets.
func vaultKeyFlag(fs *flagSet, keys *[]string) {
	fs.Var(&stringList{list: keys}, "vault-key", "vault master `KEY[,KEY...]`, base64 of 32 bytes, as serve's (env PAYGATE_VAULT_KEY; default on SQLite: the database's .vault-key file)")
	fs.envFlags = append(fs.envFlags, "vault-key")
}

// checkVaultKeys refuses a --vault-key that is not base64 of 32 bytes, as
// a usage error; the message names the key's position, never the key.
func checkVaultKeys(keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	if _, err := vault.ParseKeys(keys); err != nil {
		return usageErrorf("--vault-key: %s", strings.TrimPrefix(err.Error(), "vault: "))
	}
	return nil
}

// sealWebhookSecrets seals the webhook signing secrets that rows written
// before secrets were sealed still hold in plain text, and says how many it
// converted. Every program that opens the store with the vault calls it at
// startup; it is idempotent and safe beside other nodes doing the same.
func sealWebhookSecrets(ctx context.Context, log *slog.Logger, st paygate.Store, v *vault.Vault) error {
	n, err := webhook.SealStoredSecrets(ctx, st, v)
	if err != nil {
		return fmt.Errorf("encrypt the stored webhook signing secrets: %w", err)
	}
	if n > 0 && log != nil {
		log.Info("encrypted the webhook signing secrets stored in plain text by an earlier version", "endpoints", n)
	}
	return nil
}

// vaultRewrapped is the --json output of vault rewrap.
type vaultRewrapped struct {
	KeyID     string `json:"keyId"`
	Rewrapped int    `json:"rewrapped"`
}

func cmdVaultRewrap(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("vault rewrap", "[--vault-key KEY[,KEY...]] [--json] [--database-url URL]")
	var dbURL string
	var keys []string
	var asJSON bool
	fs.databaseURL(&dbURL)
	fs.Var(&stringList{list: &keys}, "vault-key", "card vault master `KEY[,KEY...]`, base64 of 32 bytes: the first is the new key, the others open cards sealed under older ones (env PAYGATE_VAULT_KEY; default on SQLite: the database's .vault-key file)")
	fs.BoolVar(&asJSON, "json", false, "print the result as one line of JSON")
	fs.envFlags = append(fs.envFlags, "vault-key")
	fs.notes = "Re-encrypts every stored card under the first key: a fresh data key, wrapped by the first key,\n" +
		"and the card's fingerprint under it; then every webhook signing secret. Safe while serve runs;\n" +
		"stops at the first card or secret it cannot open."
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := checkVaultKeys(keys); err != nil {
		return err
	}
	v, _, err := openVault(dbURL, keys, false)
	if err != nil {
		return err
	}
	var res payment.RewrapResult
	var endpoints int
	err = withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		var err error
		res, err = payment.Rewrap(ctx, st, v, paygate.SystemClock{})
		if err != nil {
			return fmt.Errorf("rewrap: %w (%d cards were moved before)", err, res.Rewrapped)
		}
		// Webhook signing secrets are sealed under the same keys.
		if endpoints, err = webhook.RewrapSecrets(ctx, st, v); err != nil {
			return fmt.Errorf("rewrap: %w (%d webhook endpoints were moved before)", err, endpoints)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c.stdout, vaultRewrapped{KeyID: res.KeyID, Rewrapped: res.Rewrapped})
	}
	_, err = fmt.Fprintf(c.stdout, "Rewrapped %d stored cards; every stored card is now sealed under key %s.\n", res.Rewrapped, res.KeyID)
	if err == nil && endpoints > 0 {
		_, err = fmt.Fprintf(c.stdout, "Rewrapped the signing secrets of %d webhook endpoints under key %s.\n", endpoints, res.KeyID)
	}
	return err
}
