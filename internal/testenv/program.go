package testenv

import (
	"os"
	"testing"
)

// Program returns path, an executable a test runs (nginx, promtool,
// prometheus...) that Debian's package pkg installs, when it is there. When
// it is missing the test is skipped with the command that installs it, or
// fails when PAYGATE_TEST_REQUIRE_SERVICES=1 (CI, whose .ci/run installs it).
func Program(t testing.TB, path, pkg string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		return path
	}
	if err == nil {
		err = os.ErrPermission
	}
	MissingTool(t, path, "apt-get install -y "+pkg, err)
	return ""
}
