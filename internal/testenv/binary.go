package testenv

import (
	"os"
	"testing"
)

// Binary returns path, a program a test runs (a Debian package's, such as
// /usr/bin/prometheus from the package prometheus). When it is not
// installed the test is skipped with the package to install, or fails when
// PAYGATE_TEST_REQUIRE_SERVICES=1 (CI installs it: .ci/run).
func Binary(t testing.TB, path, debianPackage string) string {
	t.Helper()
	if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		if required() {
			t.Fatalf("%s is required (PAYGATE_TEST_REQUIRE_SERVICES=1) but missing: apt-get install -y %s", path, debianPackage)
		}
		t.Skipf("skipping: %s is missing (apt-get install -y %s)", path, debianPackage)
	}
	return path
}
