// Package apidoctest checks HTTP exchanges with the gateway against the
// API's OpenAPI description (docs/openapi.json), with kin-openapi's
// openapi3filter. The end-to-end tests pass every request they send to a
// gateway, and its answer, through a Checker, so that a field a handler
// gains or loses without the document, or the reverse, fails them.
//
// The document's schemas are strict (additionalProperties false on every
// object the gateway writes or reads), so drift either way shows: an answer
// with a field the document does not name, or without one it requires, does
// not conform; nor does a status the operation does not list, a required
// header that is missing, an error name other than the status's.
//
// Requests are checked too, but a test may send an invalid request on
// purpose (hostile input, a missing key): the document then calls it
// invalid, and what is checked is the answer, which must still conform and
// must refuse the request (4xx or 5xx). Only a request the document refuses
// and the gateway accepts is a departure: the document is stricter than the
// gateway.
package apidoctest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/paygate/paygate/docs"
)

// Checker checks exchanges against the document. It is safe for
// concurrent use.
type Checker struct {
	doc    *openapi3.T
	router routers.Router
	// fallback holds, for a request no operation of the document matches
	// (an unknown path, or a method its path lacks), the pseudo-operations
	// whose responses list what any such request may be answered: see
	// undocumented.
	fallback map[fallbackKey]*routers.Route
}

type fallbackKey struct {
	read     bool // GET or HEAD: error answers carry meta
	noMethod bool // the path exists, the method does not
}

var (
	once    sync.Once
	shared  *Checker
	loadErr error
)

// Load returns the Checker of docs/openapi.json, loading and validating the
// document once per test binary.
func Load() (*Checker, error) {
	once.Do(func() { shared, loadErr = New([]byte(docs.OpenAPI)) })
	return shared, loadErr
}

// New returns a Checker of the document doc, which must be a valid OpenAPI
// 3.1 document (examples included).
func New(doc []byte) (*Checker, error) {
	loader := openapi3.NewLoader()
	t, err := loader.LoadFromData(doc)
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	if !t.IsOpenAPI31OrLater() {
		return nil, errors.New("the OpenAPI document is not 3.1")
	}
	if err := t.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is not valid: %w", err)
	}
	router, err := gorillamux.NewRouter(t)
	if err != nil {
		return nil, fmt.Errorf("route the OpenAPI document: %w", err)
	}
	c := &Checker{doc: t, router: router, fallback: map[fallbackKey]*routers.Route{}}
	for _, k := range []fallbackKey{{}, {noMethod: true}, {read: true}, {read: true, noMethod: true}} {
		if c.fallback[k], err = fallbackRoute(t, k); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// fallbackRoute is the pseudo-operation of the requests of kind k that no
// operation of the document matches. Any of them may be answered 401 (no
// valid key comes first), 429, 500 or 503, and 404 for an unknown path or
// 405 for a method its path lacks: the answers of the document's
// components of those names (the Read ones for a GET, which carry meta).
func fallbackRoute(t *openapi3.T, k fallbackKey) (*routers.Route, error) {
	names := map[int]string{401: "Unauthorized", 429: "RateLimited", 500: "InternalError", 503: "ServiceUnavailable", 404: "NotFound"}
	if k.noMethod {
		delete(names, 404)
		names[405] = "MethodNotAllowed"
	}
	suffix := ""
	if k.read {
		suffix = "Read"
	}
	responses := openapi3.NewResponses()
	for status, name := range names {
		ref := t.Components.Responses[name+suffix]
		if ref == nil {
			return nil, fmt.Errorf("the OpenAPI document has no response %s%s", name, suffix)
		}
		responses.Set(strconv.Itoa(status), ref)
	}
	return &routers.Route{Spec: t, Path: "(no operation)", Operation: &openapi3.Operation{Responses: responses}}, nil
}

// Described reports whether the document speaks of the request's path:
// every path under /v1 (an unknown one included) is its, the others
// (/healthz, /dashboard, /docs) are not.
func Described(u *url.URL) bool {
	return u.Path == "/v1" || strings.HasPrefix(u.Path, "/v1/")
}

// Check reports how an exchange departs from the document: req, sent with
// the body reqBody, was answered status with header and body. It returns
// nil when the exchange conforms, and for a path the document does not
// describe (Described).
func (c *Checker) Check(req *http.Request, reqBody []byte, status int, header http.Header, body []byte) error {
	if !Described(req.URL) {
		return nil
	}
	ctx := context.Background()
	r := req.Clone(ctx)
	r.Body = http.NoBody
	if len(reqBody) > 0 {
		r.Body = readCloser{bytes.NewReader(reqBody)}
	}
	r.ContentLength = int64(len(reqBody))

	route, params, err := c.router.FindRoute(r)
	if err != nil {
		return c.undocumented(ctx, r, err, status, header, body)
	}
	in := &openapi3filter.RequestValidationInput{
		Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: keyPresent, SkipSettingDefaults: true},
	}
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	if err := c.answer(ctx, in, status, header, body); err != nil {
		return fmt.Errorf("%s %s answered %d: %w", route.Method, route.Path, status, err)
	}
	if reqErr != nil && status < 400 {
		return fmt.Errorf("%s %s: the document refuses the request (%v), yet the gateway accepted it with %d",
			route.Method, route.Path, reqErr, status)
	}
	return nil
}

