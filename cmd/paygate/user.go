package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// maxEmail is the longest email address accepted, in bytes (RFC 5321's
// path limit less the brackets).
const maxEmail = 254

// userCreated is the --json output of user create (decisions.md section
// 17).
type userCreated struct {
	ID    string `json:"id"`
	Email string `json:"email"`
	Role  string `json:"role"`
}

func cmdUserCreate(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("user create", "--merchant ID --email EMAIL --password-stdin [--role ROLE] [--json] [--database-url URL]")
	var dbURL, merchantID, email string
	var passwordStdin, asJSON bool
	role := roleFlag{role: paygate.RoleOwner}
	fs.databaseURL(&dbURL)
	fs.Var(&role, "role", "the user's `ROLE`: "+roleNames()+" (default owner)")
	fs.StringVar(&merchantID, "merchant", "", "merchant `ID` the user signs in to (required)")
	fs.StringVar(&email, "email", "", "the user's sign-in `EMAIL`, stored in lower case (required)")
	fs.BoolVar(&passwordStdin, "password-stdin", false, "read the password from the first line of stdin (required)")
	fs.BoolVar(&asJSON, "json", false, "print the result as one line of JSON")
	fs.notes = fmt.Sprintf("The password must have at least %d characters. It is stored only as an argon2id hash.\n"+
		"Example: printf '%%s\\n' \"$PASSWORD\" | paygate user create --merchant ID --email ada@example.com --password-stdin",
		auth.MinPasswordRunes)
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "merchant", "email"); err != nil {
		return err
	}
	if !passwordStdin {
		return usageErrorf("missing required flag --password-stdin: the password is read from stdin, never from the command line (see 'paygate user create --help')")
	}
	email, err := normalizeEmail(email)
	if err != nil {
		return usageErrorf("--email: %v", err)
	}
	password, err := readPassword(c.stdin)
	if err != nil {
		return err
	}
	if err := auth.ValidatePassword(password); err != nil {
		return err
	}
	hash, err := auth.HashPassword(password)
	if err != nil {
		return fmt.Errorf("hash the password: %w", err)
	}

	var u paygate.User
	err = withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		m, err := findMerchant(ctx, st, dbURL, merchantID)
		if err != nil {
			return err
		}
		t := now()
		u = paygate.User{ID: id.New(), MerchantID: m.ID, Email: email, PasswordHash: hash, Role: role.role,
			CreatedAt: t, UpdatedAt: t}
		err = st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{u,
			cliAudit(u, paygate.AuditUserCreated, "created with role "+string(u.Role), t)}})
		switch {
		case errors.Is(err, paygate.ErrConflict):
			return fmt.Errorf("a dashboard user with email %s already exists", email)
		case paygate.IsNotFound(err):
			return fmt.Errorf("merchant not found: %s", merchantID)
		case err != nil:
			return fmt.Errorf("create user: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c.stdout, userCreated{ID: u.ID, Email: u.Email, Role: string(u.Role)})
	}
	_, err = fmt.Fprintf(c.stdout, "Created dashboard user %s %s for merchant %s.\n", u.ID, u.Email, u.MerchantID)
	return err
}

// normalizeEmail trims and lower-cases an email address and checks that it
// looks like one: one @ with text on either side, no spaces or control
// characters, at most maxEmail bytes.
func normalizeEmail(raw string) (string, error) {
	email := strings.ToLower(strings.TrimSpace(raw))
	if len(email) > maxEmail {
		return "", fmt.Errorf("an email address has at most %d characters", maxEmail)
	}
	local, domain, ok := strings.Cut(email, "@")
	if !ok || local == "" || domain == "" || strings.Contains(domain, "@") {
		return "", fmt.Errorf("%q is not an email address", raw)
	}
	if strings.IndexFunc(email, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return "", fmt.Errorf("%q is not an email address: it contains a space or a control character", raw)
	}
	return email, nil
}

// readPassword returns the first line of r without its line ending. It
// reads no more than a password may hold, so a huge input is refused
// without being read whole.
func readPassword(r io.Reader) (string, error) {
	if r == nil {
		return "", errors.New("no password on stdin")
	}
	br := bufio.NewReader(io.LimitReader(r, auth.MaxPasswordBytes+3))
	line, err := br.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password from stdin: %w", err)
	}
	ended := strings.HasSuffix(line, "\n")
	line = strings.TrimSuffix(line, "\n")
	line = strings.TrimSuffix(line, "\r")
	if !ended && len(line) > auth.MaxPasswordBytes {
		return "", auth.ErrPasswordTooLong
	}
	if line == "" {
		return "", errors.New("no password on stdin: give it on the first line")
	}
	return line, nil
}
