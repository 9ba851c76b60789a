package apidoc

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/paygate/paygate/docs"
)

// TestDocument checks the served document: the committed file's bytes,
// with the headers of every JSON answer.
func TestDocument(t *testing.T) {
	file, err := os.ReadFile("../../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	Document(w, httptest.NewRequest(http.MethodGet, "/v1/openapi.json", nil))
	if w.Code != http.StatusOK || !bytes.Equal(w.Body.Bytes(), file) {
		t.Fatalf("%d, %d bytes; want 200 and the %d bytes of docs/openapi.json", w.Code, w.Body.Len(), len(file))
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"} {
		if got := w.Header().Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
}

// TestDocumentIsIndented keeps the hand-written document in one layout
// (two spaces, as json.Indent writes it), so that its diffs show what
// changed and nothing else.
func TestDocumentIsIndented(t *testing.T) {
	var compact, indented bytes.Buffer
	if err := json.Compact(&compact, []byte(docs.OpenAPI)); err != nil {
		t.Fatalf("docs/openapi.json is not JSON: %v", err)
	}
	if err := json.Indent(&indented, compact.Bytes(), "", "  "); err != nil {
		t.Fatal(err)
	}
	indented.WriteByte('\n')
	if indented.String() != docs.OpenAPI {
		a, b := indented.String(), docs.OpenAPI
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		t.Fatalf("docs/openapi.json is not indented as json.Indent(doc, \"\", \"  \") writes it (with a final newline); first difference at byte %d: %q", i, b[i:min(len(b), i+60)])
	}
}

var (
	attrURL  = regexp.MustCompile(`(?i)\s(?:href|src|action|srcset|poster|data)\s*=\s*"([^"]*)"`)
	styleRE  = regexp.MustCompile(`(?s)<style>(.*?)</style>`)
	anchorRE = regexp.MustCompile(`\sid="([^"]+)"`)
)

// TestReference checks the reference page: served as a self-contained
// page (no script, nothing from elsewhere, its style allowed by hash), it
// shows every path, operation, webhook and schema of the document, and
// every link in it leads somewhere on the page or to the document.
func TestReference(t *testing.T) {
	w := httptest.NewRecorder()
	Reference(w, httptest.NewRequest(http.MethodGet, "/docs/", nil))
	body := w.Body.String()
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("%d %q", w.Code, w.Header().Get("Content-Type"))
	}
	csp := w.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	m := styleRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no style")
	}
	sum := sha256.Sum256([]byte(m[1]))
	if hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, "style-src "+hash) {
		t.Errorf("the page's style (%s) is not the one its Content-Security-Policy allows: %q", hash, csp)
	}
	if strings.Contains(strings.ToLower(body), "<script") {
		t.Error("the page has a script")
	}

	ids := map[string]bool{}
	for _, m := range anchorRE.FindAllStringSubmatch(body, -1) {
		ids[m[1]] = true
	}
	links := attrURL.FindAllStringSubmatch(body, -1)
	if len(links) < 50 {
		t.Fatalf("the page has %d links: the contents and the schemas' links are missing", len(links))
	}
	for _, m := range links {
		u := html.UnescapeString(m[1])
		switch {
		case strings.HasPrefix(u, "#"):
			if !ids[u[1:]] {
				t.Errorf("link %q leads nowhere on the page", u)
			}
		case u == "/v1/openapi.json":
		default:
			t.Errorf("link %q leaves the page: the page must work offline, from the gateway alone", u)
		}
	}

	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Webhooks   map[string]json.RawMessage            `json:"webhooks"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal([]byte(docs.OpenAPI), &doc); err != nil {
		t.Fatal(err)
	}
	text := html.UnescapeString(body)
	for path, item := range doc.Paths {
		for method, op := range item {
			if method == "parameters" {
				continue
			}
			var o struct{ OperationID string }
			_ = json.Unmarshal(op, &o)
			want := strings.ToUpper(method) + `</span> <code>` + path + `</code>`
			if !strings.Contains(text, want) || !ids["op-"+o.OperationID] {
				t.Errorf("the page does not show %s %s (op-%s)", strings.ToUpper(method), path, o.OperationID)
			}
		}
	}
	for event := range doc.Webhooks {
		if !ids["webhook-"+slug(event)] {
			t.Errorf("the page does not show the webhook %s", event)
		}
	}
	for name := range doc.Components.Schemas {
		if !ids["schema-"+name] {
			t.Errorf("the page does not show the schema %s", name)
		}
	}
	// What the page shows of an operation: its parameters, the fields of
	// its body, its answers and examples.
	for _, want := range []string{
		"<code>Idempotency-Key</code>", "<code>card.number</code>", "<code>billing.state</code>",
		`<span class="status s4">409</span>`, "4000000000000002", `"holderName": "Ada Lovelace"`,
	} {
		if !strings.Contains(body, want) && !strings.Contains(text, want) {
			t.Errorf("the page does not show %s", want)
		}
	}
}

// TestRenderEscapes checks that the document's text reaches the page as
// text: markup in a description is shown, not run; `code` becomes code.
func TestRenderEscapes(t *testing.T) {
	doc := `{"openapi":"3.1.0","info":{"title":"T <b>","version":"1","description":"Run <script>alert(1)</script> and ` + "`a<b`" + `.\n\n- one\n- two"},
	"paths":{"/v1/x":{"get":{"operationId":"x\"onmouseover=\"y","summary":"<img src=x>","responses":{"200":{"description":"ok"}}}}}}`
	out, err := render([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	page := string(out)
	for _, bad := range []string{"<script>alert", "<img src=x>", "<b>", `onmouseover="y"`} {
		if strings.Contains(page, bad) {
			t.Errorf("the page carries %q unescaped", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "<code>a&lt;b</code>", "<li>one</li><li>two</li>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
