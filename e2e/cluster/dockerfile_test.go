package cluster

import (
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction: its keyword in capitals and
// the rest of its line (continuations joined).
type instruction struct {
	cmd, args string
}

// stage is one FROM ... of a Dockerfile and the instructions under it.
type stage struct {
	from, name string
	body       []instruction
}

// parseDockerfile splits a Dockerfile into its stages. It knows the little
// the tests need: comments, line continuations, FROM ... AS name.
func parseDockerfile(text string) ([]stage, error) {
	var stages []stage
	var line strings.Builder
	for raw := range strings.SplitSeq(text, "\n") {
		trimmed := strings.TrimSpace(raw)
		if line.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cont, ok := strings.CutSuffix(trimmed, `\`); ok {
			line.WriteString(cont + " ")
			continue
		}
		line.WriteString(trimmed)
		cmd, args, _ := strings.Cut(line.String(), " ")
		line.Reset()
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			st := stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			return nil, fmt.Errorf("%s before the first FROM", in.cmd)
		}
		stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
	}
	if len(stages) == 0 {
		return nil, errors.New("no FROM")
	}
	return stages, nil
}

// shellWords splits a shell command line into words, honouring quotes. It
// refuses what it does not model (operators, expansions), so that the
// command run here is exactly the Dockerfile's.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case strings.ContainsRune("&|;<>$`\\(){}", r):
			return nil, fmt.Errorf("%q: the tests do not model the shell's %q", s, r)
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%q: unterminated quote", s)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// envAssignments reads an ENV instruction's K=V pairs (or its legacy
// "K V" form).
func envAssignments(args string) ([]string, error) {
	words, err := shellWords(args)
	if err != nil {
		return nil, err
	}
	if len(words) == 2 && !strings.Contains(words[0], "=") {
		return []string{words[0] + "=" + words[1]}, nil
	}
	for _, w := range words {
		if !strings.Contains(w, "=") {
			return nil, fmt.Errorf("ENV %s: %q is not K=V", args, w)
		}
	}
	return words, nil
}

// goBuild is the Dockerfile's build of paygate: the stage it runs in, the
// ENV in force there, the arguments after "go", and where -o puts the
// binary.
type goBuild struct {
	stage string
	env   []string
	args  []string
	out   string
}

// dockerfileBuild finds the one `RUN go build` of the Dockerfile.
func dockerfileBuild() (goBuild, []stage, error) {
	text, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		return goBuild{}, nil, err
	}
	stages, err := parseDockerfile(string(text))
	if err != nil {
		return goBuild{}, nil, fmt.Errorf("Dockerfile: %w", err)
	}
	var found []goBuild
	for _, st := range stages {
		var env []string
		for _, in := range st.body {
			switch in.cmd {
			case "ENV":
				kv, err := envAssignments(in.args)
				if err != nil {
					return goBuild{}, nil, fmt.Errorf("Dockerfile: %w", err)
				}
				env = append(env, kv...)
			case "RUN":
				if !strings.HasPrefix(in.args, "go build ") {
					continue
				}
				words, err := shellWords(in.args)
				if err != nil {
					return goBuild{}, nil, fmt.Errorf("Dockerfile: %w", err)
				}
				b := goBuild{stage: st.name, env: slices.Clone(env), args: words[1:]}
				if i := slices.Index(b.args, "-o"); i >= 0 && i+1 < len(b.args) {
					b.out = b.args[i+1]
				}
				found = append(found, b)
			}
		}
	}
	if len(found) != 1 {
		return goBuild{}, nil, fmt.Errorf("Dockerfile: %d `RUN go build` lines, want exactly one", len(found))
	}
	if found[0].out == "" {
		return goBuild{}, nil, errors.New("Dockerfile: the go build has no -o")
	}
	return found[0], stages, nil
}

// buildAsDockerfile runs the Dockerfile's go build, with its ENV, at the
// repository's root, writing the binary to out instead of the image's path.
func buildAsDockerfile(out string) error {
	b, _, err := dockerfileBuild()
	if err != nil {
		return err
	}
	args := slices.Clone(b.args)
	args[slices.Index(args, "-o")+1] = out
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), b.env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// dynamicLinking lists what makes the ELF file at path depend on a dynamic
// loader and shared libraries: an interpreter (PT_INTERP), a dynamic
// section, libraries it needs (DT_NEEDED).
func dynamicLinking(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var problems []string
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_INTERP:
			problems = append(problems, "it has an ELF interpreter (PT_INTERP)")
		case elf.PT_DYNAMIC:
			problems = append(problems, "it has a dynamic section (PT_DYNAMIC)")
		}
	}
	if f.Section(".dynamic") != nil {
		libs, err := f.ImportedLibraries()
		if err != nil {
			return nil, fmt.Errorf("read DT_NEEDED: %w", err)
		}
		if len(libs) > 0 {
			problems = append(problems, fmt.Sprintf("it needs shared libraries (DT_NEEDED): %v", libs))
		}
	}
	return problems, nil
}

// TestStaticBinary checks that the Dockerfile's build gives a static
// binary: no ELF interpreter (the dynamic loader) and no shared library
// needed, so it runs on an image without libc; and that it was built as the
// Dockerfile says (cgo off, paths trimmed).
func TestStaticBinary(t *testing.T) {
	t.Parallel()
	b, _, err := dockerfileBuild()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(b.env, "CGO_ENABLED=0") {
		t.Errorf("the build stage's ENV is %q, want CGO_ENABLED=0 in it", b.env)
	}
	if !slices.Contains(b.args, "-trimpath") {
		t.Errorf("go %s: want -trimpath", strings.Join(b.args, " "))
	}

	problems, err := dynamicLinking(binary)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("the binary is not static: %s", p)
	}
	// The check itself finds a dynamically linked program: Debian's shell.
	if problems, err := dynamicLinking("/bin/sh"); err == nil && len(problems) == 0 {
		t.Error("the check finds /bin/sh static: it would find anything static")
	}

	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("build settings CGO_ENABLED=%q -trimpath=%q, want 0 and true", settings["CGO_ENABLED"], settings["-trimpath"])
	}
	if info.Path != "github.com/paygate/paygate/cmd/paygate" {
		t.Errorf("the binary is %s, want github.com/paygate/paygate/cmd/paygate", info.Path)
	}
}

