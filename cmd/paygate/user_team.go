package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/paygate/paygate/internal/account"
	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// The team commands of decisions.md section 17: user list, set-role,
// reset-password, disable and unlock. Every change is written with its
// audit entry (actor cli) in one unit.

// roleFlag is a --role flag: one of paygate.Roles, anything else a usage
// error.
type roleFlag struct{ role paygate.Role }

func (r *roleFlag) String() string { return string(r.role) }

func (r *roleFlag) Set(v string) error {
	role, ok := paygate.ParseRole(v)
	if !ok {
		return fmt.Errorf("invalid role %q: use %s", v, roleNames())
	}
	r.role = role
	return nil
}

// roleNames lists the roles, "owner|admin|developer|analyst".
func roleNames() string {
	names := make([]string, len(paygate.Roles))
	for i, r := range paygate.Roles {
		names[i] = string(r)
	}
	return strings.Join(names, "|")
}

// cliAudit is the audit entry of a change to u made through the CLI.
func cliAudit(u paygate.User, action, detail string, t time.Time) paygate.AuditEntry {
	return account.CLI.Entry(u.MerchantID, "", action, u.ID, detail, t)
}

// userByID loads a dashboard user, answering "user not found" for an
// unknown id.
func userByID(ctx context.Context, st paygate.Store, userID string) (paygate.User, error) {
	if !id.Valid(userID) {
		return paygate.User{}, fmt.Errorf("user not found: %q is not a user id", userID)
	}
	us, err := st.Users(ctx, paygate.UserQuery{ID: userID})
	if err != nil {
		return paygate.User{}, fmt.Errorf("read user: %w", err)
	}
	if len(us) == 0 {
		return paygate.User{}, fmt.Errorf("user not found: %s", userID)
	}
	return us[0], nil
}

// lastOwnerError explains a refusal to leave a merchant without an owner.
func lastOwnerError(u paygate.User) error {
	return fmt.Errorf("user %s is the last owner of merchant %s: give another user the owner role first", u.ID, u.MerchantID)
}

// userListed is one element of user list --json.
type userListed struct {
	ID          string  `json:"id"`
	Email       string  `json:"email"`
	Role        string  `json:"role"`
	MFA         bool    `json:"mfa"`
	LockedUntil *string `json:"lockedUntil"`
	CreatedAt   string  `json:"createdAt"`
}

