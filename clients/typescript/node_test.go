// Package typescript holds no Go code: its test runs the TypeScript
// client's own tests (node --test test/*.test.mjs) inside go test, so that
// they run in CI in parallel with the Go packages, against a paygate built
// as e2e builds it.
package typescript

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/testenv"
)

const install = "install Node.js 20 or later, then run npm ci in clients/typescript (.ci/run does both)"

func TestTypeScriptClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.MissingTool(t, "Node.js", install, err)
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		testenv.MissingTool(t, "Node.js", install, err)
	}
	if m := regexp.MustCompile(`^v(\d+)\.`).FindSubmatch(out); m == nil {
		testenv.MissingTool(t, "Node.js 20 or later", install, fmt.Errorf("node --version printed %q", out))
	} else if major, _ := strconv.Atoi(string(m[1])); major < 20 {
		testenv.MissingTool(t, "Node.js 20 or later", install, fmt.Errorf("node is %s", strings.TrimSpace(string(out))))
	}
	if _, err := os.Stat(filepath.Join("node_modules", "typescript", "package.json")); err != nil {
		testenv.MissingTool(t, "the TypeScript client's npm packages", install, err)
	}

	bin := filepath.Join(t.TempDir(), "paygate")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, "../../cmd/paygate")...).CombinedOutput(); err != nil {
		t.Fatalf("build paygate: %v\n%s", err, out)
	}
	files, err := filepath.Glob(filepath.Join("test", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in clients/typescript/test: %v", err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"--test", "--test-reporter=spec"}, files...)...)
	cmd.Env = append(os.Environ(), "PAYGATE_BIN="+bin)
	cmd.WaitDelay = 10 * time.Second
	report, err := cmd.CombinedOutput()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("node --test failed (exit %d):\n%s", exit.ExitCode(), report)
		}
		t.Fatalf("node --test: %v\n%s", err, report)
	}
	t.Logf("node --test:\n%s", report)
}