// TestVersionStamped checks that the Dockerfile's build stamps the VCS
// revision (what `paygate version` prints): the binary names the commit it
// was built from. Go finds the revision in a clone, whose .git is a
// directory; in a git worktree (.git is a file) it stamps nothing, so the
// check needs a clone, as CI and a `docker build` context are.
func TestVersionStamped(t *testing.T) {
	t.Parallel()
	b, _, err := dockerfileBuild()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(b.args, "-buildvcs=true") {
		// GOFLAGS may say -buildvcs=false; the command line wins, and
		// "true" fails a build that cannot stamp instead of shipping it.
		t.Errorf("go %s: want -buildvcs=true", strings.Join(b.args, " "))
	}
	fi, err := os.Stat(filepath.Join(repoRoot, ".git"))
	if err != nil || !fi.IsDir() {
		t.Skipf("skipping: %s/.git is not a directory (a worktree or an export): go build stamps no revision here", repoRoot)
	}
	head, err := exec.Command("git", "-C", repoRoot, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	var rev, vcs string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs":
			vcs = s.Value
		}
	}
	if vcs != "git" || rev != strings.TrimSpace(string(head)) {
		t.Errorf("stamped vcs=%q revision=%q, want git and HEAD %s", vcs, rev, head)
	}
}

// TestImage checks the runtime stage of the Dockerfile: a minimal base
// (distroless static or scratch), the binary built above copied from the
// build stage and run as the entrypoint, a non-root user, the API port
// exposed and a volume for the embedded database.
func TestImage(t *testing.T) {
	t.Parallel()
	b, stages, err := dockerfileBuild()
	if err != nil {
		t.Fatal(err)
	}
	final := stages[len(stages)-1]
	if !strings.HasPrefix(final.from, "gcr.io/distroless/static") && final.from != "scratch" {
		t.Errorf("the image is FROM %s, want distroless static or scratch", final.from)
	}
	var copied, user, entrypoint, workdir string
	var exposed, volumes []string
	for _, in := range final.body {
		f := strings.Fields(in.args)
		switch in.cmd {
		case "COPY":
			if slices.Contains(f, "--from="+b.stage) && len(f) >= 2 && f[len(f)-2] == b.out {
				copied = f[len(f)-1]
			}
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		case "WORKDIR":
			workdir = in.args
		case "EXPOSE":
			exposed = append(exposed, f...)
		case "VOLUME":
			volumes = append(volumes, strings.Trim(in.args, `[]" `))
		}
	}
	if copied == "" {
		t.Fatalf("the runtime stage does not COPY --from=%s %s", b.stage, b.out)
	}
	if !strings.Contains(entrypoint, `"`+copied+`"`) {
		t.Errorf("ENTRYPOINT %s does not run %s", entrypoint, copied)
	}
	if u, _, _ := strings.Cut(user, ":"); u == "" || u == "0" || u == "root" {
		t.Errorf("USER %q: want a non-root user", user)
	}
	if !slices.Contains(exposed, "8080") {
		t.Errorf("EXPOSE %v: want 8080", exposed)
	}
	// The default database (sqlite:paygate.db) is relative to the working
	// directory: it must be the volume.
	if workdir == "" || !slices.Contains(volumes, workdir) {
		t.Errorf("WORKDIR %q, VOLUME %v: want the working directory to be a volume", workdir, volumes)
	}
}
