package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/paygate/paygate/internal/dashboard"
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

// commandVault opens the vault for an operator's command that seals or
// opens with it, on the open store st, so that the command cannot leave
// the database with data a running serve cannot open without saying so:
//
//   - Without a configured key, on SQLite, the key file is used; it is not
//     created (and the command refuses, exit 1) when the database already
//     holds data sealed under other keys (stored cards, sealed webhook
//     signing secrets): serve runs with a configured key then, and a new key
//     file would seal under a key serve does not have.
//   - With seal (the command seals something new: webhook set), the keys
//     used (configured, or the key file's) must include one that the
//     database's sealed webhook secrets use, and one that its stored cards
//     use, when there are any: keys that match none of them are not the
//     keys serve runs with.
//
// A database with no sealed data yet shows nothing to check against.
func commandVault(ctx context.Context, st paygate.Store, databaseURL string, configured []string, create, seal bool) (*vault.Vault, error) {
	cards, err := st.StoredCardKeyIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the key ids of stored cards: %w", err)
	}
	secrets, err := webhook.SecretKeyIDs(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("read the key ids of webhook signing secrets: %w", err)
	}
	// Card tokens too: a fresh key file would leave them unusable.
	tokens, err := st.CardTokenKeyIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the key ids of card tokens: %w", err)
	}
	if len(configured) == 0 {
		if path, ok := store.SQLitePath(databaseURL); ok && path != "" {
			file := path + vault.KeyFileSuffix
			if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
				if used := keyIDList(cards, secrets, tokens); len(used) > 0 {
					return nil, fmt.Errorf("the database holds data sealed under master %s, which is not configured, and there is no key file %s: "+
						"pass the key serve runs with in --vault-key or PAYGATE_VAULT_KEY (no key file was created)", keyIDsPhrase(used), file)
				}
			}
		}
	}
	v, _, err := openVault(databaseURL, configured, create)
	if err != nil || !seal {
		return v, err
	}
	for _, g := range []struct {
		what string
		ids  map[string]int
	}{{"webhook signing secrets", secrets}, {"stored cards", cards}} {
		used := keyIDList(g.ids)
		if len(used) == 0 || slices.ContainsFunc(used, func(id string) bool { return slices.Contains(v.KeyIDs(), id) }) {
			continue
		}
		return nil, fmt.Errorf("the database's %s are sealed under master %s, and the %s given here (%s) is none of them: "+
			"pass the key serve runs with in --vault-key or PAYGATE_VAULT_KEY, or deliveries will fail", g.what, keyIDsPhrase(used),
			plural(len(v.KeyIDs()), "key", "keys"), strings.Join(v.KeyIDs(), ","))
	}
	return v, nil
}

