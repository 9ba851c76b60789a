package main

import (
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
)

func TestMerchantOrigins(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, db string) {
		m := newMerchant(t, db, "Embedded")
		show := func(mode string) string {
			t.Helper()
			return cliRun(t, nil, "merchant", "origins", "show", "--merchant", m.MerchantID, "--mode", mode, "--json",
				"--database-url", db).mustSucceed(t).stdout
		}
		if got := show("live"); got != `{"mode":"live","origins":[]}`+"\n" {
			t.Errorf("origins show --json of a new merchant: %q", got)
		}

		r := cliRun(t, nil, "merchant", "origins", "set", "--merchant", m.MerchantID, "--mode", "live",
			"--origins", "https://Shop.example:443, https://www.shop.example:8443,https://shop.example", "--json", "--database-url", db)
		const want = `{"mode":"live","origins":["https://shop.example","https://www.shop.example:8443"]}` + "\n"
		if got := r.mustSucceed(t).stdout; got != want {
			t.Errorf("origins set --json: %q, want %q", got, want)
		}
		if got := show("live"); got != want {
			t.Errorf("origins show --json after set: %q, want %q", got, want)
		}
		if got := show("test"); got != `{"mode":"test","origins":[]}`+"\n" {
			t.Errorf("test mode changed with live: %q", got)
		}
		text := cliRun(t, nil, "merchant", "origins", "show", "--merchant", m.MerchantID, "--mode", "test", "--database-url", db).mustSucceed(t).stdout
		if !strings.Contains(text, "(none)") || !strings.Contains(text, "http://localhost:*") {
			t.Errorf("origins show (text, test mode):\n%s", text)
		}

		// Invalid lists: exit 2, nothing changed.
		for _, c := range []struct {
			mode, origins, want string
		}{
			{"live", "http://shop.example", "https origins only"},
			{"test", "https://*.shop.example", "wildcard"},
			{"test", "https://shop.example/pay", "path"},
			{"live", strings.Repeat("https://a.example,", 1) + "ftp://b.example", "scheme"},
		} {
			cliRun(t, nil, "merchant", "origins", "set", "--merchant", m.MerchantID, "--mode", c.mode, "--origins", c.origins,
				"--database-url", db).mustFail(t, exitUsage, c.want)
		}
		cliRun(t, nil, "merchant", "origins", "set", "--merchant", m.MerchantID, "--mode", "live",
			"--database-url", db).mustFail(t, exitUsage, "--origins")
		cliRun(t, nil, "merchant", "origins", "show", "--merchant", m.MerchantID, "--database-url", db).mustFail(t, exitUsage, "--mode")
		cliRun(t, nil, "merchant", "origins", "drop", "--merchant", m.MerchantID, "--database-url", db).mustFail(t, exitUsage, "drop")
		cliRun(t, nil, "merchant", "origins", "show", "--merchant", "01a215b6-773d-75b3-a43c-73b9c41060ed", "--mode", "live",
			"--database-url", db).mustFail(t, exitFailure, "merchant not found")
		if got := show("live"); got != want {
			t.Errorf("origins after refused changes: %q, want %q", got, want)
		}

		// An empty --origins clears the list.
		cliRun(t, nil, "merchant", "origins", "set", "--merchant", m.MerchantID, "--mode", "live", "--origins", "",
			"--database-url", db).mustSucceed(t)
		if got := show("live"); got != `{"mode":"live","origins":[]}`+"\n" {
			t.Errorf("origins after clearing: %q", got)
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
		var details []string
		for _, a := range log {
			if a.Action == paygate.AuditOriginsChanged {
				if a.Email != paygate.AuditActorCLI || a.Mode != paygate.ModeLive {
					t.Errorf("audit entry %+v", a)
				}
				details = append(details, a.Detail)
			}
		}
		if len(details) != 2 {
			t.Errorf("origins.changed entries %q, want 2", details)
		}
	})
}
