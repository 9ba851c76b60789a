package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersion checks `paygate version` (decisions §16) with the CLI's
// conventions (§14): one line, --json exactly {"version","revision","go"},
// usage errors exit 2.
func TestVersion(t *testing.T) {
	t.Parallel()
	want := buildVersion()
	if want.Go != runtime.Version() || want.Version == "" || want.Revision == "" {
		t.Fatalf("buildVersion() = %+v", want)
	}

	var got versionOutput
	r := cliRun(t, nil, "version", "--json")
	jsonLine(t, r, &got)
	wantKeys(t, r.stdout, "version", "revision", "go")
	if got != want {
		t.Errorf("--json printed %+v, want %+v", got, want)
	}

	text := cliRun(t, nil, "version").mustSucceed(t).stdout
	if text != "paygate "+want.Version+" (revision "+want.Revision+", "+want.Go+")\n" {
		t.Errorf("version printed %q", text)
	}
	// It opens no database: a database URL nothing could open is no failure.
	cliRun(t, map[string]string{"PAYGATE_DATABASE_URL": "mysql://x"}, "version", "--database-url", "mysql://y").mustSucceed(t)

	cliRun(t, nil, "version", "--bogus").mustFail(t, 2, "unknown flag --bogus")
	cliRun(t, nil, "version", "extra").mustFail(t, 2, `unexpected argument "extra"`)
	if help := cliRun(t, nil, "--help").mustSucceed(t).stdout; !strings.Contains(help, "  version ") {
		t.Errorf("usage does not list version:\n%s", help)
	}
	if help := cliRun(t, nil, "version", "--help").mustSucceed(t).stdout; !strings.Contains(help, "Usage: paygate version [--json]") {
		t.Errorf("version --help:\n%s", help)
	}
}

// TestVersionOf checks what is read from the build information the Go
// toolchain records: a release, a commit, or neither.
func TestVersionOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		want versionOutput
	}{
		{"Release", &debug.BuildInfo{
			GoVersion: "go1.26.8",
			Main:      debug.Module{Path: "github.com/paygate/paygate", Version: "v1.4.0"},
			Settings:  []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "2b71e15f00d"}, {Key: "vcs.modified", Value: "false"}},
		}, versionOutput{"v1.4.0", "2b71e15f00d", "go1.26.8"}},
		{"Checkout", &debug.BuildInfo{
			GoVersion: "go1.26.8",
			Main:      debug.Module{Path: "github.com/paygate/paygate", Version: "v0.0.0-20261125120000-2b71e15f00d+dirty"},
			Settings:  []debug.BuildSetting{{Key: "vcs.revision", Value: "2b71e15f00d"}, {Key: "vcs.modified", Value: "true"}},
		}, versionOutput{"v0.0.0-20261125120000-2b71e15f00d+dirty", "2b71e15f00d", "go1.26.8"}},
		{"NoVCS", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/paygate/paygate", Version: "(devel)"}},
			versionOutput{"(devel)", "unknown", "go1.26.8"}},
		{"NoBuildInfo", nil, versionOutput{"(devel)", "unknown", runtime.Version()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := versionOf(c.bi); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}
