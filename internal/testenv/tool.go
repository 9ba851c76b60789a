package testenv

import "testing"

// MissingTool skips the test because a program it needs (a Debian package,
// an npm install) is missing, saying how to get it; or fails it when
// PAYGATE_TEST_REQUIRE_SERVICES=1, since CI installs every such program
// (.ci/run).
func MissingTool(t testing.TB, tool, install string, err error) {
	t.Helper()
	if required() {
		t.Fatalf("%s is required (PAYGATE_TEST_REQUIRE_SERVICES=1) but missing: %v; %s", tool, err, install)
	}
	t.Skipf("skipping: %s is missing (%v); %s", tool, err, install)
}
