package httpx

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// newTestMux answers with what matched: the pattern's name and its
// wildcards' values, and the path the handler saw.
func newTestMux() *Mux {
	m := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("none " + r.URL.Path))
	}))
	for _, p := range []string{"/a", "/a/", "/a/{id}", "/c", "/c/", "GET /a/{id}/b", "/c/{x}/d", "/e/{$}", "/e"} {
		m.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			vals := []string{p}
			for _, n := range Wildcards(p) {
				vals = append(vals, n+"="+r.PathValue(n))
			}
			_, _ = w.Write([]byte(strings.Join(vals, " ") + " " + r.URL.Path))
		})
	}
	return m
}

// ServeMux would redirect these paths (clean them, or add a slash); the Mux
// matches them as sent and never redirects.
func TestNeverRedirects(t *testing.T) {
	t.Parallel()
	m := newTestMux()
	for _, c := range []struct{ method, target, want string }{
		{"GET", "/a", "/a /a"},
		{"GET", "/a/", "/a/ /a/"},
		{"GET", "/a/x", "/a/{id} id=x /a/x"},
		{"GET", "/a/.", "/a/{id} id=. /a/."},
		{"GET", "/a/..", "/a/{id} id=.. /a/.."},
		{"GET", "/a/x/b", "GET /a/{id}/b id=x /a/x/b"},
		{"GET", "/a/x%2Fy", "/a/ /a/x/y"},
		{"GET", "/a//b", "none /a//b"},
		{"GET", "/c//", "/c/ /c//"},
		{"GET", "/a/./b", "GET /a/{id}/b id=. /a/./b"},
		{"GET", "/a/../a", "/a/ /a/../a"},
		{"GET", "/c/./d", "/c/{x}/d x=. /c/./d"},
		{"GET", "/c//d", "/c/ /c//d"},
		{"GET", "/a//", "none /a//"},
		{"GET", "//a", "none //a"},
		{"GET", "/./a", "none /./a"},
		{"GET", "/e", "/e /e"},
		{"GET", "/e/", "/e/{$} /e/"},
		{"GET", "/e//", "none /e//"},
		{"GET", "/e/x", "none /e/x"},
		{"GET", "/c/x", "/c/ /c/x"},
		{"POST", "/a/x/b", "/a/ /a/x/b"},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(c.method, "http://gw.example"+c.target, nil)
		m.ServeHTTP(w, r)
		if w.Code >= 300 && w.Code < 400 {
			t.Errorf("%s %s: redirected %d to %q", c.method, c.target, w.Code, w.Header().Get("Location"))
			continue
		}
		if got := w.Body.String(); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.method, c.target, got, c.want)
		}
	}
}

func TestServePathMatchesAnotherPath(t *testing.T) {
	t.Parallel()
	m := newTestMux()
	w := httptest.NewRecorder()
	m.ServePath(w, httptest.NewRequest("GET", "/a/x/", nil), "/a/x")
	if got, want := w.Body.String(), "/a/{id} id=x /a/x/"; got != want {
		t.Errorf("ServePath: %q, want %q", got, want)
	}
}

func TestAllowed(t *testing.T) {
	t.Parallel()
	got := Allowed([]string{"DELETE /a/{id}", "/b", "POST /a", "POST /a/{id}", "GET /a/{id}"})
	want := map[string]string{"/a/{id}": "GET, POST, DELETE", "/a": "POST"}
	if len(got) != len(want) {
		t.Errorf("Allowed: %v, want %v", got, want)
	}
	for path, allow := range want {
		if got[path] != allow {
			t.Errorf("Allowed: %s %q, want %q", path, got[path], allow)
		}
	}
}
