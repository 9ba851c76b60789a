package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
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
	t.Run("OKScores", func(t *testing.T) {
		scored := filepath.Join(dir, "scored.yaml")
		if err := os.WriteFile(scored, []byte(`
providers:
  - id: sandbox-a
    kind: sandbox
  - id: sandbox-b
    kind: sandbox
routes:
  test:
    EUR: {providers: [sandbox-a, sandbox-b], strategy: success_rate, window: 50}
    default: [sandbox-a]
`), 0o600); err != nil {
			t.Fatal(err)
		}
		sdb := "sqlite:" + filepath.Join(dir, "scores.db")
		at := now()
		err := withStore(context.Background(), sdb, func(ctx context.Context, st paygate.Store) error {
			return st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{
				paygate.RoutingScoreReplacement{Node: "n1", At: at, Scores: []paygate.RoutingScore{
					{Node: "n1", Mode: paygate.ModeTest, ProviderID: "sandbox-a", Currency: "EUR", Brand: "visa", Attempts: 50, Approved: 30, Score: 0.6, Share: 0.1},
					{Node: "n1", Mode: paygate.ModeTest, ProviderID: "sandbox-b", Currency: "EUR", Brand: "visa", Attempts: 50, Approved: 47, Score: 0.94, Share: 0.9},
				}},
				// A node that stopped reporting long ago is not shown.
				paygate.RoutingScoreReplacement{Node: "old", At: at.Add(-time.Hour), Scores: []paygate.RoutingScore{
					{Node: "old", Mode: paygate.ModeTest, ProviderID: "sandbox-a", Currency: "USD", Brand: "visa", Attempts: 1, Approved: 1, Score: 1, Share: 1},
				}},
			}})
		})
		if err != nil {
			t.Fatal(err)
		}
		r := cliRun(t, map[string]string{"PAYGATE_CONFIG": scored}, "providers", "--json", "--database-url", sdb).mustSucceed(t)
		var raw struct {
			Scores []map[string]any `json:"scores"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
			t.Fatal(err)
		}
		if len(raw.Scores) != 2 {
			t.Fatalf("scores: %s", r.stdout)
		}
		// Exactly decisions §21's keys, no more.
		keys := []string{"provider", "currency", "brand", "attempts", "approved", "score", "share"}
		for _, sc := range raw.Scores {
			if len(sc) != len(keys) {
				t.Fatalf("score with other keys than %v: %v", keys, sc)
			}
			for _, k := range keys {
				if _, ok := sc[k]; !ok {
					t.Fatalf("score without %q: %v", k, sc)
				}
			}
		}
		b := raw.Scores[1]
		if b["provider"] != "sandbox-b" || b["currency"] != "EUR" || b["brand"] != "visa" || b["attempts"] != 50.0 ||
			b["approved"] != 47.0 || b["score"] != 0.94 || b["share"] != 0.9 {
			t.Fatalf("sandbox-b's score: %v", b)
		}
		var out providersOutput
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatal(err)
		}
		if out.Modes[0].Routes[0].Strategy != "success_rate" || out.Modes[0].Routes[1].Strategy != "priority" {
			t.Fatalf("strategies: %+v", out.Modes[0].Routes)
		}
		r = cliRun(t, map[string]string{"PAYGATE_CONFIG": scored}, "providers", "--database-url", sdb).mustSucceed(t)
		if !strings.Contains(r.stdout, "(success_rate: first by score)") ||
			!regexp.MustCompile(`test +EUR +visa +sandbox-b +50 +47 +94\.0% +90\.0%`).MatchString(r.stdout) {
			t.Fatalf("text table:\n%s", r.stdout)
		}
		// Without scores the key is an empty list, never null.
		r = cliRun(t, map[string]string{"PAYGATE_CONFIG": cfg}, "providers", "--json", "--database-url", db).mustSucceed(t)
		if !strings.Contains(r.stdout, `"scores":[]`) {
			t.Fatalf("no scores: %s", r.stdout)
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
