package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestProvidersCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "p.db")
	cfg := filepath.Join(dir, "paygate.yaml")
	if err := os.WriteFile(cfg, []byte(`
providers:
  - id: eu
    kind: sandbox
    currencies: [EUR]
    timeout: 3s
  - id: world
    kind: sandbox
routes:
  test:
    EUR: [eu, world]
    default: [world]
`), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("OKJSON", func(t *testing.T) {
		r := cliRun(t, map[string]string{"PAYGATE_CONFIG": cfg}, "providers", "--json", "--database-url", db).mustSucceed(t)
		if strings.Count(r.stdout, "\n") != 1 {
			t.Fatalf("not one line: %q", r.stdout)
		}
		var out providersOutput
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatal(err)
		}
		if out.Config != cfg || len(out.Modes) != 2 || out.Modes[0].Mode != "test" || out.Modes[1].Mode != "live" {
			t.Fatalf("output %+v", out)
		}
		test := out.Modes[0]
		if len(test.Routes) != 2 || test.Routes[0].Currency != "EUR" || !slices.Equal(test.Routes[0].Providers, []string{"eu", "world"}) ||
			test.Routes[1].Currency != "default" || !slices.Equal(test.Routes[1].Available, []string{"world"}) {
			t.Fatalf("test routes %+v", test.Routes)
		}
		if len(test.Providers) != 2 || test.Providers[0].ID != "eu" || test.Providers[0].Timeout != "3s" ||
			test.Providers[0].State != "available" || test.Providers[1].Currencies != nil || test.Providers[0].ChangedAt != nil {
			t.Fatalf("test providers %+v", test.Providers)
		}
		if live := out.Modes[1]; len(live.Providers) != 0 || len(live.Routes) != 1 || len(live.Routes[0].Providers) != 0 {
			t.Fatalf("live %+v", live)
		}
		// null, not missing, for a provider that takes every currency.
		if !strings.Contains(r.stdout, `"id":"world","kind":"sandbox","currencies":null`) {
			t.Fatalf("world's currencies: %s", r.stdout)
		}
	})
	t.Run("OKDrainRestore", func(t *testing.T) {
		env := map[string]string{"PAYGATE_CONFIG": cfg, "PAYGATE_DATABASE_URL": db}
		r := cliRun(t, env, "providers", "drain", "--provider", "eu").mustSucceed(t)
		if !strings.Contains(r.stdout, "eu is drained") {
			t.Fatalf("drain said %q", r.stdout)
		}
		r = cliRun(t, env, "providers", "--json").mustSucceed(t)
		var out providersOutput
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatal(err)
		}
		eu := out.Modes[0].Providers[0]
		if eu.State != "drained" || !eu.Drained || eu.ChangedAt == nil || !slices.Equal(out.Modes[0].Routes[0].Available, []string{"world"}) {
			t.Fatalf("after drain: %+v %+v", eu, out.Modes[0].Routes[0])
		}
		r = cliRun(t, env, "providers").mustSucceed(t)
		if !strings.Contains(r.stdout, "EUR      world   [configured: eu → world]") || !strings.Contains(r.stdout, "drained") {
			t.Fatalf("text table:\n%s", r.stdout)
		}
		r = cliRun(t, env, "providers", "restore", "--provider", "eu", "--json").mustSucceed(t)
		var st providerStateOutput
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Provider != "eu" || st.Drained {
			t.Fatalf("restore: %q, %v", r.stdout, err)
		}
	})
	t.Run("ErrUsage", func(t *testing.T) {
		cliRun(t, nil, "providers", "drain", "--database-url", db).mustFail(t, exitUsage, "missing required flag --provider")
		cliRun(t, nil, "providers", "restore", "--provider").mustFail(t, exitUsage, "--provider needs a value")
		cliRun(t, nil, "providers", "--bogus").mustFail(t, exitUsage, "unknown flag --bogus")
		cliRun(t, nil, "providers", "list").mustFail(t, exitUsage, `unexpected argument "list"`)
	})
	t.Run("ErrUnknownProvider", func(t *testing.T) {
		cliRun(t, nil, "providers", "drain", "--provider", "eu", "--database-url", db).
			mustFail(t, exitFailure, `no provider "eu" in the routing table (known: sandbox-apac, sandbox-eu, sandbox-global, sandbox-us)`)
	})
	t.Run("ErrConfig", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(bad, []byte("providers:\n  - id: eu\n    kind: braintree\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cliRun(t, nil, "providers", "--config", bad, "--database-url", db).mustFail(t, exitFailure, bad+`:3: provider "eu": unknown kind "braintree"`)
		cliRun(t, nil, "providers", "--config", filepath.Join(dir, "missing.yaml"), "--database-url", db).mustFail(t, exitFailure, "missing.yaml")
	})
}
