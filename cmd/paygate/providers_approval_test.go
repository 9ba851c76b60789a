package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/provider"
)

// TestProvidersSetApproval: set-approval stores the override, `paygate
// providers` shows it, --clear removes it, and every change is one log
// line with actor cli. It replaces the package's logger, so it does not
// run in parallel.
func TestProvidersSetApproval(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	installLog = func() *slog.Logger { return logger }
	t.Cleanup(func() { installLog = slog.Default })

	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "p.db")
	cfg := filepath.Join(dir, "paygate.yaml")
	if err := os.WriteFile(cfg, []byte(`
providers:
  - {id: a, kind: sandbox, sandbox: {approvalRate: 0.95}}
  - {id: b, kind: sandbox}
routes:
  test:
    default: [a, b]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PAYGATE_CONFIG": cfg, "PAYGATE_DATABASE_URL": db}

	r := cliRun(t, env, "providers", "set-approval", "--provider", "a", "--rate", "0.6").mustSucceed(t)
	if !strings.Contains(r.stdout, "Provider a approves 60% of the cards outside the test-card table (configured: 95%)") {
		t.Fatalf("set-approval said %q", r.stdout)
	}
	r = cliRun(t, env, "providers", "--json").mustSucceed(t)
	var out providersOutput
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	a, b := out.Modes[0].Providers[0], out.Modes[0].Providers[1]
	if a.ID != "a" || a.ApprovalRate == nil || *a.ApprovalRate != 0.6 || a.Drained || a.State != "available" || b.ApprovalRate != nil {
		t.Fatalf("providers after set-approval: %+v %+v", a, b)
	}
	// changedAt is the last drain or restore: a, only overridden, has none.
	if a.ChangedAt != nil {
		t.Fatalf("changedAt %s of a provider never drained or restored", *a.ChangedAt)
	}
	if strings.Count(r.stdout, "approvalRate") != 1 {
		t.Fatalf("approvalRate shown for a provider without an override: %s", r.stdout)
	}
	r = cliRun(t, env, "providers").mustSucceed(t)
	if !strings.Contains(r.stdout, "approval rate overridden: 60% (set-approval)") {
		t.Fatalf("text table:\n%s", r.stdout)
	}
	// A drain keeps the override.
	cliRun(t, env, "providers", "drain", "--provider", "a").mustSucceed(t)
	r = cliRun(t, env, "providers", "set-approval", "--provider", "a", "--rate", "0", "--json").mustSucceed(t)
	var set approvalOutput
	if err := json.Unmarshal([]byte(r.stdout), &set); err != nil || set.Provider != "a" || set.ApprovalRate == nil ||
		*set.ApprovalRate != 0 || set.ConfiguredRate != 0.95 || set.ChangedAt == "" {
		t.Fatalf("set-approval --json: %q, %v", r.stdout, err)
	}
	r = cliRun(t, env, "providers", "set-approval", "--provider", "a", "--clear", "--json").mustSucceed(t)
	if err := json.Unmarshal([]byte(r.stdout), &set); err != nil || set.ApprovalRate != nil ||
		!strings.Contains(r.stdout, `"approvalRate":null`) {
		t.Fatalf("clear --json: %q, %v", r.stdout, err)
	}
	r = cliRun(t, env, "providers", "--json").mustSucceed(t)
	var cleared providersOutput // a fresh value: Unmarshal keeps fields the JSON leaves out
	if err := json.Unmarshal([]byte(r.stdout), &cleared); err != nil {
		t.Fatal(err)
	}
	if a := cleared.Modes[0].Providers[0]; a.ApprovalRate != nil || !a.Drained {
		t.Fatalf("after clear: %+v", a)
	}

	// Refusals change and log nothing.
	for _, bad := range []string{"1.5", "-0.1", "NaN", "often", ""} {
		cliRun(t, env, "providers", "set-approval", "--provider", "b", "--rate", bad).mustFail(t, exitUsage, "--rate")
	}
	cliRun(t, env, "providers", "set-approval", "--provider", "b").mustFail(t, exitUsage, "missing required flag --rate")
	cliRun(t, env, "providers", "set-approval", "--provider", "b", "--rate", "0.5", "--clear").mustFail(t, exitUsage, "not both")
	cliRun(t, env, "providers", "set-approval", "--rate", "0.5").mustFail(t, exitUsage, "missing required flag --provider")
	cliRun(t, env, "providers", "set-approval", "--provider", "nope", "--rate", "0.5").mustFail(t, exitFailure, `no provider "nope"`)

	var actions []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["actor"] != "cli" || m["provider"] != "a" {
			t.Fatalf("log line %v", m)
		}
		actions = append(actions, m["action"].(string))
	}
	want := "provider.approval_set provider.drained provider.approval_set provider.approval_cleared"
	if got := strings.Join(actions, " "); got != want {
		t.Fatalf("logged %q, want %q", got, want)
	}
}

// TestSetApprovalOnlySandboxes: a provider of another kind is a failure
// (exit 1, not a usage error) that says why.
func TestSetApprovalOnlySandboxes(t *testing.T) {
	t.Parallel()
	cfg, err := provider.ParseConfig("paygate.yaml", []byte(`
providers:
  - {id: stripe-live, kind: stripe, mode: live, credentials: {secret_key: STRIPE_LIVE_KEY}}
  - {id: sb, kind: sandbox}
routes:
  test:
    default: [sb]
  live:
    default: [stripe-live]
`), func(string) (string, bool) { return "sk_live_x", true })
	if err != nil {
		t.Fatal(err)
	}
	router, err := cfg.Build(provider.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = overridableProvider(router, "stripe-live")
	var u *usageError
	if err == nil || errors.As(err, &u) || !strings.Contains(err.Error(), `provider "stripe-live" (stripe) takes no approval rate: only sandbox providers do`) {
		t.Fatalf("stripe: %v", err)
	}
	if o, err := overridableProvider(router, "sb"); err != nil || o.ID() != "sb" {
		t.Fatalf("sandbox: %v, %v", o, err)
	}
}
