package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
	"github.com/paygate/paygate/internal/testenv"
)

// auditOf returns the merchant's audit log, oldest first.
func auditOf(t *testing.T, db, merchantID string) []paygate.AuditEntry {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	es, err := st.AuditLog(ctx, paygate.AuditQuery{MerchantID: merchantID})
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(es)-1; i < j; i, j = i+1, j-1 {
		es[i], es[j] = es[j], es[i]
	}
	return es
}

// wantAudit checks that entries after the first skip are exactly want
// (action, target, mode), all by the command line, and returns them.
func wantAudit(t *testing.T, db, merchantID string, skip int, want ...[3]string) []paygate.AuditEntry {
	t.Helper()
	es := auditOf(t, db, merchantID)
	if len(es) != skip+len(want) {
		t.Fatalf("audit log has %d entries after %d, want %d: %+v", len(es)-skip, skip, len(want), es)
	}
	es = es[skip:]
	for i, w := range want {
		e := es[i]
		if e.Action != w[0] || e.Target != w[1] || string(e.Mode) != w[2] {
			t.Errorf("entry %d = %s %q (%q), want %s %q (%q)", i, e.Action, e.Target, e.Mode, w[0], w[1], w[2])
		}
		if e.Email != paygate.AuditActorCLI || e.UserID != "" || e.MerchantID != merchantID || !id.Valid(e.ID) || e.CreatedAt.IsZero() {
			t.Errorf("entry %d is not the command line's: %+v", i, e)
		}
	}
	return es
}

// noSecrets fails when an entry carries one of the secrets, a webhook
// secret or the URL's password. (A key's hint, its prefix and last four
// characters, is what names it, as in the dashboard.)
func noSecrets(t *testing.T, es []paygate.AuditEntry, secrets ...string) {
	t.Helper()
	for _, e := range es {
		for _, s := range append(secrets, "whsec_", "hunter2") {
			if s != "" && (strings.Contains(e.Target, s) || strings.Contains(e.Detail, s)) {
				t.Errorf("audit entry %s carries %q: %+v", e.Action, s, e)
			}
		}
	}
}

func TestCLIAudit(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, db string) {
		run := func(args ...string) result { return cliRun(t, nil, append(args, "--database-url", db)...) }
		m := newMerchant(t, db, "Audited")
		es := wantAudit(t, db, m.MerchantID, 0, [3]string{paygate.AuditMerchantCreated, m.MerchantID, ""})
		if !strings.Contains(es[0].Detail, "Audited") || !strings.Contains(es[0].Detail, m.TestSecretKeyID) {
			t.Errorf("merchant.created detail %q", es[0].Detail)
		}
		noSecrets(t, es, m.TestSecretKey, m.LiveSecretKey, m.TestPublicKey, m.LivePublicKey)

		var k keyCreated
		jsonLine(t, run("key", "create", "--merchant", m.MerchantID, "--mode", "live", "--json"), &k)
		var rot keyRotated
		jsonLine(t, run("key", "rotate", "--key", k.ID, "--grace", "1h", "--json"), &rot)
		run("key", "revoke", "--key", rot.ID).mustSucceed(t)
		// Refusals change nothing and record nothing.
		run("key", "rotate", "--key", k.ID, "--grace", "1000h").mustFail(t, 2, "--grace")
		run("key", "rotate", "--key", rot.ID).mustFail(t, 1, "revoked")
		run("key", "create", "--merchant", id.New(), "--mode", "test").mustFail(t, 1, "merchant not found")
		es = wantAudit(t, db, m.MerchantID, 1,
			[3]string{paygate.AuditKeyCreated, k.ID, "live"},
			[3]string{paygate.AuditKeyRotated, k.ID, "live"},
			[3]string{paygate.AuditKeyRevoked, rot.ID, "live"},
		)
		noSecrets(t, es, k.Key, rot.Key)

		hook := "http://user:hunter2@127.0.0.1:9/hook"
		vk := newVaultKey(t)
		var set webhookSet
		jsonLine(t, run("webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", hook,
			"--events", "refund.failed", "--vault-key", vk, "--json"), &set)
		var set2 webhookSet
		jsonLine(t, run("webhook", "set", "--merchant", m.MerchantID, "--mode", "test", "--url", hook,
			"--rotate-secret", "--vault-key", vk, "--json"), &set2)
		var ping deliveryJSON
		jsonLine(t, run("webhook", "test", "--merchant", m.MerchantID, "--mode", "test", "--json"), &ping)
		var again deliveryJSON
		jsonLine(t, run("webhook", "resend", "--event", ping.EventID, "--json"), &again)
		shown := "http://user:xxxxx@127.0.0.1:9/hook"
		es = wantAudit(t, db, m.MerchantID, 4,
			[3]string{paygate.AuditWebhookChanged, shown, "test"},
			[3]string{paygate.AuditWebhookChanged, shown, "test"},
			[3]string{paygate.AuditWebhookRotated, shown, "test"},
			[3]string{paygate.AuditWebhookTested, ping.ID, "test"},
			[3]string{paygate.AuditWebhookResent, ping.EventID, "test"},
		)
		if es[0].Detail != "refund.failed" || es[1].Detail != "every event" || !strings.Contains(es[4].Detail, again.ID) {
			t.Errorf("webhook details %q, %q, %q", es[0].Detail, es[1].Detail, es[4].Detail)
		}
		noSecrets(t, es, set.Secret, set2.Secret)
	})
}

