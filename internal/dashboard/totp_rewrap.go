package dashboard

import (
	"context"
	"errors"
	"fmt"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/vault"
)

// The TOTP secrets of users are sealed with the vault like webhook signing
// secrets, so a vault key rotation must move them too: `paygate vault
// rewrap` calls RewrapTOTPSecrets, and the startup check of the keys in use
// counts TOTPSecretKeyIDs. Without it, dropping the old key after a
// rotation would lock every MFA user out.

// rewrapTries bounds how often one user is read again after a conflict
// (the user enrolled again, or MFA was reset, while the rewrap ran).
const rewrapTries = 5

// eachMFAUser calls f with every user that has a sealed TOTP secret, of
// every merchant.
func eachMFAUser(ctx context.Context, st paygate.Store, f func(paygate.User) error) error {
	merchants, err := st.Merchants(ctx, paygate.MerchantQuery{})
	if err != nil {
		return fmt.Errorf("read merchants: %w", err)
	}
	for _, m := range merchants {
		users, err := st.Users(ctx, paygate.UserQuery{MerchantID: m.ID})
		if err != nil {
			return fmt.Errorf("read the users of merchant %s: %w", m.ID, err)
		}
		for _, u := range users {
			if len(u.MFASecret) == 0 {
				continue
			}
			if err := f(u); err != nil {
				return err
			}
		}
	}
	return nil
}

// RewrapTOTPSecrets seals every user's TOTP secret afresh under the vault's
// first key and returns how many it moved. A secret that changed while it
// ran is read again. It stops at the first secret it cannot open (sealed
// under a key not configured: a *vault.SecretKeyError), naming the user.
func RewrapTOTPSecrets(ctx context.Context, st paygate.Store, v *vault.Vault) (int, error) {
	moved := 0
	err := eachMFAUser(ctx, st, func(u paygate.User) error {
		for range rewrapTries {
			to, changed, err := v.RewrapSecret(totpContext(u), u.MFASecret)
			if err != nil {
				return fmt.Errorf("the TOTP secret of user %s: %w", u.ID, err)
			}
			if !changed {
				return nil
			}
			err = st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.MFASecretRewrap{
				MerchantID: u.MerchantID, UserID: u.ID, From: u.MFASecret, To: to}}})
			switch {
			case err == nil:
				moved++
				return nil
			case errors.Is(err, paygate.ErrStateConflict):
				users, err := st.Users(ctx, paygate.UserQuery{MerchantID: u.MerchantID, ID: u.ID})
				if err != nil {
					return fmt.Errorf("read user %s: %w", u.ID, err)
				}
				if len(users) != 1 || len(users[0].MFASecret) == 0 {
					return nil
				}
				u = users[0]
			case paygate.IsNotFound(err):
				return nil
			default:
				return fmt.Errorf("store the TOTP secret of user %s: %w", u.ID, err)
			}
		}
		return fmt.Errorf("the TOTP secret of user %s kept changing", u.ID)
	})
	return moved, err
}

// TOTPSecretKeyIDs counts the users' TOTP secrets by the id of the vault
// key that sealed them.
func TOTPSecretKeyIDs(ctx context.Context, st paygate.Store) (map[string]int, error) {
	ids := map[string]int{}
	err := eachMFAUser(ctx, st, func(u paygate.User) error {
		if id, err := vault.SecretKeyID(u.MFASecret); err == nil {
			ids[id]++
		}
		return nil
	})
	return ids, err
}

// TOTPSecretContext is the vault context a user's TOTP secret is sealed
// for: bound to the user, so a sealed secret cannot move to another one.
func TOTPSecretContext(u paygate.User) vault.SecretContext { return totpContext(u) }
