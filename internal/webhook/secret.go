package webhook

import (
	"context"
	"errors"
	"fmt"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/vault"
)

// Endpoint signing secrets are kept sealed by the vault (decisions.md
// section 15): the store holds SealedSecret and SealedPreviousSecret, bound
// to the endpoint's merchant and mode, and never the plain secret. Rows
// written before secrets were sealed keep the plain secret until
// SealStoredSecrets converts them (at every start of a program that opens
// the store with the vault); OpenSecrets reads either.

// secretContext is what an endpoint's secrets are bound to. The current and
// the previous secret share it, so that a rotation may move one to the
// other inside the store.
func secretContext(merchantID string, mode paygate.Mode) vault.SecretContext {
	return vault.SecretContext{Purpose: vault.PurposeWebhookSecret, MerchantID: merchantID, Mode: mode}
}

// SealSecret seals a signing secret for the endpoint of (merchant, mode).
func SealSecret(v *vault.Vault, merchantID string, mode paygate.Mode, secret string) ([]byte, error) {
	sealed, err := v.SealSecret(secretContext(merchantID, mode), []byte(secret))
	if err != nil {
		return nil, fmt.Errorf("seal the webhook signing secret: %w", err)
	}
	return sealed, nil
}

// OpenSecrets fills ep.Secret and ep.PreviousSecret from their seals. A
// secret that is still plain in the store (a row not converted yet) is kept
// as it is. Errors (the vault is missing, or has not the key that sealed
// them, or a seal does not authenticate: a row moved to another merchant or
// mode) leave both secrets empty: nothing signs with a wrong secret. The
// errors name the endpoint, never a secret.
func OpenSecrets(v *vault.Vault, ep *paygate.WebhookEndpointState) error {
	ctx := secretContext(ep.MerchantID, ep.Mode)
	open := func(sealed []byte, plain *string, which string) error {
		if len(sealed) == 0 {
			return nil
		}
		b, err := v.OpenSecret(ctx, sealed)
		var unknown *vault.SecretKeyError
		if errors.As(err, &unknown) {
			// Its own words, not the vault's: which secret, which key.
			return secretError{fmt.Sprintf("the %s webhook signing secret of the %s endpoint of merchant %s is sealed under master key %s, which is not configured",
				which, ep.Mode, ep.MerchantID, unknown.KeyID), err}
		}
		if err != nil {
			return fmt.Errorf("open the %s webhook signing secret of the %s endpoint of merchant %s: %w", which, ep.Mode, ep.MerchantID, err)
		}
		*plain = string(b)
		return nil
	}
	err := open(ep.SealedSecret, &ep.Secret, "current")
	if perr := open(ep.SealedPreviousSecret, &ep.PreviousSecret, "previous"); perr != nil {
		if err == nil {
			err = perr
		} else {
			err = fmt.Errorf("%w; %w", err, perr) // one line, for logs and the command line
		}
	}
	if err == nil && ep.Secret == "" {
		err = fmt.Errorf("the %s webhook endpoint of merchant %s has no signing secret", ep.Mode, ep.MerchantID)
	}
	if err != nil {
		ep.Secret, ep.PreviousSecret = "", ""
	}
	return err
}

// secretError is an error of OpenSecrets that says its own thing and still
// wraps the vault's (errors.Is(err, vault.ErrUnknownKey) holds).
type secretError struct {
	msg string
	err error
}

func (e secretError) Error() string { return e.msg }
func (e secretError) Unwrap() error { return e.err }

// secretsPage is how many endpoints one read of SealStoredSecrets and
// RewrapSecrets covers.
const secretsPage = 200

// SealStoredSecrets seals every plain secret the store still holds (rows
// written before secrets were sealed) and empties the plain columns. It is
// idempotent and safe when several nodes run it at once: each row is
// replaced only if it is unchanged since it was read, and a row another node
// converted (or rotated) meanwhile is left as it is. It returns the number
// of endpoints it converted.
func SealStoredSecrets(ctx context.Context, st paygate.Store, v *vault.Vault) (int, error) {
	return eachSecrets(ctx, st, func(w paygate.WebhookSecrets) (paygate.WebhookSecrets, bool, error) {
		if w.Secret == "" && w.PreviousSecret == "" {
			return w, false, nil
		}
		to := w
		var err error
		if w.Secret != "" {
			if to.SealedSecret, err = SealSecret(v, w.MerchantID, w.Mode, w.Secret); err != nil {
				return w, false, err
			}
		}
		if w.PreviousSecret != "" {
			if to.SealedPreviousSecret, err = SealSecret(v, w.MerchantID, w.Mode, w.PreviousSecret); err != nil {
				return w, false, err
			}
		}
		return to, true, nil
	})
}

