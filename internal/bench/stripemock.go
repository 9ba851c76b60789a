package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// StripeMockInstall is the command that installs the stripe-mock the Stripe
// connector is verified against.
const StripeMockInstall = "go install github.com/stripe/stripe-mock@v0.203.0"

// ErrNoStripeMock: stripe-mock is neither on PATH nor in a Go bin directory.
var ErrNoStripeMock = errors.New("stripe-mock is not installed (not on PATH nor in $(go env GOPATH)/bin): " + StripeMockInstall)

// FindStripeMock returns the path of the stripe-mock binary: on PATH, in
// $GOBIN, or in the bin directory of each $(go env GOPATH) entry (~/go/bin
// when the go command is not there either).
func FindStripeMock() (string, error) {
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p, nil
	}
	for _, d := range goBinDirs() {
		p := filepath.Join(d, "stripe-mock")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", ErrNoStripeMock
}

// goBinDirs lists where `go install` puts binaries.
func goBinDirs() []string {
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	if gopath == "" {
		if h, err := os.UserHomeDir(); err == nil {
			gopath = filepath.Join(h, "go")
		}
	}
	for _, d := range filepath.SplitList(gopath) {
		if d != "" {
			dirs = append(dirs, filepath.Join(d, "bin"))
		}
	}
	return dirs
}

// StripeMock is a stripe-mock running as a child process on loopback.
type StripeMock struct {
	URL    string // http://127.0.0.1:PORT
	cmd    *exec.Cmd
	exited chan struct{}
}

// StartStripeMock starts the binary at path on two free loopback ports
// (HTTP, and the HTTPS listener it always opens, which would otherwise take
// [::]:12112) and waits until the HTTP port accepts connections. log
// receives its output.
func StartStripeMock(ctx context.Context, path string, log io.Writer) (*StripeMock, error) {
	httpAddr, err := FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	httpsAddr, err := FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, "-http-addr", httpAddr, "-https-addr", httpsAddr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a Ctrl-C is the tool's to handle
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start stripe-mock: %w", err)
	}
	m := &StripeMock{URL: "http://" + httpAddr, cmd: cmd, exited: make(chan struct{})}
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(m.exited)
	}()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", httpAddr, 200*time.Millisecond); err == nil {
			c.Close()
			return m, nil
		}
		select {
		case <-m.exited:
			return nil, fmt.Errorf("stripe-mock exited before it listened on %s: %v", httpAddr, waitErr)
		case <-ctx.Done():
			m.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			m.Stop()
			return nil, fmt.Errorf("stripe-mock did not listen on %s within 15s", httpAddr)
		}
	}
}

// Pid returns stripe-mock's process id.
func (m *StripeMock) Pid() int { return m.cmd.Process.Pid }

// CPU returns the CPU time stripe-mock has used so far.
func (m *StripeMock) CPU() (time.Duration, error) { return processCPU(m.Pid()) }

// Stop kills stripe-mock (it keeps nothing) and waits for its exit.
func (m *StripeMock) Stop() {
	select {
	case <-m.exited:
		return
	default:
	}
	_ = m.cmd.Process.Kill()
	<-m.exited
}
