package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/testenv"
)

// testVaultKey is the nodes' card vault master key (base64 of 32 bytes).
const testVaultKey = "cGF5Z2F0ZS1jbHVzdGVyLXRlc3QtdmF1bHQta2V5LTM="

// node is one `paygate serve` of the cluster on a fixed loopback address,
// which it keeps across restarts so that nginx finds it again.
type node struct {
	name string // its server name in deploy/nginx.conf: paygate-1
	addr string
	args []string
	logs *testenv.Buffer // every run's stderr, in order

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // of Wait, once exited is closed
}

// start runs the node and waits until /readyz answers 200.
func (n *node) start(t *testing.T) {
	t.Helper()
	if err := n.launch(); err != nil {
		t.Fatal(err)
	}
}

// launch is start for any goroutine: it returns what went wrong.
func (n *node) launch() error {
	cmd := exec.Command(binary, append([]string{"serve", "--addr", n.addr}, n.args...)...)
	cmd.Env = append(os.Environ(), "PAYGATE_VAULT_KEY="+testVaultKey)
	cmd.Stdout, cmd.Stderr = n.logs, n.logs
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", n.name, err)
	}
	exited := make(chan struct{})
	n.mu.Lock()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
	go func() {
		err := cmd.Wait()
		n.mu.Lock()
		n.err = err
		n.mu.Unlock()
		close(exited)
	}()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := client.Get("http://" + n.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited before it was ready: %v\n%s", n.name, n.waitErr(), n.logs)
		case <-time.After(25 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready within 60s\n%s", n.name, n.logs)
		}
	}
}

func (n *node) waitErr() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// stop sends sig and waits for the process to exit. After SIGTERM the node
// must exit cleanly, having answered what it was serving.
func (n *node) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(45 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		t.Errorf("%s did not exit within 45s of %v", n.name, sig)
	}
	if err := n.waitErr(); sig == syscall.SIGTERM && err != nil {
		t.Errorf("%s exited with %v after SIGTERM, want a clean exit\n%s", n.name, err, n.logs)
	}
}

// merchant is what `paygate merchant create --json` prints.
type merchant struct {
	MerchantID    string `json:"merchantId"`
	TestSecretKey string `json:"testSecretKey"`
	LiveSecretKey string `json:"liveSecretKey"`
}

func createMerchant(t *testing.T, dbURL string) merchant {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "merchant", "create", "--name", "Cluster", "--json", "--database-url", dbURL)
	cmd.Env = append(os.Environ(), "PAYGATE_VAULT_KEY="+testVaultKey)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		t.Fatalf("merchant create: %v", err)
	}
	var m merchant
	if err := json.Unmarshal(out, &m); err != nil || m.MerchantID == "" || m.TestSecretKey == "" || m.LiveSecretKey == "" {
		t.Fatalf("merchant create printed %q (%v)", out, err)
	}
	return m
}
