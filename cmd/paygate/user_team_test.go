package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
)

// withTestStore opens the database for a check or a setup step.
func withTestStore(t *testing.T, db string, f func(st paygate.Store)) {
	t.Helper()
	st, err := store.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f(st)
}

// cliAuditActions returns the actions of the merchant's audit entries
// written by the CLI, oldest first, and fails on an entry of the CLI that
// names a user as its actor.
func cliAuditActions(t *testing.T, db, merchantID string) []string {
	t.Helper()
	var out []string
	withTestStore(t, db, func(st paygate.Store) {
		entries, err := st.AuditLog(t.Context(), paygate.AuditQuery{MerchantID: merchantID})
		if err != nil {
			t.Fatal(err)
		}
		for i := len(entries) - 1; i >= 0; i-- {
			if e := entries[i]; e.Email == paygate.AuditActorCLI {
				if e.UserID != "" || e.Target == "" {
					t.Errorf("CLI audit entry %+v: want no user id and a target", e)
				}
				out = append(out, e.Action)
			}
		}
	})
	return out
}

func TestUserTeamCommands(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, db string) {
		m := newMerchant(t, db, "Team")
		create := func(email string, extra ...string) userCreated {
			t.Helper()
			var out userCreated
			jsonLine(t, cliRunStdin(t, "a long enough password\n", append([]string{"user", "create", "--merchant", m.MerchantID,
				"--email", email, "--password-stdin", "--database-url", db, "--json"}, extra...)...), &out)
			return out
		}
		ada := create("ada@example.com")
		bob := create("bob@example.com", "--role", "analyst")
		if ada.Role != "owner" || bob.Role != "analyst" {
			t.Fatalf("created roles %q and %q, want owner and analyst", ada.Role, bob.Role)
		}
		cliRunStdin(t, "a long enough password\n", "user", "create", "--merchant", m.MerchantID, "--email", "c@example.com",
			"--password-stdin", "--role", "boss", "--database-url", db).mustFail(t, 2, "invalid role")

		list := func() []userListed {
			t.Helper()
			r := cliRun(t, nil, "user", "list", "--merchant", m.MerchantID, "--json", "--database-url", db)
			var out []userListed
			jsonLine(t, r, &out)
			var raw []json.RawMessage
			if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil || len(raw) == 0 {
				t.Fatalf("user list --json: %q", r.stdout)
			}
			wantKeys(t, string(raw[0]), "id", "email", "role", "mfa", "lockedUntil", "createdAt")
			return out
		}
		got := list()
		if len(got) != 2 || got[0].ID != ada.ID || got[1].ID != bob.ID || got[1].Role != "analyst" ||
			got[0].MFA || got[0].LockedUntil != nil {
			t.Fatalf("user list: %+v", got)
		}
		parseTime(t, got[0].CreatedAt)
		if r := cliRun(t, nil, "user", "list", "--merchant", m.MerchantID, "--database-url", db).mustSucceed(t); !strings.Contains(r.stdout, "bob@example.com") {
			t.Errorf("user list table: %q", r.stdout)
		}
		cliRun(t, nil, "user", "list", "--merchant", id.New(), "--database-url", db).mustFail(t, 1, "merchant not found")

		// Roles.
		cliRun(t, nil, "user", "set-role", "--user", bob.ID, "--role", "admin", "--database-url", db).mustSucceed(t)
		cliRun(t, nil, "user", "set-role", "--user", ada.ID, "--role", "analyst", "--database-url", db).mustFail(t, 1, "last owner")
		cliRun(t, nil, "user", "set-role", "--user", ada.ID, "--role", "root", "--database-url", db).mustFail(t, 2, "invalid role")
		cliRun(t, nil, "user", "set-role", "--user", ada.ID, "--database-url", db).mustFail(t, 2, "--role")
		cliRun(t, nil, "user", "set-role", "--role", "admin", "--database-url", db).mustFail(t, 2, "--user")
		cliRun(t, nil, "user", "set-role", "--user", id.New(), "--role", "admin", "--database-url", db).mustFail(t, 1, "user not found")
		if got := list(); got[0].Role != "owner" || got[1].Role != "admin" {
			t.Errorf("roles after set-role: %+v", got)
		}

		// Lockout and unlock.
		withTestStore(t, db, func(st paygate.Store) {
			for range paygate.MaxFailedSignIns {
				err := st.Commit(t.Context(), paygate.Unit{Ops: []paygate.Op{paygate.SignInFailure{MerchantID: m.MerchantID,
					UserID: bob.ID, LockAfter: paygate.MaxFailedSignIns, LockUntil: time.Now().Add(paygate.LockoutDuration)}}})
				if err != nil {
					t.Fatal(err)
				}
			}
		})
		if got := list(); got[1].LockedUntil == nil || got[0].LockedUntil != nil {
			t.Errorf("after 10 failed sign-ins: %+v", got)
		}
		cliRun(t, nil, "user", "unlock", "--user", bob.ID, "--database-url", db).mustSucceed(t)
		if got := list(); got[1].LockedUntil != nil {
			t.Errorf("after unlock: %+v", got)
		}

		// A password reset signs the user out everywhere.
		session := paygate.Session{ID: id.New(), TokenHash: []byte(id.New()), UserID: bob.ID, MerchantID: m.MerchantID,
			CreatedAt: time.Now(), LastSeenAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
		withTestStore(t, db, func(st paygate.Store) {
			if err := st.Commit(t.Context(), paygate.Unit{Ops: []paygate.Op{session}}); err != nil {
				t.Fatal(err)
			}
		})
		cliRunStdin(t, "a brand new password\n", "user", "reset-password", "--user", bob.ID, "--database-url", db).
			mustFail(t, 2, "--password-stdin")
		cliRunStdin(t, "short\n", "user", "reset-password", "--user", bob.ID, "--password-stdin", "--database-url", db).
			mustFail(t, 1, "at least 12 characters")
		cliRunStdin(t, "a brand new password\n", "user", "reset-password", "--user", bob.ID, "--password-stdin", "--database-url", db).
			mustSucceed(t)
		withTestStore(t, db, func(st paygate.Store) {
			se, u, err := st.SessionByTokenHash(t.Context(), session.TokenHash)
			if err != nil {
				t.Fatal(err)
			}
			if se.RevokedAt == nil {
				t.Error("a session survived the password reset")
			}
			if ok, _ := auth.CheckPassword(u.PasswordHash, "a brand new password"); !ok {
				t.Error("the new password does not match")
			}
		})

		// Disable: never the last owner.
		cliRun(t, nil, "user", "disable", "--user", ada.ID, "--database-url", db).mustFail(t, 1, "last owner")
		cliRun(t, nil, "user", "disable", "--user", bob.ID, "--database-url", db).mustSucceed(t)
		withTestStore(t, db, func(st paygate.Store) {
			u, err := st.UserByEmail(t.Context(), "bob@example.com")
			if err != nil || u.DisabledAt == nil {
				t.Errorf("disabled user: %+v, %v", u, err)
			}
		})

		want := []string{paygate.AuditMerchantCreated, paygate.AuditUserCreated, paygate.AuditUserCreated, paygate.AuditUserRoleChanged,
			paygate.AuditUserUnlocked, paygate.AuditUserPasswordReset, paygate.AuditUserDisabled}
		if got := cliAuditActions(t, db, m.MerchantID); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("CLI audit entries %v, want %v", got, want)
		}
	})
}
