package adyen

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// specPath is Adyen's published OpenAPI description of Checkout v71,
// relative to this package: ../shared/providers/adyen/... from the repo root.
var specPath = filepath.Join("..", "..", "..", "..", "shared", "providers", "adyen", "CheckoutService-v71.json")

// specServer is the server URL the spec's routes are matched against.
const specServer = "https://checkout-test.adyen.com/v71"

var (
	specOnce   sync.Once
	specRouter routers.Router
	specErr    error
)

// spec loads Adyen's OpenAPI description once per test binary, or skips
// the test when it is absent.
func spec(t *testing.T) routers.Router {
	t.Helper()
	if _, err := os.Stat(specPath); err != nil {
		t.Skipf("Adyen's OpenAPI description is absent (%s): the spec-validated tests need ../shared next to the repository", specPath)
	}
	specOnce.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromFile(specPath)
		if err != nil {
			specErr = err
			return
		}
		if err = doc.Validate(context.Background()); err != nil {
			specErr = err
			return
		}
		specRouter, specErr = gorillamux.NewRouter(doc)
	})
	if specErr != nil {
		t.Fatalf("load Adyen's OpenAPI description: %v", specErr)
	}
	return specRouter
}

// reply is a fixture the fake answers with.
type reply struct {
	status int
	body   string
}

// seen is one request the fake received.
type seen struct {
	path   string
	header http.Header
	body   map[string]any
}

// fakeAdyen is a local Adyen Checkout v71 that validates every request
// against the spec (path, method, headers, body: openapi3filter.ValidateRequest)
// and every fixture it answers with (ValidateResponse), failing the test on
// any mismatch.
type fakeAdyen struct {
	t      *testing.T
	router routers.Router
	srv    *httptest.Server
	// answer chooses the fixture of a request; it may block (timeouts).
	answer func(path string, body map[string]any) reply

	mu   sync.Mutex
	reqs []seen
}

func newFake(t *testing.T, answer func(path string, body map[string]any) reply) *fakeAdyen {
	t.Helper()
	f := &fakeAdyen{t: t, router: spec(t), answer: answer}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAdyen) url() string { return f.srv.URL + "/v71" }

func (f *fakeAdyen) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.reqs...)
}

func validationOptions() *openapi3filter.Options {
	return &openapi3filter.Options{
		AuthenticationFunc: func(_ context.Context, in *openapi3filter.AuthenticationInput) error {
			if in.SecuritySchemeName == "ApiKeyAuth" && in.RequestValidationInput.Request.Header.Get("X-API-Key") != "" {
				return nil
			}
			return io.EOF // any error: this scheme is not satisfied
		},
	}
}

func (f *fakeAdyen) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	path := strings.TrimPrefix(r.URL.Path, "/v71")

	in, err := validateRequest(f.router, r, path, raw)
	if err != nil {
		f.t.Errorf("request %s %s does not conform to Adyen's spec: %v\nbody: %s", r.Method, path, err, raw)
		http.Error(w, "invalid", http.StatusUnprocessableEntity)
		return
	}
	if k := r.Header.Get("Idempotency-Key"); k == "" || len(k) > 64 {
		f.t.Errorf("request %s: Idempotency-Key %q, want 1 to 64 characters", path, k)
	}

	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	f.reqs = append(f.reqs, seen{path: path, header: r.Header.Clone(), body: body})
	f.mu.Unlock()

	rep := f.answer(path, body)
	if rep.status == 0 {
		return // hang up without an answer (the client sees an error)
	}
	// Validate the fixture against the operation's response.
	h := http.Header{"Content-Type": {"application/json"}}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: rep.status, Header: h,
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	out.SetBodyBytes([]byte(rep.body))
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		f.t.Errorf("fixture for %s (HTTP %d) does not conform to Adyen's spec: %v", path, rep.status, err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	_, _ = w.Write([]byte(rep.body))
}

// httpServer is a plain local server, for answers the spec does not list.
func httpServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/v71"
}

// validateRequest validates a request with its body raw against the spec,
// as if it had been sent to Adyen's server, and returns the validation
// input (for validating the answer).
func validateRequest(router routers.Router, r *http.Request, path string, raw []byte) (*openapi3filter.RequestValidationInput, error) {
	vr := r.Clone(context.Background())
	vr.URL, _ = url.Parse(specServer + path)
	vr.Host = vr.URL.Host
	vr.RequestURI = ""
	vr.Body = io.NopCloser(bytes.NewReader(raw))
	route, params, err := router.FindRoute(vr)
	if err != nil {
		return nil, err
	}
	in := &openapi3filter.RequestValidationInput{Request: vr, PathParams: params, Route: route, Options: validationOptions()}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		return nil, err
	}
	return in, nil
}
