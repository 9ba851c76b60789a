package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Shared helpers of the dashboard's browser tests (dashboard_test.go and
// the data pages' tests).

// dashboardUser creates a dashboard login for the merchant with
// `paygate user create --password-stdin` and returns its email and
// password. g may be nil (the user is created in the database at dbURL
// either way); when set, its logs are shown if the command fails.
func dashboardUser(t *testing.T, g *gateway, dbURL, merchantID string) (email, password string) {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	email = "ops-" + hex.EncodeToString(b) + "@shop.example"
	password = "correct horse " + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "user", "create", "--merchant", merchantID, "--email", email,
		"--password-stdin", "--database-url", dbURL)
	cmd.Env = os.Environ()
	cmd.Stdin = strings.NewReader(password + "\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		logs := ""
		if g != nil {
			logs = g.Logs()
		}
		t.Fatalf("paygate user create: %v\nstdout: %s\nstderr: %s\n%s", err, out.String(), errb.String(), logs)
	}
	return email, password
}

// signIn signs the browser in to the gateway's dashboard and waits for the
// first page (the test-mode overview).
func signIn(t *testing.T, ctx context.Context, g *gateway, email, password string) {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.Navigate(g.url+"/dashboard/login"),
		chromedp.WaitVisible(chromedp.CSS("#email")),
		chromedp.SendKeys(chromedp.CSS("#email"), email),
		chromedp.SendKeys(chromedp.CSS("#password"), password),
		chromedp.Click(chromedp.CSS("#sign-in")),
		chromedp.WaitVisible(chromedp.CSS("#mode-banner")),
	)
	if err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		t.Fatalf("sign in as %s: %v (at %s)\n%s", email, err, loc, g.Logs())
	}
}

// Screenshot sizes: a laptop and a phone.
const (
	laptopWidth, laptopHeight = 1280, 800
	phoneWidth, phoneHeight   = 390, 844
)

var (
	dashboardArtifactsOnce sync.Once
	dashboardArtifacts     string
)

// dashboardArtifactDir is where every dashboard screenshot of this test
// run goes (named in the log), whatever PAYGATE_UPDATE_SCREENSHOTS says.
func dashboardArtifactDir(t *testing.T) string {
	t.Helper()
	dashboardArtifactsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "paygate-dashboard-artifacts-")
		if err == nil {
			dashboardArtifacts = dir
		}
	})
	if dashboardArtifacts == "" {
		t.Fatal("cannot create the screenshot directory")
	}
	return dashboardArtifacts
}

// dashboardScreenshot captures the current page at laptop size
// (1280×800, the viewport's full height of the page is not captured: what
// a user sees first) and writes <name>.png to the artifact directory, and
// to docs/screenshots/ when PAYGATE_UPDATE_SCREENSHOTS=1. A name ending in
// "-phone" is captured at phone size (390×844) instead. The viewport is
// set back to laptop size afterwards.
func dashboardScreenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	w, h := int64(laptopWidth), int64(laptopHeight)
	mobile := strings.HasSuffix(name, "-phone")
	if mobile {
		w, h = phoneWidth, phoneHeight
	}
	var opts []chromedp.EmulateViewportOption
	if mobile {
		opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateScale(1))
	}
	err := chromedp.Do(ctx, chromedp.EmulateViewport(w, h, opts...), chromedp.Sleep(150*time.Millisecond))
	var png []byte
	if err == nil {
		png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
	}
	if err == nil {
		err = chromedp.Do(ctx, chromedp.EmulateViewport(laptopWidth, laptopHeight))
	}
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if len(png) == 0 {
		t.Fatalf("empty screenshot %s", name)
	}
	p := filepath.Join(dashboardArtifactDir(t), name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
	if os.Getenv("PAYGATE_UPDATE_SCREENSHOTS") == "1" {
		dst := filepath.Join("..", "docs", "screenshots", name+".png")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("updated %s", dst)
	}
}