// TestCLIInstallChangesLogged checks that the changes of no merchant
// (providers drain and restore, vault rewrap) are logged with actor cli.
// It replaces the package's logger, so it does not run in parallel.
func TestCLIInstallChangesLogged(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	installLog = func() *slog.Logger { return logger }
	t.Cleanup(func() { installLog = slog.Default })

	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "p.db")
	cfg := filepath.Join(dir, "paygate.yaml")
	if err := os.WriteFile(cfg, []byte("providers:\n  - id: eu\n    kind: sandbox\nroutes:\n  test:\n    default: [eu]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PAYGATE_CONFIG": cfg}
	cliRun(t, env, "providers", "drain", "--provider", "eu", "--database-url", db).mustSucceed(t)
	cliRun(t, env, "providers", "restore", "--provider", "eu", "--database-url", db, "--json").mustSucceed(t)
	key := newVaultKey(t)
	cliRun(t, nil, "vault", "rewrap", "--vault-key", key, "--database-url", db, "--json").mustSucceed(t)
	// A refused command logs nothing.
	cliRun(t, env, "providers", "drain", "--provider", "nope", "--database-url", db).mustFail(t, 1, "no provider")

	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		got = append(got, m)
	}
	want := []string{"provider.drained", "provider.restored", "vault.rewrapped"}
	if len(got) != len(want) {
		t.Fatalf("logged %d lines, want %d:\n%s", len(got), len(want), buf.String())
	}
	for i, w := range want {
		if got[i]["actor"] != "cli" || got[i]["action"] != w || got[i]["database"] != db || got[i]["level"] != "INFO" {
			t.Errorf("line %d = %v, want actor cli, action %s, database %s", i, got[i], w, db)
		}
	}
	if got[0]["provider"] != "eu" {
		t.Errorf("drain line %v does not name the provider", got[0])
	}
	if strings.Contains(buf.String(), key) {
		t.Error("the vault key reached the log")
	}
}

