package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
)

// cliRunStdin runs the program in-process with stdin as standard input.
func cliRunStdin(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runWithStdin(context.Background(), args, func(string) string { return "" }, strings.NewReader(stdin), &stdout, &stderr,
		func(context.Context, serveConfig, io.Writer, io.Writer) error {
			t.Errorf("paygate %s: serve must not be called", strings.Join(args, " "))
			return nil
		})
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// storedUser reads a user back from the database.
func storedUser(t *testing.T, db, email string) paygate.User {
	t.Helper()
	st, err := store.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u, err := st.UserByEmail(t.Context(), email)
	if err != nil {
		t.Fatalf("UserByEmail(%s): %v", email, err)
	}
	return u
}

func TestUserCreate(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, db string) {
		m := newMerchant(t, db, "Users")
		const password = "  correct horse battery staple "
		before := time.Now()
		r := cliRunStdin(t, password+"\r\nsecond line is ignored\n",
			"user", "create", "--merchant", m.MerchantID, "--email", "  Ada@Example.COM ", "--password-stdin",
			"--database-url", db, "--json")
		var out userCreated
		jsonLine(t, r, &out)
		wantKeys(t, r.stdout, "id", "email", "role")
		if !id.Valid(out.ID) || out.Email != "ada@example.com" || out.Role != "owner" {
			t.Errorf("created %+v", out)
		}

		u := storedUser(t, db, "ada@example.com")
		near(t, "createdAt", u.CreatedAt, before, time.Now())
		if u.ID != out.ID || u.MerchantID != m.MerchantID || u.Role != paygate.RoleOwner {
			t.Errorf("stored %+v for %+v", u, out)
		}
		if ok, err := auth.CheckPassword(u.PasswordHash, password); err != nil || !ok {
			t.Errorf("the stored hash does not match the password read from stdin (spaces kept, CRLF dropped): %v", err)
		}
		if strings.Contains(r.stdout+r.stderr, strings.TrimSpace(password)) || strings.Contains(u.PasswordHash, "horse") {
			t.Error("the password appears in the output or the database")
		}

		// Text output.
		r = cliRunStdin(t, "another long password\n",
			"user", "create", "--merchant", m.MerchantID, "--email", "bob@example.com", "--password-stdin", "--database-url", db)
		r.mustSucceed(t)
		bob := storedUser(t, db, "bob@example.com")
		if want := "Created dashboard user " + bob.ID + " bob@example.com for merchant " + m.MerchantID + ".\n"; r.stdout != want {
			t.Errorf("stdout %q, want %q", r.stdout, want)
		}

		// Emails are unique whatever their case.
		cliRunStdin(t, "yet another password\n",
			"user", "create", "--merchant", m.MerchantID, "--email", "ADA@example.com", "--password-stdin", "--database-url", db).
			mustFail(t, 1, "a dashboard user with email ada@example.com already exists")
		other := newMerchant(t, db, "Other")
		cliRunStdin(t, "yet another password\n",
			"user", "create", "--merchant", other.MerchantID, "--email", "ada@example.com", "--password-stdin", "--database-url", db).
			mustFail(t, 1, "already exists")
		cliRunStdin(t, "yet another password\n",
			"user", "create", "--merchant", id.New(), "--email", "carol@example.com", "--password-stdin", "--database-url", db).
			mustFail(t, 1, "merchant not found")
	})
}

