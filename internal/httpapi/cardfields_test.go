package httpapi_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/cardfields"
	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCardFieldsRoutes: the server serves paygate.js and the card frame
// without an API key, answers their other methods 405 in the API's format,
// frames the card fields for allowed pages only (no X-Frame-Options), and
// never logs the public key of the frame's query.
func TestCardFieldsRoutes(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	s := newServer(t, func(c *httpapi.Config) {
		c.CardFields = cardfields.New(cardfields.Config{Store: c.Store})
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	secret, err := paygate.OneAPIKey(s.store.APIKeys(t.Context(), paygate.APIKeyQuery{Hash: auth.Hash(s.secret)}))
	if err != nil {
		t.Fatal(err)
	}
	public, key, err := auth.NewKey(id.New(), secret.MerchantID, paygate.ModeTest, paygate.KeyPublic, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.store.Commit(t.Context(), paygate.Unit{Ops: []paygate.Op{key}}); err != nil {
		t.Fatal(err)
	}
	get := func(method, path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		s.handler.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		return w
	}

	if w := get(http.MethodGet, cardfields.ScriptPath); w.Code != http.StatusOK ||
		w.Header().Get("Content-Type") != "text/javascript; charset=utf-8" || w.Header().Get("ETag") == "" {
		t.Errorf("GET paygate.js: %d %v", w.Code, w.Header())
	}
	if w := get(http.MethodHead, cardfields.FrameStylePath); w.Code != http.StatusOK || w.Body.Len() != 0 {
		t.Errorf("HEAD card-frame.css: %d, %d bytes", w.Code, w.Body.Len())
	}
	w := get(http.MethodPost, cardfields.ScriptPath)
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != http.MethodGet || !strings.Contains(w.Body.String(), `"METHOD_NOT_ALLOWED"`) {
		t.Errorf("POST paygate.js: %d %v %s", w.Code, w.Header(), w.Body)
	}
	if w := get(http.MethodGet, "/js/v1/other.js"); w.Code != http.StatusNotFound {
		t.Errorf("GET an unknown script: %d", w.Code)
	}

	frame := cardfields.FramePath + "?key=" + url.QueryEscape(public) + "&origin=" + url.QueryEscape("http://localhost:5173")
	w = get(http.MethodGet, frame)
	if w.Code != http.StatusOK {
		t.Fatalf("GET the frame: %d %s", w.Code, w.Body)
	}
	if csp := w.Header().Get("Content-Security-Policy"); !strings.HasSuffix(csp, "frame-ancestors http://localhost:* http://127.0.0.1:*") ||
		w.Header().Get("X-Frame-Options") != "" {
		t.Errorf("frame headers %v", w.Header())
	}
	if w := get(http.MethodGet, cardfields.FramePath+"?key="+url.QueryEscape(s.secret)+"&origin=http%3A%2F%2Flocalhost%3A5173"); w.Code != http.StatusUnauthorized {
		t.Errorf("the frame with a secret key: %d", w.Code)
	}
	if w := get(http.MethodGet, cardfields.FramePath+"?key="+url.QueryEscape(public)+"&origin=https%3A%2F%2Fevil.example"); w.Code != http.StatusForbidden {
		t.Errorf("the frame for another origin: %d", w.Code)
	}
	out := logs.String()
	if !strings.Contains(out, `"route":"`+cardfields.FramePath+`"`) || strings.Contains(out, public) || strings.Contains(out, s.secret) {
		t.Errorf("request log:\n%s", out)
	}
}