// RewrapSecrets moves every sealed secret to the vault's first key (for
// `paygate vault rewrap`), converting plain ones on the way, with the same
// guarantees as SealStoredSecrets. It returns the number of endpoints it
// changed, and stops at the first secret it cannot open (sealed under a key
// that is not configured, or altered).
func RewrapSecrets(ctx context.Context, st paygate.Store, v *vault.Vault) (int, error) {
	return eachSecrets(ctx, st, func(w paygate.WebhookSecrets) (paygate.WebhookSecrets, bool, error) {
		to, changed := w, false
		sc := secretContext(w.MerchantID, w.Mode)
		for _, s := range []struct {
			plain  string
			sealed []byte
			out    *[]byte
			which  string
		}{
			{w.Secret, w.SealedSecret, &to.SealedSecret, "current"},
			{w.PreviousSecret, w.SealedPreviousSecret, &to.SealedPreviousSecret, "previous"},
		} {
			var moved bool
			var err error
			switch {
			case s.plain != "":
				*s.out, err = SealSecret(v, w.MerchantID, w.Mode, s.plain)
				moved = true
			case len(s.sealed) > 0:
				*s.out, moved, err = v.RewrapSecret(sc, s.sealed)
			}
			if err != nil {
				return w, false, fmt.Errorf("the %s signing secret of the %s webhook endpoint of merchant %s: %w", s.which, w.Mode, w.MerchantID, err)
			}
			changed = changed || moved
		}
		return to, changed, nil
	})
}

// eachSecrets applies f to every endpoint's stored secrets, and stores what
// f changed with a compare and set. A conflict (the row changed since it was
// read) is read again, a few times: another node converted or rotated it.
func eachSecrets(ctx context.Context, st paygate.Store, f func(paygate.WebhookSecrets) (paygate.WebhookSecrets, bool, error)) (int, error) {
	done := 0
	afterMerchant, afterMode := "", paygate.Mode("")
	for {
		page, err := st.WebhookSecrets(ctx, afterMerchant, afterMode, secretsPage)
		if err != nil {
			return done, fmt.Errorf("read webhook secrets: %w", err)
		}
		for _, w := range page {
			changed, err := replaceSecrets(ctx, st, w, f)
			if err != nil {
				return done, err
			}
			if changed {
				done++
			}
		}
		if len(page) < secretsPage {
			return done, nil
		}
		last := page[len(page)-1]
		afterMerchant, afterMode = last.MerchantID, last.Mode
	}
}

// SecretKeyIDs counts the sealed signing secrets of every endpoint
// (current and previous alike) by the id of the vault master key that
// sealed them (vault.SecretKeyID: the hex of bytes 2 to 9 of a seal whose
// first byte is 1). Plain secrets of rows not converted yet are not
// counted. It reads every endpoint's secrets, a page at a time. It serves
// the operator's commands, which refuse to seal under a key the database
// shows is not the one in use.
func SecretKeyIDs(ctx context.Context, st paygate.WebhookStore) (map[string]int, error) {
	ids := map[string]int{}
	afterMerchant, afterMode := "", paygate.Mode("")
	for {
		page, err := st.WebhookSecrets(ctx, afterMerchant, afterMode, secretsPage)
		if err != nil {
			return nil, fmt.Errorf("read webhook secrets: %w", err)
		}
		for _, w := range page {
			for _, sealed := range [][]byte{w.SealedSecret, w.SealedPreviousSecret} {
				if id, err := vault.SecretKeyID(sealed); err == nil {
					ids[id]++
				}
			}
		}
		if len(page) < secretsPage {
			return ids, nil
		}
		last := page[len(page)-1]
		afterMerchant, afterMode = last.MerchantID, last.Mode
	}
}

// replaceTries bounds how often one endpoint is read again after a
// conflict.
const replaceTries = 5

func replaceSecrets(ctx context.Context, st paygate.Store, w paygate.WebhookSecrets, f func(paygate.WebhookSecrets) (paygate.WebhookSecrets, bool, error)) (bool, error) {
	for range replaceTries {
		to, change, err := f(w)
		if err != nil || !change {
			return false, err
		}
		err = st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.WebhookSecretsReplacement{From: w, To: to}}})
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, paygate.ErrStateConflict) {
			return false, fmt.Errorf("store the webhook secrets of merchant %s (%s): %w", w.MerchantID, w.Mode, err)
		}
		// Changed meanwhile: read the row again.
		page, err := st.WebhookSecrets(ctx, w.MerchantID, before(w.Mode), 1)
		if err != nil {
			return false, fmt.Errorf("read webhook secrets: %w", err)
		}
		if len(page) == 0 || page[0].MerchantID != w.MerchantID || page[0].Mode != w.Mode {
			return false, nil // gone
		}
		w = page[0]
	}
	return false, fmt.Errorf("the webhook secrets of merchant %s (%s) keep changing; try again", w.MerchantID, w.Mode)
}

// before returns a mode that sorts just before m, so that a read "after
// (merchant, before(m))" starts at (merchant, m): "" < "live" < "test".
func before(m paygate.Mode) paygate.Mode {
	if m == paygate.ModeTest {
		return paygate.ModeLive
	}
	return ""
}