func TestMerchantList(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, db string) {
		run := func(args ...string) result { return cliRun(t, nil, append(args, "--database-url", db)...) }
		r := run("merchant", "list").mustSucceed(t)
		if !strings.Contains(r.stdout, "No merchants in database "+redactURL(db)) {
			t.Errorf("empty list printed %q", r.stdout)
		}
		r = run("merchant", "list", "--json")
		var none []merchantListed
		jsonLine(t, r, &none)
		if r.stdout != "[]\n" {
			t.Errorf("empty --json printed %q, want []", r.stdout)
		}

		a := newMerchant(t, db, "First <&>")
		b := newMerchant(t, db, "Second")
		r = run("merchant", "list", "--json")
		var list []merchantListed
		jsonLine(t, r, &list)
		var raw []json.RawMessage
		if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil || len(raw) != 2 {
			t.Fatalf("list %s: %v", r.stdout, err)
		}
		wantKeys(t, string(raw[0]), "merchantId", "name", "createdAt")
		if list[0].MerchantID != a.MerchantID || list[0].Name != "First <&>" || list[1].MerchantID != b.MerchantID || list[1].Name != "Second" {
			t.Errorf("list %+v, want %s then %s, oldest first", list, a.MerchantID, b.MerchantID)
		}
		parseTime(t, list[0].CreatedAt)
		if !strings.Contains(r.stdout, `"First <&>"`) {
			t.Errorf("name not printed as given: %s", r.stdout)
		}
		out := run("merchant", "list").mustSucceed(t).stdout
		if !strings.Contains(out, a.MerchantID) || !strings.Contains(out, "Second") || !strings.HasPrefix(out, "ID") {
			t.Errorf("plain list:\n%s", out)
		}
		run("merchant", "list", "--json=maybe").mustFail(t, 2, "--json")
		run("merchant", "list", "extra").mustFail(t, 2, "unexpected argument")
	})
}

// TestNotFoundNamesDatabase checks that a command that finds no merchant,
// key or event says which database it looked in, without its password.
func TestNotFoundNamesDatabase(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(testenv.PostgresSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), "hunter2") // trust: the password is not checked
	pg := u.String()
	lite := sqliteURL(t)
	for _, c := range []struct {
		name string
		db   string
		args []string
		want string
	}{
		{"KeyListMerchant", lite, []string{"key", "list", "--merchant", id.New()}, "merchant not found"},
		{"KeyCreateMerchant", pg, []string{"key", "create", "--merchant", id.New(), "--mode", "test"}, "merchant not found"},
		{"MalformedMerchant", pg, []string{"key", "list", "--merchant", "acme"}, `merchant not found: "acme" is not a merchant id`},
		{"KeyRotate", pg, []string{"key", "rotate", "--key", id.New()}, "key not found"},
		{"KeyRevoke", lite, []string{"key", "revoke", "--key", id.New()}, "key not found"},
		{"WebhookSet", lite, []string{"webhook", "set", "--merchant", id.New(), "--mode", "test", "--url", "http://127.0.0.1:9/x"}, "merchant not found"},
		{"WebhookTest", pg, []string{"webhook", "test", "--merchant", id.New(), "--mode", "test"}, "merchant not found"},
		{"WebhookDeliveries", pg, []string{"webhook", "deliveries", "--merchant", id.New()}, "merchant not found"},
		{"WebhookResend", pg, []string{"webhook", "resend", "--event", id.New()}, "no such event"},
		{"WebhookResendMalformed", lite, []string{"webhook", "resend", "--event", "evt_1"}, "event not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			args := append(c.args, "--database-url", c.db)
			if c.db == pg && c.args[0] == "webhook" && c.args[1] == "set" {
				args = append(args, "--vault-key", newVaultKey(t))
			}
			r := cliRun(t, nil, args...)
			r.mustFail(t, 1, c.want)
			if !strings.Contains(r.stderr, "database "+redactURL(c.db)) {
				t.Errorf("stderr %q does not name the database %s", r.stderr, redactURL(c.db))
			}
			if strings.Contains(r.stderr, "hunter2") {
				t.Errorf("stderr %q shows the database password", r.stderr)
			}
		})
	}
}

