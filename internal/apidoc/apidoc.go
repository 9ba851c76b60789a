// Package apidoc serves the API's description of itself (decisions.md
// section 18): the OpenAPI 3.1 document at /v1/openapi.json, exactly as
// committed at docs/openapi.json, and at /docs/ a reference page rendered
// from it on the server. The page is one self-contained HTML document (no
// script, no font or style from elsewhere, its one inline style allowed by
// hash), so it works offline and behind the strictest Content-Security-
// Policy.
//
// The document is written by hand; the end-to-end tests check every
// exchange against it (package apidoctest), which is what keeps it true.
package apidoc

import (
	"bytes"
	"embed"
	"html/template"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/paygate/paygate/docs"
	"github.com/paygate/paygate/internal/web"
)

// Document serves the OpenAPI document: no key, no rate limit, the same
// headers as every JSON answer of /v1 (decisions §15).
func Document(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(docs.OpenAPI)))
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, docs.OpenAPI)
}

// Reference serves the reference page, with the headers of every page of
// package web (no framing, no referrer, not stored).
func Reference(w http.ResponseWriter, _ *http.Request) {
	web.WriteHTML(w, http.StatusOK, page(), web.StyleSource(pageStyle), nil, nil)
}

//go:embed page/reference.html page/reference.css
var pageFiles embed.FS

var (
	pageTemplate = template.Must(template.ParseFS(pageFiles, "page/reference.html"))
	pageStyle    = web.EmbeddedStyle(pageFiles, "page/reference.css")
)

// page is the reference page, rendered once: the document is part of the
// binary.
var page = sync.OnceValue(func() []byte {
	b, err := render([]byte(docs.OpenAPI))
	if err != nil {
		// The document and the template are fixed at build time, and the
		// tests render them: a failure is a bug.
		panic("apidoc: render the reference page: " + err.Error())
	}
	return b
})

// render renders the reference page of an OpenAPI document.
func render(doc []byte) ([]byte, error) {
	root, err := parse(doc)
	if err != nil {
		return nil, err
	}
	ref, err := build(root)
	if err != nil {
		return nil, err
	}
	ref.Style = template.CSS(pageStyle) // the style is ours, embedded
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, ref); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