// keyIDList is the sorted key ids of the counts.
func keyIDList(counts ...map[string]int) []string {
	var out []string
	for _, c := range counts {
		for id, n := range c {
			if n > 0 && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out
}

// keyIDsPhrase is "key 0a1b…" or "keys 0a1b…, 2c3d…".
func keyIDsPhrase(ids []string) string {
	return plural(len(ids), "key", "keys") + " " + strings.Join(ids, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
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
	unknown, lost, older := keysInUse(v, used)
	if len(unknown) > 0 {
		log.Warn("stored cards are sealed under master keys that are not configured; payments with them fail until the keys are given again",
			"key_ids", strings.Join(unknown, ","), "cards", lost)
	}
	if older > 0 {
		log.Info("stored cards are sealed under an older master key; run 'paygate vault rewrap' to move them to the first key", "cards", older)
	}
	// Card tokens live 15 minutes: they are not rewrapped but counted,
	// so that a key still sealing live tokens is not dropped unawares.
	tokens, err := st.CardTokenKeyIDs(ctx)
	if err != nil {
		return fmt.Errorf("count card tokens: %w", err)
	}
	unknown, lost, older = keysInUse(v, tokens)
	if len(unknown) > 0 {
		log.Warn("card tokens are sealed under master keys that are not configured; payments with them fail until the keys are given again or the tokens expire (15 minutes)",
			"key_ids", strings.Join(unknown, ","), "tokens", lost)
	}
	if older > 0 {
		log.Info("card tokens are sealed under an older master key; keep it configured until they expire (15 minutes at most)", "tokens", older)
	}
	secrets, err := webhook.SecretKeyIDs(ctx, st)
	if err != nil {
		return fmt.Errorf("count webhook secrets: %w", err)
	}
	if unknown, lost, _ := keysInUse(v, secrets); len(unknown) > 0 {
		log.Warn("webhook signing secrets are sealed under master keys that are not configured; deliveries to those endpoints fail until the keys are given again",
			"key_ids", strings.Join(unknown, ","), "secrets", lost)
	}
	totps, err := dashboard.TOTPSecretKeyIDs(ctx, st)
	if err != nil {
		return fmt.Errorf("count TOTP secrets: %w", err)
	}
	unknown, lost, older = keysInUse(v, totps)
	if len(unknown) > 0 {
		log.Warn("dashboard users' TOTP secrets are sealed under master keys that are not configured; those users cannot sign in until the keys are given again (or an owner turns their MFA off)",
			"key_ids", strings.Join(unknown, ","), "users", lost)
	}
	if older > 0 {
		log.Info("dashboard users' TOTP secrets are sealed under an older master key; run 'paygate vault rewrap' before dropping it", "users", older)
	}
	return nil
}

// vaultKeyRequired refuses, before the database is opened, a database URL
// that needs a configured key and has none (PostgreSQL).
func vaultKeyRequired(databaseURL string, configured []string) error {
	if len(configured) > 0 {
		return nil
	}
	if _, ok := store.SQLitePath(databaseURL); ok {
		return nil
	}
	_, _, err := resolveVaultKeys(databaseURL, nil, false)
	return err
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
		"and the card's fingerprint under it; then every webhook signing secret and every dashboard\n" +
		"user's TOTP secret. Card tokens (15 minutes of life) are not rewrapped: those still sealed\n" +
		"under an older key are counted, and that key must stay configured until they expire.\n" +
		"Safe while serve runs;\n" +
		"stops at the first card or secret it cannot open."
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := checkVaultKeys(keys); err != nil {
		return err
	}
	if err := vaultKeyRequired(dbURL, keys); err != nil {
		return err
	}
	var res payment.RewrapResult
	var endpoints, totpUsers, tokens int
	err := withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		v, err := commandVault(ctx, st, dbURL, keys, false, false)
		if err != nil {
			return err
		}
		res, err = payment.Rewrap(ctx, st, v, paygate.SystemClock{})
		if err != nil {
			return fmt.Errorf("rewrap: %w (%d cards were moved before)", err, res.Rewrapped)
		}
		// Webhook signing secrets are sealed under the same keys.
		if endpoints, err = webhook.RewrapSecrets(ctx, st, v); err != nil {
			return fmt.Errorf("rewrap: %w (%d webhook endpoints were moved before)", err, endpoints)
		}
		// So are the dashboard users' TOTP secrets: left behind, they
		// would lock MFA users out once the old key is dropped.
		if totpUsers, err = dashboard.RewrapTOTPSecrets(ctx, st, v); err != nil {
			return fmt.Errorf("rewrap: %w (%d users' TOTP secrets were moved before)", err, totpUsers)
		}
		// Card tokens are not rewrapped: each lives 15 minutes at most.
		// Those still sealed under an older key are counted, so that the
		// operator keeps that key until they have expired.
		used, err := st.CardTokenKeyIDs(ctx)
		if err != nil {
			return fmt.Errorf("count card tokens: %w", err)
		}
		for id, n := range used {
			if id != v.PrimaryKeyID() {
				tokens += n
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// No merchant's change: logged, not audited (see installLog).
	logInstallChange(ctx, "vault.rewrapped", slog.String("keyId", res.KeyID), slog.Int("cards", res.Rewrapped),
		slog.Int("webhookEndpoints", endpoints), slog.Int("totpUsers", totpUsers), slog.String("database", redactURL(dbURL)))
	if asJSON {
		if tokens > 0 {
			_, _ = fmt.Fprintf(c.stderr, "%d card tokens stay sealed under older keys: they expire within 15 minutes; keep those keys configured until then.\n", tokens)
		}
		return writeJSON(c.stdout, vaultRewrapped{KeyID: res.KeyID, Rewrapped: res.Rewrapped})
	}
	_, err = fmt.Fprintf(c.stdout, "Rewrapped %d stored cards; every stored card is now sealed under key %s.\n", res.Rewrapped, res.KeyID)
	if err == nil && endpoints > 0 {
		_, err = fmt.Fprintf(c.stdout, "Rewrapped the signing secrets of %d webhook endpoints under key %s.\n", endpoints, res.KeyID)
	}
	if err == nil && totpUsers > 0 {
		_, err = fmt.Fprintf(c.stdout, "Rewrapped the TOTP secrets of %d dashboard users under key %s.\n", totpUsers, res.KeyID)
	}
	if err == nil && tokens > 0 {
		_, err = fmt.Fprintf(c.stdout, "%d card tokens stay sealed under older keys: they expire within 15 minutes; keep those keys configured until then.\n", tokens)
	}
	return err
}

// keysInUse sorts the count of sealed values by master key id (used) into
// the ids the vault does not hold (sorted) with the number of values under
// them (lost), and the number of values under a key it holds that is not
// its first (older: rewrap moves them).
func keysInUse(v *vault.Vault, used map[string]int) (unknown []string, lost, older int) {
	for id, n := range used {
		switch {
		case !slices.Contains(v.KeyIDs(), id):
			unknown, lost = append(unknown, id), lost+n
		case id != v.PrimaryKeyID():
			older += n
		}
	}
	slices.Sort(unknown)
	return unknown, lost, older
}