// TestInvalidFlagValues checks that every malformed flag value, on every
// command that takes one, is a usage error (exit 2) naming the flag, and
// changes nothing.
func TestInvalidFlagValues(t *testing.T) {
	t.Parallel()
	db := sqliteURL(t)
	m := newMerchant(t, db, "Flags")
	k := m.TestSecretKeyID
	mid := m.MerchantID
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"MerchantListJSON", []string{"merchant", "list", "--json=2"}, "--json"},
		{"MerchantCreateName", []string{"merchant", "create", "--name", "a\x07b"}, "--name"},
		{"KeyCreateMode", []string{"key", "create", "--merchant", mid, "--mode", "LIVE"}, "--mode"},
		{"KeyListJSON", []string{"key", "list", "--merchant", mid, "--json=yes"}, "--json"},
		{"KeyRotateGrace", []string{"key", "rotate", "--key", k, "--grace", "1d"}, "--grace"},
		{"KeyRotateGraceTooLong", []string{"key", "rotate", "--key", k, "--grace", "721h"}, "--grace"},
		{"KeyRotateGraceNegative", []string{"key", "rotate", "--key", k, "--grace", "-1s"}, "--grace"},
		{"KeyRevokeJSON", []string{"key", "revoke", "--key", k, "--json=no way"}, "--json"},
		{"WebhookSetMode", []string{"webhook", "set", "--merchant", mid, "--mode", "prod", "--url", "https://example.com/x"}, "--mode"},
		{"WebhookSetURL", []string{"webhook", "set", "--merchant", mid, "--mode", "test", "--url", "example.com/x"}, "--url"},
		{"WebhookSetURLScheme", []string{"webhook", "set", "--merchant", mid, "--mode", "test", "--url", "ftp://example.com/x"}, "--url"},
		{"WebhookSetEvents", []string{"webhook", "set", "--merchant", mid, "--mode", "test", "--url", "https://example.com/x", "--events", "payment.exploded"}, "--events"},
		{"WebhookSetVaultKey", []string{"webhook", "set", "--merchant", mid, "--mode", "test", "--url", "https://example.com/x", "--vault-key", "c2hvcnQ="}, "--vault-key"},
		{"WebhookSetAllowPrivate", []string{"webhook", "set", "--merchant", mid, "--mode", "test", "--url", "https://example.com/x", "--allow-private-test-webhooks=perhaps"}, "--allow-private-test-webhooks"},
		{"DeliveriesMode", []string{"webhook", "deliveries", "--merchant", mid, "--mode", "both"}, "--mode"},
		{"DeliveriesStatus", []string{"webhook", "deliveries", "--merchant", mid, "--status", "done"}, "--status"},
		{"DeliveriesLimit", []string{"webhook", "deliveries", "--merchant", mid, "--limit", "ten"}, "--limit"},
		{"DeliveriesEvent", []string{"webhook", "deliveries", "--merchant", mid, "--event", "evt_1"}, "--event"},
		{"ResendWait", []string{"webhook", "resend", "--event", id.New(), "--wait", "-1s"}, "--wait"},
		{"ResendWaitUnit", []string{"webhook", "resend", "--event", id.New(), "--wait", "5"}, "--wait"},
		{"TestMode", []string{"webhook", "test", "--merchant", mid, "--mode", "sandbox"}, "--mode"},
		{"TestWait", []string{"webhook", "test", "--merchant", mid, "--mode", "test", "--wait", "forever"}, "--wait"},
		{"ProvidersJSON", []string{"providers", "--json=1x"}, "--json"},
		{"ProvidersDrainEmpty", []string{"providers", "drain", "--provider", ""}, "--provider"},
		{"VaultRewrapKey", []string{"vault", "rewrap", "--vault-key", "not base64!"}, "--vault-key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cliRun(t, nil, append(c.args, "--database-url", db)...).mustFail(t, exitUsage, c.want)
		})
	}
	// Nothing above changed the merchant.
	if es := auditOf(t, db, mid); len(es) != 1 {
		t.Errorf("usage errors wrote audit entries: %+v", es)
	}
}
