package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/bench"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
)

func TestGuardShowSet(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, db string) {
		m := newMerchant(t, db, "Guarded")
		r := cliRun(t, nil, "guard", "show", "--merchant", m.MerchantID, "--mode", "test", "--json", "--database-url", db)
		r.mustSucceed(t)
		const defaults = `{"mode":"test","rules":[` +
			`{"rule":"card_ip","enabled":false,"threshold":3,"window":"1h0m0s","block":"1h0m0s"},` +
			`{"rule":"card","enabled":false,"threshold":5,"window":"1h0m0s","block":"1h0m0s"},` +
			`{"rule":"customer","enabled":false,"threshold":10,"window":"1h0m0s","block":"1h0m0s"},` +
			`{"rule":"ip_cards","enabled":false,"threshold":5,"window":"10m0s","block":"1h0m0s"}]}` + "\n"
		if r.stdout != defaults {
			t.Errorf("guard show --json (test defaults):\n%s\nwant\n%s", r.stdout, defaults)
		}
		r = cliRun(t, nil, "guard", "show", "--merchant", m.MerchantID, "--mode", "live", "--json", "--database-url", db)
		r.mustSucceed(t)
		if !strings.Contains(r.stdout, `{"rule":"card_ip","enabled":true,"threshold":3,"window":"1h0m0s","block":"1h0m0s"}`) {
			t.Errorf("live defaults %s: want every rule on", r.stdout)
		}

		r = cliRun(t, nil, "guard", "set", "--merchant", m.MerchantID, "--mode", "test", "--rule", "ip_cards",
			"--enabled=true", "--threshold", "2", "--window", "90s", "--json", "--database-url", db)
		r.mustSucceed(t)
		if !strings.Contains(r.stdout, `{"rule":"ip_cards","enabled":true,"threshold":2,"window":"1m30s","block":"1h0m0s"}`) {
			t.Errorf("guard set --json: %s", r.stdout)
		}
		// Flags not given keep their value.
		cliRun(t, nil, "guard", "set", "--merchant", m.MerchantID, "--mode", "test", "--rule", "ip_cards",
			"--block", "2h", "--database-url", db).mustSucceed(t)
		r = cliRun(t, nil, "guard", "show", "--merchant", m.MerchantID, "--mode", "test", "--json", "--database-url", db)
		if !strings.Contains(r.mustSucceed(t).stdout, `{"rule":"ip_cards","enabled":true,"threshold":2,"window":"1m30s","block":"2h0m0s"}`) {
			t.Errorf("after a second set: %s", r.stdout)
		}

		// Each change is audited, actor cli.
		st, err := store.Open(t.Context(), db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		log, err := st.AuditLog(t.Context(), paygate.AuditQuery{MerchantID: m.MerchantID})
		if err != nil {
			t.Fatal(err)
		}
		changes := 0
		for _, a := range log {
			if a.Action == paygate.AuditGuardChanged {
				changes++
				if a.Email != paygate.AuditActorCLI || a.UserID != "" || a.Mode != paygate.ModeTest || a.Target != "ip_cards" {
					t.Errorf("audit entry %+v", a)
				}
			}
		}
		if changes != 2 {
			t.Errorf("%d guard.changed entries, want 2", changes)
		}

		// Invalid values: exit 2, nothing changed.
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--rule", "card_country", "--enabled=true"}, "--rule"},
			{[]string{"--rule", "card", "--threshold", "0"}, "--threshold"},
			{[]string{"--rule", "card", "--window", "soon"}, "--window"},
			{[]string{"--rule", "card", "--block", "0s"}, "--block"},
			{[]string{"--rule", "card", "--enabled=maybe"}, "enabled"},
			{[]string{"--rule", "card"}, "nothing to change"},
			{[]string{"--enabled=true"}, "--rule"},
		} {
			args := append([]string{"guard", "set", "--merchant", m.MerchantID, "--mode", "test", "--database-url", db}, c.args...)
			cliRun(t, nil, args...).mustFail(t, exitUsage, c.want)
		}
		cliRun(t, nil, "guard", "show", "--merchant", m.MerchantID, "--database-url", db).mustFail(t, exitUsage, "--mode")
		cliRun(t, nil, "guard", "drop", "--merchant", m.MerchantID, "--database-url", db).mustFail(t, exitUsage, "drop")
		cliRun(t, nil, "guard", "show", "--merchant", "01a215b6-773d-75b3-a43c-73b9c41060ed", "--mode", "live",
			"--database-url", db).mustFail(t, exitFailure, "merchant not found")
	})
}

// TestBenchCardTest runs `paygate bench --mix approve=9,cardtest=1` end to
// end on SQLite: the attacker's declines reach the sandbox no more often
// than the rules allow, and no legitimate payment is blocked.
func TestBenchCardTest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and loads it for a few seconds")
	}
	t.Setenv(benchChildEnv, "1")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--duration", "3s", "--warmup", "500ms", "--concurrency", "4", "--json",
		"--mix", "approve=9,cardtest=1"}, func(string) string { return "" }, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep bench.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	ct := rep.CardTest
	if ct == nil {
		t.Fatalf("no cardTest in %s", stdout.String())
	}
	if len(rep.Errors) != 0 || rep.TransportErrors != 0 {
		t.Errorf("errors %v, transport errors %d", rep.Errors, rep.TransportErrors)
	}
	attempts, reached := ct.AttackerAttempts+ct.WarmupAttempts, ct.AttackerReached+ct.WarmupReached
	if attempts == 0 || ct.Legitimate == 0 {
		t.Fatalf("no attack or no legitimate payment: %+v", ct)
	}
	// Four declining cards, five declines each (the card rule), and at
	// most one more per concurrent client that checked before a decline
	// was counted.
	if reached > 4*5+4 {
		t.Errorf("%d of %d attacker attempts reached the sandbox, want at most 24", reached, attempts)
	}
	if attempts > 24 && ct.AttackerBlocked+ct.WarmupAttempts-ct.WarmupReached == 0 {
		t.Errorf("nothing blocked: %+v", ct)
	}
	if ct.LegitimateBlocked != 0 {
		t.Errorf("%d legitimate payments blocked", ct.LegitimateBlocked)
	}
}