func cmdUserList(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("user list", "--merchant ID [--json] [--database-url URL]")
	var dbURL, merchantID string
	var asJSON bool
	fs.databaseURL(&dbURL)
	fs.StringVar(&merchantID, "merchant", "", "merchant `ID` (required)")
	fs.BoolVar(&asJSON, "json", false, "print the result as one line of JSON")
	fs.notes = "lockedUntil is null unless the account is locked now (10 failed sign-ins lock it for 30 minutes)."
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "merchant"); err != nil {
		return err
	}
	var users []paygate.User
	err := withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		if _, err := findMerchant(ctx, st, dbURL, merchantID); err != nil {
			return err
		}
		var err error
		if users, err = st.Users(ctx, paygate.UserQuery{MerchantID: merchantID}); err != nil {
			return fmt.Errorf("list users: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	t := now()
	out := make([]userListed, 0, len(users))
	for _, u := range users {
		l := userListed{ID: u.ID, Email: u.Email, Role: string(u.Role), MFA: u.MFAEnabled(), CreatedAt: formatTime(u.CreatedAt)}
		if u.LockedAt(t) {
			l.LockedUntil = formatTimePtr(u.LockedUntil)
		}
		out = append(out, l)
	}
	if asJSON {
		return writeJSON(c.stdout, out)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEMAIL\tROLE\tMFA\tCREATED\tSTATUS")
	for i, u := range users {
		status := "active"
		switch {
		case u.Disabled():
			status = "disabled"
		case out[i].LockedUntil != nil:
			status = "locked until " + *out[i].LockedUntil
		}
		mfa := "off"
		if out[i].MFA {
			mfa = "on"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", u.ID, u.Email, u.Role, mfa, out[i].CreatedAt, status)
	}
	return tw.Flush()
}

// userChange runs one change of a user: it parses --user (and what flags
// adds), loads the user, and commits ops(u, t) (with their audit entry);
// done prints what was done.
func userChange(ctx context.Context, c *cli, args []string, name, synopsis string, flags func(*flagSet),
	check func() error, ops func(u paygate.User, t time.Time) ([]paygate.Op, error), done func() string) error {
	fs := newFlagSet(name, synopsis)
	var dbURL, userID string
	fs.databaseURL(&dbURL)
	fs.StringVar(&userID, "user", "", "the user's `ID` (see 'paygate user list') (required)")
	if flags != nil {
		flags(fs)
	}
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "user"); err != nil {
		return err
	}
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	var u paygate.User
	err := withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		var err error
		if u, err = userByID(ctx, st, userID); err != nil {
			return err
		}
		list, err := ops(u, now())
		if err != nil {
			return err
		}
		err = st.Commit(ctx, paygate.Unit{Ops: list})
		switch {
		case errors.Is(err, paygate.ErrStateConflict):
			return lastOwnerError(u)
		case paygate.IsNotFound(err):
			return fmt.Errorf("user not found: %s", userID)
		case err != nil:
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.stdout, done()+"\n", u.ID, u.Email)
	return err
}

func cmdUserSetRole(ctx context.Context, c *cli, args []string) error {
	var role roleFlag
	return userChange(ctx, c, args, "user set-role", "--user ID --role ROLE [--database-url URL]",
		func(fs *flagSet) {
			fs.Var(&role, "role", "the new `ROLE`: "+roleNames()+" (required)")
		},
		func() error {
			if role.role == "" {
				return usageErrorf("missing required flag --role (%s)", roleNames())
			}
			return nil
		},
		func(u paygate.User, t time.Time) ([]paygate.Op, error) {
			return []paygate.Op{
				paygate.UserRoleChange{MerchantID: u.MerchantID, UserID: u.ID, Role: role.role, At: t},
				cliAudit(u, paygate.AuditUserRoleChanged, fmt.Sprintf("role %s → %s", u.Role, role.role), t),
			}, nil
		}, func() string { return "Changed the role of user %s %s to " + role.String() + "." })
}

func cmdUserResetPassword(ctx context.Context, c *cli, args []string) error {
	var passwordStdin bool
	var hash string
	return userChange(ctx, c, args, "user reset-password", "--user ID --password-stdin [--database-url URL]",
		func(fs *flagSet) {
			fs.BoolVar(&passwordStdin, "password-stdin", false, "read the new password from the first line of stdin (required)")
			fs.notes = "Every session of the user is signed out."
		},
		func() error {
			if !passwordStdin {
				return usageErrorf("missing required flag --password-stdin: the password is read from stdin, never from the command line")
			}
			password, err := readPassword(c.stdin)
			if err != nil {
				return err
			}
			if err := auth.ValidatePassword(password); err != nil {
				return err
			}
			if hash, err = auth.HashPassword(password); err != nil {
				return fmt.Errorf("hash the password: %w", err)
			}
			return nil
		},
		func(u paygate.User, t time.Time) ([]paygate.Op, error) {
			return []paygate.Op{
				paygate.PasswordChange{MerchantID: u.MerchantID, UserID: u.ID, PasswordHash: hash, At: t},
				cliAudit(u, paygate.AuditUserPasswordReset, "sessions signed out", t),
			}, nil
		}, func() string { return "Reset the password of user %s %s; its sessions are signed out." })
}

func cmdUserDisable(ctx context.Context, c *cli, args []string) error {
	return userChange(ctx, c, args, "user disable", "--user ID [--database-url URL]",
		func(fs *flagSet) { fs.notes = "A disabled user cannot sign in; its sessions are signed out." }, nil,
		func(u paygate.User, t time.Time) ([]paygate.Op, error) {
			return []paygate.Op{
				paygate.UserDisable{MerchantID: u.MerchantID, UserID: u.ID, At: t},
				cliAudit(u, paygate.AuditUserDisabled, "sessions signed out", t),
			}, nil
		}, func() string { return "Disabled user %s %s; its sessions are signed out." })
}

func cmdUserUnlock(ctx context.Context, c *cli, args []string) error {
	return userChange(ctx, c, args, "user unlock", "--user ID [--database-url URL]",
		func(fs *flagSet) { fs.notes = "Lifts the lockout that 10 failed sign-ins set, and resets the count." }, nil,
		func(u paygate.User, t time.Time) ([]paygate.Op, error) {
			return []paygate.Op{
				paygate.UserUnlock{MerchantID: u.MerchantID, UserID: u.ID, At: t},
				cliAudit(u, paygate.AuditUserUnlocked, "", t),
			}, nil
		}, func() string { return "Unlocked user %s %s." })
}
