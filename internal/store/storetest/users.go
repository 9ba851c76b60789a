package storetest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// userCases covers the team of a merchant (issue 22): Users, roles and the
// guard of a merchant's last owner, removal, lockout, TOTP steps, recovery
// codes and invitations.
func userCases() []testCase {
	return []testCase{
		{"QueryAndRoles", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			owner := userValue(f, "owner@example.com", at(time.Minute))
			admin := userValue(f, "admin@example.com", at(2*time.Minute))
			admin.Role = paygate.RoleAdmin
			must(t, commit(ctx(t), s, owner, admin))
			other := newMerchant(t, s, base)
			stranger := userValue(other, "stranger@example.com", at(time.Minute))
			must(t, commit(ctx(t), s, stranger))

			got, err := s.Users(ctx(t), paygate.UserQuery{MerchantID: f.merchant.ID})
			must(t, err)
			equal(t, "merchant's users", []paygate.User{owner, admin}, got)
			got, err = s.Users(ctx(t), paygate.UserQuery{MerchantID: f.merchant.ID, ID: stranger.ID})
			must(t, err)
			equal(t, "another merchant's user", []paygate.User{}, got)
			got, err = s.Users(ctx(t), paygate.UserQuery{Email: "admin@example.com"})
			must(t, err)
			equal(t, "by email", []paygate.User{admin}, got)
			got, err = s.Users(ctx(t), paygate.UserQuery{})
			must(t, err)
			equal(t, "empty query", []paygate.User{}, got)
			// A user inserted without a role is an owner, as users of
			// before roles are.
			plain := userValue(f, "plain@example.com", at(3*time.Minute))
			plain.Role = ""
			must(t, commit(ctx(t), s, plain))
			if got := oneUser(t, s, plain.ID); got.Role != paygate.RoleOwner {
				t.Errorf("user inserted without a role: role %q, want owner", got.Role)
			}
			must(t, commit(ctx(t), s, paygate.UserDisable{MerchantID: f.merchant.ID, UserID: plain.ID, At: at(3 * time.Minute)}))

			must(t, commit(ctx(t), s, paygate.UserRoleChange{MerchantID: f.merchant.ID, UserID: admin.ID,
				Role: paygate.RoleDeveloper, At: at(time.Hour)}))
			admin.Role, admin.UpdatedAt = paygate.RoleDeveloper, at(time.Hour)
			got, err = s.Users(ctx(t), paygate.UserQuery{ID: admin.ID})
			must(t, err)
			equal(t, "changed role", []paygate.User{admin}, got)

			// The last enabled owner keeps the owner role.
			wantIs(t, commit(ctx(t), s, paygate.UserRoleChange{MerchantID: f.merchant.ID, UserID: owner.ID,
				Role: paygate.RoleAdmin, At: at(time.Hour)}), paygate.ErrStateConflict)
			wantIs(t, commit(ctx(t), s, paygate.UserDisable{MerchantID: f.merchant.ID, UserID: owner.ID,
				At: at(time.Hour)}), paygate.ErrStateConflict)
			// Another merchant's user is not found.
			wantNotFound(t, commit(ctx(t), s, paygate.UserRoleChange{MerchantID: f.merchant.ID, UserID: stranger.ID,
				Role: paygate.RoleAdmin, At: at(time.Hour)}))
			wantNotFound(t, commit(ctx(t), s, paygate.UserDisable{MerchantID: f.merchant.ID, UserID: stranger.ID,
				At: at(time.Hour)}))

			// With a second owner, the first may step down, and then the
			// second may not.
			must(t, commit(ctx(t), s, paygate.UserRoleChange{MerchantID: f.merchant.ID, UserID: admin.ID,
				Role: paygate.RoleOwner, At: at(time.Hour)}))
			must(t, commit(ctx(t), s, paygate.UserRoleChange{MerchantID: f.merchant.ID, UserID: owner.ID,
				Role: paygate.RoleAnalyst, At: at(time.Hour)}))
			wantIs(t, commit(ctx(t), s, paygate.UserRoleChange{MerchantID: f.merchant.ID, UserID: admin.ID,
				Role: paygate.RoleAnalyst, At: at(time.Hour)}), paygate.ErrStateConflict)
		}},
		{"Disable", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			owner := userValue(f, "owner@example.com", base)
			dev := userValue(f, "dev@example.com", base)
			dev.Role = paygate.RoleDeveloper
			must(t, commit(ctx(t), s, owner, dev))
			se := sessionValue(dev, at(time.Minute))
			must(t, commit(ctx(t), s, se))
			must(t, commit(ctx(t), s, paygate.UserDisable{MerchantID: f.merchant.ID, UserID: dev.ID, At: at(time.Hour)}))
			gotS, gotU, err := s.SessionByTokenHash(ctx(t), se.TokenHash)
			must(t, err)
			if gotS.RevokedAt == nil || !gotS.RevokedAt.Equal(at(time.Hour)) {
				t.Errorf("session of a disabled user: revoked at %v, want %v", gotS.RevokedAt, at(time.Hour))
			}
			if gotU.DisabledAt == nil || !gotU.DisabledAt.Equal(at(time.Hour)) {
				t.Errorf("disabled user: DisabledAt %v, want %v", gotU.DisabledAt, at(time.Hour))
			}
			// Disabling again keeps the first time.
			must(t, commit(ctx(t), s, paygate.UserDisable{MerchantID: f.merchant.ID, UserID: dev.ID, At: at(2 * time.Hour)}))
			us, err := s.Users(ctx(t), paygate.UserQuery{ID: dev.ID})
			must(t, err)
			if len(us) != 1 || us[0].DisabledAt == nil || !us[0].DisabledAt.Equal(at(time.Hour)) {
				t.Errorf("disabled twice: %+v", us)
			}
			// A disabled owner does not count as the merchant's owner.
			must(t, commit(ctx(t), s, paygate.UserRoleChange{MerchantID: f.merchant.ID, UserID: dev.ID,
				Role: paygate.RoleOwner, At: at(time.Hour)}))
			wantIs(t, commit(ctx(t), s, paygate.UserRoleChange{MerchantID: f.merchant.ID, UserID: owner.ID,
				Role: paygate.RoleAdmin, At: at(time.Hour)}), paygate.ErrStateConflict)
		}},
		{"Lockout", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			u := userValue(f, "ada@example.com", base)
			must(t, commit(ctx(t), s, u))
			fail := paygate.SignInFailure{MerchantID: f.merchant.ID, UserID: u.ID,
				LockAfter: paygate.MaxFailedSignIns, LockUntil: at(30 * time.Minute)}
			for range paygate.MaxFailedSignIns - 1 {
				must(t, commit(ctx(t), s, fail))
			}
			got := oneUser(t, s, u.ID)
			if got.FailedSignIns != paygate.MaxFailedSignIns-1 || got.LockedUntil != nil {
				t.Fatalf("after %d failures: count %d, locked until %v", paygate.MaxFailedSignIns-1, got.FailedSignIns, got.LockedUntil)
			}
			must(t, commit(ctx(t), s, fail))
			got = oneUser(t, s, u.ID)
			if got.LockedUntil == nil || !got.LockedUntil.Equal(at(30*time.Minute)) || got.FailedSignIns != 0 {
				t.Fatalf("after %d failures: count %d, locked until %v", paygate.MaxFailedSignIns, got.FailedSignIns, got.LockedUntil)
			}
			if !got.LockedAt(at(29*time.Minute)) || got.LockedAt(at(30*time.Minute)) {
				t.Errorf("LockedAt: wrong around %v", got.LockedUntil)
			}
			must(t, commit(ctx(t), s, fail))
			must(t, commit(ctx(t), s, paygate.UserUnlock{MerchantID: f.merchant.ID, UserID: u.ID, At: at(time.Minute)}))
			got = oneUser(t, s, u.ID)
			if got.LockedUntil != nil || got.FailedSignIns != 0 {
				t.Errorf("after unlock: count %d, locked until %v", got.FailedSignIns, got.LockedUntil)
			}
			must(t, commit(ctx(t), s, fail))
			must(t, commit(ctx(t), s, paygate.SignInSuccess{MerchantID: f.merchant.ID, UserID: u.ID, At: at(time.Hour)}))
			got = oneUser(t, s, u.ID)
			if got.FailedSignIns != 0 || got.LastSignInAt == nil || !got.LastSignInAt.Equal(at(time.Hour)) {
				t.Errorf("after a sign-in: count %d, last sign-in %v", got.FailedSignIns, got.LastSignInAt)
			}
			other := newMerchant(t, s, base)
			fail.MerchantID = other.merchant.ID
			wantNotFound(t, commit(ctx(t), s, fail))
			wantNotFound(t, commit(ctx(t), s, paygate.UserUnlock{MerchantID: other.merchant.ID, UserID: u.ID, At: base}))
		}},
		{"LockoutRace", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			u := userValue(f, "ada@example.com", base)
			must(t, commit(ctx(t), s, u))
			fail := paygate.SignInFailure{MerchantID: f.merchant.ID, UserID: u.ID,
				LockAfter: paygate.MaxFailedSignIns, LockUntil: at(30 * time.Minute)}
			errs := parallel(paygate.MaxFailedSignIns, func(int) error { return commit(ctx(t), s, fail) })
			for _, err := range errs {
				must(t, err)
			}
			if got := oneUser(t, s, u.ID); got.LockedUntil == nil {
				t.Errorf("%d failures at once: not locked (count %d)", paygate.MaxFailedSignIns, got.FailedSignIns)
			}
		}},
		{"LockedRefusesSignIn", func(t *testing.T, s paygate.Store) {
			// A lock set by failures in parallel with a right code: the
			// code, a recovery code and the sign-in itself are refused
			// while the account is locked at the unit's time, whatever the
			// caller read before (issue 22 review).
			f := newMerchant(t, s, base)
			u := userValue(f, "ada@example.com", base)
			must(t, commit(ctx(t), s, u))
			h := sha256.Sum256([]byte("code-locked"))
			must(t, commit(ctx(t), s, paygate.MFAChange{MerchantID: f.merchant.ID, UserID: u.ID, Secret: randomBytes(48),
				RecoveryCodeHashes: [][]byte{h[:]}, At: at(time.Minute)}))
			fail := paygate.SignInFailure{MerchantID: f.merchant.ID, UserID: u.ID,
				LockAfter: 1, LockUntil: at(30 * time.Minute)}
			must(t, commit(ctx(t), s, fail))
			during := at(10 * time.Minute)
			wantIs(t, commit(ctx(t), s, paygate.TOTPStepUse{MerchantID: f.merchant.ID, UserID: u.ID, Step: 100, At: during}),
				paygate.ErrStateConflict)
			wantIs(t, commit(ctx(t), s, paygate.RecoveryCodeUse{MerchantID: f.merchant.ID, UserID: u.ID, CodeHash: h[:], At: during}),
				paygate.ErrStateConflict)
			wantIs(t, commit(ctx(t), s, paygate.SignInSuccess{MerchantID: f.merchant.ID, UserID: u.ID, At: during}),
				paygate.ErrStateConflict)
			// The session of a refused sign-in is not kept: the unit fails whole.
			sess := paygate.Session{ID: newID(), TokenHash: randomBytes(32), UserID: u.ID, MerchantID: f.merchant.ID,
				CreatedAt: during, LastSeenAt: during, ExpiresAt: during.Add(time.Hour)}
			wantIs(t, commit(ctx(t), s, sess, paygate.SignInSuccess{MerchantID: f.merchant.ID, UserID: u.ID, At: during}),
				paygate.ErrStateConflict)
			if _, _, err := s.SessionByTokenHash(ctx(t), sess.TokenHash); !paygate.IsNotFound(err) {
				t.Errorf("session of a sign-in refused as locked: %v, want NOT_FOUND", err)
			}
			got := oneUser(t, s, u.ID)
			if got.MFALastStep != 0 || got.LastSignInAt != nil {
				t.Errorf("a locked account changed: last step %d, last sign-in %v", got.MFALastStep, got.LastSignInAt)
			}
			// When the lock ends (at its end exactly), all three work again.
			after := at(30 * time.Minute)
			must(t, commit(ctx(t), s, paygate.TOTPStepUse{MerchantID: f.merchant.ID, UserID: u.ID, Step: 100, At: after}))
			must(t, commit(ctx(t), s, paygate.RecoveryCodeUse{MerchantID: f.merchant.ID, UserID: u.ID, CodeHash: h[:], At: after}))
			must(t, commit(ctx(t), s, paygate.SignInSuccess{MerchantID: f.merchant.ID, UserID: u.ID, At: after}))
		}},
		{"MFASecretRewrap", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			u := userValue(f, "ada@example.com", base)
			must(t, commit(ctx(t), s, u))
			h := sha256.Sum256([]byte("code"))
			old := randomBytes(48)
			must(t, commit(ctx(t), s, paygate.MFAChange{MerchantID: f.merchant.ID, UserID: u.ID, Secret: old,
				RecoveryCodeHashes: [][]byte{h[:]}, At: at(time.Minute)}))
			must(t, commit(ctx(t), s, paygate.TOTPStepUse{MerchantID: f.merchant.ID, UserID: u.ID, Step: 7, At: at(time.Minute)}))
			before := oneUser(t, s, u.ID)
			moved := randomBytes(48)
			must(t, commit(ctx(t), s, paygate.MFASecretRewrap{MerchantID: f.merchant.ID, UserID: u.ID, From: old, To: moved}))
			want := before
			want.MFASecret = moved
			equal(t, "rewrapped user", want, oneUser(t, s, u.ID))
			// The recovery code is still there.
			must(t, commit(ctx(t), s, paygate.RecoveryCodeUse{MerchantID: f.merchant.ID, UserID: u.ID, CodeHash: h[:], At: at(time.Hour)}))
			// A secret that changed since it was read is not replaced.
			wantIs(t, commit(ctx(t), s, paygate.MFASecretRewrap{MerchantID: f.merchant.ID, UserID: u.ID, From: old, To: randomBytes(48)}),
				paygate.ErrStateConflict)
			other := newMerchant(t, s, base)
			wantNotFound(t, commit(ctx(t), s, paygate.MFASecretRewrap{MerchantID: other.merchant.ID, UserID: u.ID, From: moved, To: old}))
			equal(t, "secret after refusals", moved, oneUser(t, s, u.ID).MFASecret)
		}},
		{"MFA", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			u := userValue(f, "ada@example.com", base)
			must(t, commit(ctx(t), s, u))
			var hashes [][]byte
			for i := range 10 {
				h := sha256.Sum256(fmt.Appendf(nil, "code-%d", i))
				hashes = append(hashes, h[:])
			}
			sealed := randomBytes(48)
			must(t, commit(ctx(t), s, paygate.MFAChange{MerchantID: f.merchant.ID, UserID: u.ID, Secret: sealed,
				RecoveryCodeHashes: hashes, At: at(time.Minute)}))
			got := oneUser(t, s, u.ID)
			equal(t, "sealed secret", sealed, got.MFASecret)
			if !got.MFAEnabled() || !got.MFAEnabledAt.Equal(at(time.Minute)) {
				t.Errorf("MFA not enabled: %v", got.MFAEnabledAt)
			}

			step := func(n int64) error {
				return commit(ctx(t), s, paygate.TOTPStepUse{MerchantID: f.merchant.ID, UserID: u.ID, Step: n, At: at(time.Hour)})
			}
			must(t, step(100))
			wantIs(t, step(100), paygate.ErrStateConflict)
			wantIs(t, step(99), paygate.ErrStateConflict)
			must(t, step(101))

			use := func(h []byte) error {
				return commit(ctx(t), s, paygate.RecoveryCodeUse{MerchantID: f.merchant.ID, UserID: u.ID, CodeHash: h, At: at(time.Hour)})
			}
			must(t, use(hashes[0]))
			wantIs(t, use(hashes[0]), paygate.ErrStateConflict)
			wantNotFound(t, use(randomBytes(32)))
			// Two requests with one code: one wins.
			errs := parallel(2, func(int) error { return use(hashes[1]) })
			if won := countNil(errs); won != 1 {
				t.Errorf("one recovery code used by two requests at once: %d succeeded (%v)", won, errs)
			}
			other := newMerchant(t, s, base)
			wantNotFound(t, commit(ctx(t), s, paygate.RecoveryCodeUse{MerchantID: other.merchant.ID, UserID: u.ID,
				CodeHash: hashes[2], At: at(time.Hour)}))

			// Disabling forgets the secret and the codes.
			must(t, commit(ctx(t), s, paygate.MFAChange{MerchantID: f.merchant.ID, UserID: u.ID, At: at(2 * time.Hour)}))
			got = oneUser(t, s, u.ID)
			if got.MFAEnabled() || got.MFASecret != nil || got.MFAEnabledAt != nil {
				t.Errorf("MFA disabled: secret %x, enabled at %v", got.MFASecret, got.MFAEnabledAt)
			}
			wantNotFound(t, use(hashes[3]))
		}},
		{"Invitations", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			owner := userValue(f, "owner@example.com", base)
			must(t, commit(ctx(t), s, owner))
			invite := func(email string, created time.Time) paygate.Invitation {
				return paygate.Invitation{ID: newID(), MerchantID: f.merchant.ID, Email: email, Role: paygate.RoleAnalyst,
					TokenHash: randomBytes(32), CreatedBy: owner.ID, CreatedAt: created,
					ExpiresAt: created.Add(paygate.InvitationTTL)}
			}
			a, b, c := invite("a@example.com", at(time.Minute)), invite("b@example.com", at(2*time.Minute)),
				invite("c@example.com", at(3*time.Minute))
			must(t, commit(ctx(t), s, a, b, c))
			got, err := s.Invitations(ctx(t), paygate.InvitationQuery{MerchantID: f.merchant.ID})
			must(t, err)
			equal(t, "invitations", []paygate.Invitation{c, b, a}, got)
			got, err = s.Invitations(ctx(t), paygate.InvitationQuery{TokenHash: b.TokenHash})
			must(t, err)
			equal(t, "by token", []paygate.Invitation{b}, got)
			other := newMerchant(t, s, base)
			got, err = s.Invitations(ctx(t), paygate.InvitationQuery{MerchantID: other.merchant.ID, TokenHash: b.TokenHash})
			must(t, err)
			equal(t, "another merchant's", []paygate.Invitation{}, got)
			dup := invite("d@example.com", base)
			dup.TokenHash = a.TokenHash
			wantIs(t, commit(ctx(t), s, dup), paygate.ErrConflict)
			ghost := invite("g@example.com", base)
			ghost.MerchantID = newID()
			wantNotFound(t, commit(ctx(t), s, ghost))

			accept := func(inv paygate.Invitation, when time.Time) (paygate.User, error) {
				u := userValue(f, inv.Email, when)
				u.Role = inv.Role
				return u, commit(ctx(t), s, paygate.InvitationAcceptance{TokenHash: inv.TokenHash, User: u, At: when})
			}
			u, err := accept(a, at(time.Hour))
			must(t, err)
			if got := oneUser(t, s, u.ID); got.Role != paygate.RoleAnalyst {
				t.Errorf("accepted invitation: user role %q", got.Role)
			}
			got, err = s.Invitations(ctx(t), paygate.InvitationQuery{TokenHash: a.TokenHash})
			must(t, err)
			if len(got) != 1 || got[0].AcceptedAt == nil || got[0].UsableAt(at(time.Hour)) {
				t.Errorf("accepted invitation: %+v", got)
			}
			_, err = accept(a, at(time.Hour))
			wantIs(t, err, paygate.ErrStateConflict)
			// Expired.
			_, err = accept(b, b.ExpiresAt)
			wantIs(t, err, paygate.ErrStateConflict)
			// Revoked.
			must(t, commit(ctx(t), s, paygate.InvitationRevocation{MerchantID: f.merchant.ID, ID: c.ID, At: at(time.Hour)}))
			_, err = accept(c, at(time.Hour))
			wantIs(t, err, paygate.ErrStateConflict)
			wantNotFound(t, commit(ctx(t), s, paygate.InvitationRevocation{MerchantID: other.merchant.ID, ID: b.ID, At: at(time.Hour)}))
			_, err = accept(invite("x@example.com", base), at(time.Hour))
			wantNotFound(t, err)
			// A user of the invitation is of its merchant.
			u = userValue(other, "e@example.com", at(time.Hour))
			wantIs(t, commit(ctx(t), s, paygate.InvitationAcceptance{TokenHash: b.TokenHash, User: u, At: at(time.Hour)}),
				paygate.ErrStateConflict)
			// Two accepts of one link at once: one wins.
			e := invite("e@example.com", at(time.Hour))
			must(t, commit(ctx(t), s, e))
			errs := parallel(2, func(i int) error {
				u := userValue(f, fmt.Sprintf("e%d@example.com", i), at(time.Hour))
				return commit(ctx(t), s, paygate.InvitationAcceptance{TokenHash: e.TokenHash, User: u, At: at(2 * time.Hour)})
			})
			if won := countNil(errs); won != 1 {
				t.Errorf("one invitation accepted twice at once: %d succeeded (%v)", won, errs)
			}
			for _, err := range errs {
				if err != nil && !errors.Is(err, paygate.ErrStateConflict) {
					t.Errorf("the losing accept: %v, want a state conflict", err)
				}
			}
		}},
	}
}

// oneUser returns the user with the id.
func oneUser(t *testing.T, s paygate.Store, id string) paygate.User {
	t.Helper()
	us, err := s.Users(ctx(t), paygate.UserQuery{ID: id})
	must(t, err)
	if len(us) != 1 {
		t.Fatalf("user %s: %d rows", id, len(us))
	}
	return us[0]
}

// parallel runs f(0..n-1) at once and returns their errors.
func parallel(n int, f func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errs
}

func countNil(errs []error) int {
	n := 0
	for _, err := range errs {
		if err == nil {
			n++
		}
	}
	return n
}
