package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// versionOutput is the --json output of version (decisions §16).
type versionOutput struct {
	// Version is the module version the binary was built at: a release tag,
	// a pseudo-version from the commit, or "(devel)" when Go knew none.
	Version string `json:"version"`
	// Revision is the commit the binary was built from, "unknown" when it
	// was built outside a repository (or with -buildvcs=false).
	Revision string `json:"revision"`
	// Go is the Go release that built it: "go1.26.8".
	Go string `json:"go"`
}

// unknownRevision is the revision of a binary built without VCS stamping.
const unknownRevision = "unknown"

func cmdVersion(_ context.Context, c *cli, args []string) error {
	fs := newFlagSet("version", "[--json]")
	var asJSON bool
	var ignored string
	fs.BoolVar(&asJSON, "json", false, "print the result as one line of JSON")
	// Every command takes --database-url (decisions §14); version opens
	// no database, so it is accepted and unused.
	fs.StringVar(&ignored, "database-url", defaultDatabaseURL, "accepted like every command's, unused: version reads no database")
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	v := buildVersion()
	if asJSON {
		return writeJSON(c.stdout, v)
	}
	if _, err := fmt.Fprintf(c.stdout, "paygate %s (revision %s, %s)\n", v.Version, v.Revision, v.Go); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// buildVersion reads what the Go toolchain recorded in the binary.
func buildVersion() versionOutput {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return versionOf(bi)
}

// versionOf reads a binary's build information (nil: none recorded).
func versionOf(bi *debug.BuildInfo) versionOutput {
	v := versionOutput{Version: "(devel)", Revision: unknownRevision, Go: runtime.Version()}
	if bi == nil {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			v.Revision = s.Value
		}
	}
	return v
}
