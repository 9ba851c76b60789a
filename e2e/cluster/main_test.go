// Package cluster checks paygate's packaging and its production shape
// (deploy/): the binary the Dockerfile builds is static and stamped, the
// nginx, Prometheus and Compose files agree with each other and are valid,
// and three nodes of that binary behind that nginx, on one PostgreSQL and
// one Redis, lose and double no payment while nodes are killed and
// restarted under load.
//
// No container runtime runs here: the tests run the Dockerfile's own build
// command and Debian's nginx instead of the images.
package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// binary is paygate as the Dockerfile builds it, built once by TestMain.
// It has no race detector: that needs cgo, and the image's binary is built
// without (the e2e package runs the server with it).
var binary string

// repoRoot is the repository's root, where the Dockerfile and deploy/ are,
// and the directory the Dockerfile's build runs in (its WORKDIR /src).
const repoRoot = "../.."

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "paygate-cluster-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "paygate")
	if err := buildAsDockerfile(binary); err != nil {
		fmt.Fprintln(os.Stderr, "build paygate as the Dockerfile does:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