// undocumented checks the answer to a request that no operation matches:
// an unknown path under /v1 (404, or 401 first without a key) or a method
// its path does not serve (405 with Allow). Either may also be 429 (the
// rate limit is charged first), 500 or 503.
func (c *Checker) undocumented(ctx context.Context, r *http.Request, routeErr error, status int, header http.Header, body []byte) error {
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	var key fallbackKey
	switch {
	case errors.Is(routeErr, routers.ErrPathNotFound):
		key = fallbackKey{read: read}
	case errors.Is(routeErr, routers.ErrMethodNotAllowed):
		// A path whose id the gateway could never have issued is no
		// resource's path: it is answered 404 whatever the method, as an
		// unknown path is.
		key = fallbackKey{read: read, noMethod: status != http.StatusNotFound}
	default:
		return fmt.Errorf("%s %s: route the request: %w", r.Method, r.URL.Path, routeErr)
	}
	route := c.fallback[key]
	if r.Method == http.MethodHead && route.Operation.Responses.Status(status) == nil {
		// ValidateResponse skips HEAD, which has no body to check: its
		// status is checked here.
		return fmt.Errorf("HEAD %s answered %d; the API serves no HEAD", r.URL.Path, status)
	}
	in := &openapi3filter.RequestValidationInput{Request: r, Route: route}
	if err := c.answer(ctx, in, status, header, body); err != nil {
		return fmt.Errorf("%s %s (%s) answered %d: %w", r.Method, r.URL.Path, routeErr, status, err)
	}
	return nil
}

// answer checks an answer against the operation of in: its status must be
// one the operation lists, with the headers it requires and a body of its
// schema.
func (c *Checker) answer(ctx context.Context, in *openapi3filter.RequestValidationInput, status int, header http.Header, body []byte) error {
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: status, Header: header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	out.SetBodyBytes(body)
	return openapi3filter.ValidateResponse(ctx, out)
}

// keyPresent satisfies the document's security scheme (an X-API-Key
// header) when the request carries one: whether the key is valid is the
// gateway's to say, and a request without one is refused with 401.
func keyPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if in.SecurityScheme == nil || in.SecurityScheme.Type != "apiKey" || in.SecurityScheme.In != "header" {
		return fmt.Errorf("unexpected security scheme %q", in.SecuritySchemeName)
	}
	if in.RequestValidationInput.Request.Header.Get(in.SecurityScheme.Name) == "" {
		return fmt.Errorf("no %s header", in.SecurityScheme.Name)
	}
	return nil
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// CheckWebhook reports how a webhook delivery (its request's header and
// body) departs from the document's webhooks: the event its body names
// must be one of them, with the signature headers and a body of its
// schema.
func (c *Checker) CheckWebhook(header http.Header, body []byte) error {
	var ev struct {
		Event string `json:"event"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return fmt.Errorf("webhook body: %w", err)
	}
	item := c.doc.Webhooks[ev.Event]
	if item == nil || item.Post == nil {
		return fmt.Errorf("webhook event %q: the document has no such webhook", ev.Event)
	}
	r, err := http.NewRequest(http.MethodPost, "http://receiver.invalid/", readCloser{bytes.NewReader(body)})
	if err != nil {
		return err
	}
	r.Header = header.Clone()
	in := &openapi3filter.RequestValidationInput{
		Request: r,
		Route:   &routers.Route{Spec: c.doc, Path: ev.Event, PathItem: item, Method: http.MethodPost, Operation: item.Post},
		Options: &openapi3filter.Options{SkipSettingDefaults: true},
	}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		return fmt.Errorf("webhook %s: %w", ev.Event, err)
	}
	return nil
}