func TestUserCreateRefusals(t *testing.T) {
	t.Parallel()
	db := sqliteURL(t)
	m := newMerchant(t, db, "Refusals")
	args := func(extra ...string) []string {
		return append([]string{"user", "create", "--merchant", m.MerchantID, "--database-url", db}, extra...)
	}
	for _, c := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"ErrShortPassword", "eleven char\n", args("--email", "a@example.com", "--password-stdin"), 1, "at least 12 characters"},
		{"ErrShortAfterCRLF", "elevenchars\r\n", args("--email", "a@example.com", "--password-stdin"), 1, "at least 12 characters"},
		{"ErrNoPassword", "", args("--email", "a@example.com", "--password-stdin"), 1, "no password on stdin"},
		{"ErrEmptyLine", "\nsecond line password\n", args("--email", "a@example.com", "--password-stdin"), 1, "no password on stdin"},
		{"ErrLongPassword", strings.Repeat("x", 5000), args("--email", "a@example.com", "--password-stdin"), 1, "at most 1024 bytes"},
		{"ErrNoPasswordStdin", "long enough password\n", args("--email", "a@example.com"), 2, "--password-stdin"},
		{"ErrMissingEmail", "long enough password\n", args("--password-stdin"), 2, "missing required flag --email"},
		{"ErrMissingMerchant", "long enough password\n", []string{"user", "create", "--email", "a@example.com", "--password-stdin"}, 2, "--merchant"},
		{"ErrNoAt", "long enough password\n", args("--email", "ada.example.com", "--password-stdin"), 2, "not an email address"},
		{"ErrTwoAts", "long enough password\n", args("--email", "a@b@example.com", "--password-stdin"), 2, "not an email address"},
		{"ErrNoLocal", "long enough password\n", args("--email", "@example.com", "--password-stdin"), 2, "not an email address"},
		{"ErrNoDomain", "long enough password\n", args("--email", "ada@", "--password-stdin"), 2, "not an email address"},
		{"ErrSpace", "long enough password\n", args("--email", "ada lovelace@example.com", "--password-stdin"), 2, "not an email address"},
		{"ErrLongEmail", "long enough password\n", args("--email", strings.Repeat("a", 250)+"@x.io", "--password-stdin"), 2, "at most 254"},
		{"ErrPasswordFlag", "long enough password\n", args("--email", "a@example.com", "--password", "x"), 2, "unknown flag --password"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cliRunStdin(t, c.stdin, c.args...).mustFail(t, c.code, c.want)
		})
	}
	// Nothing was stored by any refusal.
	st, err := store.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.UserByEmail(t.Context(), "a@example.com"); !paygate.IsNotFound(err) {
		t.Errorf("a refused user was stored: %v", err)
	}
}

// When a key was last used is in key list's table; its JSON stays exactly
// the fields of decisions.md section 14.
func TestKeyListLastUsed(t *testing.T) {
	t.Parallel()
	db := sqliteURL(t)
	m := newMerchant(t, db, "Usage")
	table := func() string {
		t.Helper()
		r := cliRun(t, nil, "key", "list", "--merchant", m.MerchantID, "--database-url", db)
		if r.code != 0 {
			t.Fatalf("key list: exit %d, %s", r.code, r.stderr)
		}
		return r.stdout
	}
	line := func(out string) string {
		t.Helper()
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, m.TestSecretKeyID) {
				return l
			}
		}
		t.Fatalf("key %s not in the table:\n%s", m.TestSecretKeyID, out)
		return ""
	}
	out := table()
	if !strings.Contains(strings.SplitN(out, "\n", 2)[0], "LAST USED") || !strings.Contains(line(out), "never") {
		t.Fatalf("an unused key's row should say never:\n%s", out)
	}
	used := time.Date(2030, 1, 2, 3, 4, 5, 678000000, time.UTC)
	st, err := store.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Commit(t.Context(), paygate.Unit{Ops: []paygate.Op{paygate.APIKeyUsage{Used: map[string]time.Time{m.TestSecretKeyID: used}}}})
	_ = st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if l := line(table()); !strings.Contains(l, "2030-01-02T03:04:05.678Z") {
		t.Fatalf("a used key's row: %q, want it to name 2030-01-02T03:04:05.678Z", l)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(listKeys(t, db, m.MerchantID)[0], &fields); err != nil {
		t.Fatal(err)
	}
	if _, ok := fields["lastUsedAt"]; ok || len(fields) != 7 {
		t.Fatalf("key list --json fields %v, want exactly the 7 of decisions.md section 14", fields)
	}
}
