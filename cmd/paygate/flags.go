package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// defaultDatabaseURL is the embedded database in the working directory.
const defaultDatabaseURL = "sqlite:paygate.db"

// flagSet is one command's flags, with the command's usage line for --help.
type flagSet struct {
	*flag.FlagSet
	name     string // "key create"
	synopsis string // "--merchant ID --mode test|live [--json]"
	summary  string
	notes    string   // printed after the flags
	envFlags []string // flags that also read PAYGATE_<NAME>
}

// newFlagSet returns a FlagSet that never prints: errors come back to the
// caller, which prints its own single line.
func newFlagSet(name, synopsis string) *flagSet {
	fs := flag.NewFlagSet("paygate "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	summary := ""
	for _, c := range commands {
		if c.name == name {
			summary = c.summary
		}
	}
	return &flagSet{FlagSet: fs, name: name, synopsis: synopsis, summary: summary}
}

// databaseURL registers --database-url, which every command takes.
func (fs *flagSet) databaseURL(p *string) {
	fs.StringVar(p, "database-url", defaultDatabaseURL, "database `URL`: sqlite:FILE or postgres://... (env PAYGATE_DATABASE_URL)")
	fs.envFlags = append(fs.envFlags, "database-url")
}

// parse parses args, applies the environment to the flags not given, and
// refuses positional arguments. --help prints the command's usage to stdout
// and returns errHelpShown.
func (fs *flagSet) parse(args []string, env func(string) string, stdout io.Writer) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.printHelp(stdout)
			return errHelpShown
		}
		return usageErrorf("%s (see 'paygate %s --help')", flagError(err), fs.name)
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected argument %q (see 'paygate %s --help')", fs.Arg(0), fs.name)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, name := range fs.envFlags {
		if given[name] {
			continue // an explicit flag wins over the environment
		}
		key := envName(name)
		v := env(key)
		if v == "" {
			if err := fs.setFromFile(name, key, env(key+"_FILE")); err != nil {
				return err
			}
			continue
		}
		if env(key+"_FILE") != "" {
			return usageErrorf("both %s and %s_FILE are set; set one", key, key)
		}
		if err := fs.Set(name, v); err != nil {
			return usageErrorf("invalid value %q for %s: %v", v, key, err)
		}
	}
	return nil
}

// setFromFile sets the flag name from the file that PAYGATE_<NAME>_FILE
// names, if it names one: the way container platforms hand a process its
// secrets (Docker and Compose secrets, Kubernetes secret volumes) without
// putting them in the environment, where `docker inspect` and
// /proc/PID/environ show them. The file's content, less the surrounding
// white space (a final newline, mostly), is the value. Errors never repeat
// the content: it is a vault key or a database URL with its password.
func (fs *flagSet) setFromFile(name, key, path string) error {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return usageErrorf("%s_FILE: %v", key, err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return usageErrorf("%s_FILE: %s is empty", key, path)
	}
	if err := fs.Set(name, v); err != nil {
		return usageErrorf("invalid value in %s (%s_FILE): %v", path, key, err)
	}
	return nil
}

// flagError rewrites the flag package's messages in this program's terms.
func flagError(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return "unknown flag " + dashes(name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return "flag " + dashes(name) + " needs a value"
	}
	// "invalid value "x" for flag -grace: parse error"
	if strings.Contains(msg, " for flag -") {
		return strings.Replace(msg, " for flag -", " for --", 1)
	}
	return strings.Replace(msg, " for -", " for --", 1)
}

// dashes writes a flag name as the documentation does: --name.
func dashes(name string) string { return "--" + strings.TrimLeft(name, "-") }

// envName is the environment variable of a flag: PAYGATE_ and the name in
// capitals with dashes turned into underscores.
func envName(flagName string) string {
	return "PAYGATE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// printHelp prints the command's usage and flags.
func (fs *flagSet) printHelp(w io.Writer) {
	fmt.Fprintf(w, "Usage: paygate %s %s\n", fs.name, fs.synopsis)
	if fs.summary != "" {
		fmt.Fprintf(w, "\n%s.\n", strings.ToUpper(fs.summary[:1])+fs.summary[1:])
	}
	fmt.Fprintln(w, "\nFlags:")
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if arg != "" {
			line += " " + arg
		}
		fmt.Fprintln(w, line)
		def := f.DefValue
		if g, ok := f.Value.(flag.Getter); ok {
			if d, ok := g.Get().(time.Duration); ok {
				def = shortDuration(d)
			}
		}
		if def != "" && def != "false" && def != "0" {
			usage += " (default " + def + ")"
		}
		fmt.Fprintf(w, "        %s\n", usage)
	})
	if fs.notes != "" {
		fmt.Fprintf(w, "\n%s\n", fs.notes)
	}
}

// shortDuration writes d without zero units: 2h rather than 2h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// required returns a usage error when a required flag was not given, or
// given empty.
func required(fs *flagSet, names ...string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = f.Value.String() != "" })
	for _, n := range names {
		if !given[n] {
			return usageErrorf("missing required flag --%s (see 'paygate %s --help')", n, fs.name)
		}
	}
	return nil
}

// stringList is a comma-separated list flag. The first Set replaces the
// default; repeating the flag appends.
type stringList struct {
	list *[]string
	set  bool
}

// String returns the list as given: comma-separated.
func (s *stringList) String() string {
	if s == nil || s.list == nil {
		return ""
	}
	return strings.Join(*s.list, ",")
}

// Set adds the comma-separated items of v, empty items ignored.
func (s *stringList) Set(v string) error {
	var items []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	if !s.set {
		*s.list = nil
		s.set = true
	}
	*s.list = append(*s.list, items...)
	return nil
}

// durationList is a comma-separated list of durations, each >= 0. The first
// Set replaces the default; repeating the flag appends.
type durationList struct {
	list *[]time.Duration
	set  bool
}

// String returns the durations comma-separated.
func (d *durationList) String() string {
	if d == nil || d.list == nil {
		return ""
	}
	parts := make([]string, len(*d.list))
	for i, v := range *d.list {
		parts[i] = shortDuration(v)
	}
	return strings.Join(parts, ",")
}

// Set adds the comma-separated durations of v; each must be >= 0.
func (d *durationList) Set(v string) error {
	var items []time.Duration
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return errors.New("empty entry in the list")
		}
		dur, err := time.ParseDuration(item)
		if err != nil {
			return fmt.Errorf("%q is not a duration such as 5s, 5m or 2h", item)
		}
		if dur < 0 {
			return fmt.Errorf("%q is negative", item)
		}
		items = append(items, dur)
	}
	if !d.set {
		*d.list = nil
		d.set = true
	}
	*d.list = append(*d.list, items...)
	return nil
}

// modeFlag is --mode: test or live.
type modeFlag struct{ mode *string }

// String returns the mode, "" when not set.
func (m modeFlag) String() string {
	if m.mode == nil {
		return ""
	}
	return *m.mode
}

// Set accepts test or live.
func (m modeFlag) Set(v string) error {
	if v != "test" && v != "live" {
		return errors.New("must be test or live")
	}
	*m.mode = v
	return nil
}
