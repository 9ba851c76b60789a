// Package cardfields serves what a merchant's checkout page needs to
// collect a card without the card ever touching that page (decisions §19):
//
//   - GET /js/v1/paygate.js, the script the page loads from the gateway:
//     Paygate(publicKey).mountCard(element, options) puts the card fields'
//     frame on the page, and the element's createToken() asks the frame for
//     a single-use token. It talks to the frame by postMessage, to the
//     gateway's origin only, and hears only the frame it made.
//   - GET /js/v1/card-frame.html?key=<public key>&origin=<page origin>
//     [&locale=en|fr|de], the fields themselves, on the gateway's origin. The key picks the merchant
//     and mode; the page's origin must be one the merchant allows (test
//     mode also allows any port of http://localhost and http://127.0.0.1).
//     The frame posts the card to POST /v1/tokens on its own origin and
//     tells the page only the brand, whether each field is valid, and the
//     token (whose card.last4 are the only digits of the number it learns).
//   - GET /js/v1/card-frame.js and /js/v1/card-frame.css, the frame's
//     script and style (the frame runs no inline script or style).
//
// The frame is sent with Content-Security-Policy frame-ancestors of the
// merchant's allowed origins, so a browser shows it on no other page; no
// X-Frame-Options, which would forbid framing altogether.
//
// The static files are plain JavaScript and CSS, written as they are
// served: there is no build step.
package cardfields

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/clientaddr"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/ratelimit"
	"github.com/paygate/paygate/internal/web"
)

// The paths this package serves, each for GET (and HEAD).
const (
	ScriptPath      = "/js/v1/paygate.js"
	FramePath       = "/js/v1/card-frame.html"
	FrameScriptPath = "/js/v1/card-frame.js"
	FrameStylePath  = "/js/v1/card-frame.css"
)

// Paths lists the paths of Handler.
var Paths = []string{ScriptPath, FramePath, FrameScriptPath, FrameStylePath}

// assetMaxAge is how long a browser may use paygate.js and the frame's
// script and style without asking again; after it, the ETag makes asking
// cheap. Short, so that a fix reaches every checkout within minutes.
const assetMaxAge = 5 * time.Minute

//go:embed static/paygate.js static/card-frame.js static/card-frame.css static/card-frame.html
var staticFS embed.FS

// asset is one embedded file as it is served.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

func load(name, contentType string) asset {
	b, err := staticFS.ReadFile("static/" + name)
	if err != nil {
		panic("cardfields: " + err.Error()) // built without its files
	}
	sum := sha256.Sum256(b)
	return asset{body: b, contentType: contentType, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
}

var (
	assets = map[string]asset{
		ScriptPath:      load("paygate.js", "text/javascript; charset=utf-8"),
		FrameScriptPath: load("card-frame.js", "text/javascript; charset=utf-8"),
		FrameStylePath:  load("card-frame.css", "text/css; charset=utf-8"),
	}
	frameTemplate = template.Must(template.ParseFS(staticFS, "static/card-frame.html"))
)

// Keys is what the handler reads of the store: the API key of a hash and
// the origins a merchant allows (paygate.Store has both).
type Keys interface {
	APIKeys(ctx context.Context, q paygate.APIKeyQuery) ([]paygate.APIKey, error)
	AllowedOrigins(ctx context.Context, merchantID string, mode paygate.Mode) ([]string, error)
}

// Config holds what the handler needs.
type Config struct {
	Store  Keys
	Clock  paygate.Clock
	Logger *slog.Logger
	// Limiter and UnauthenticatedLimit charge a frame asked for with a key
	// that is not an active public key to its client address's budget of
	// failed authentications, the API's (decisions §6): over it, the
	// frame answers 429. Without a Limiter, nothing is charged.
	Limiter              ratelimit.Limiter
	UnauthenticatedLimit int
}

// Handler serves Paths.
type Handler struct {
	store       Keys
	clock       paygate.Clock
	log         *slog.Logger
	limiter     ratelimit.Limiter
	unauthLimit int
}

// New returns the handler. It panics without a store (a wiring mistake).
func New(cfg Config) *Handler {
	if cfg.Store == nil {
		panic("cardfields.New: Store is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = paygate.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Limiter != nil && cfg.UnauthenticatedLimit < 1 {
		panic("cardfields.New: UnauthenticatedLimit must be at least 1 with a Limiter")
	}
	return &Handler{store: cfg.Store, clock: cfg.Clock, log: cfg.Logger, limiter: cfg.Limiter, unauthLimit: cfg.UnauthenticatedLimit}
}

// ServeHTTP serves GET and HEAD of Paths; anything else is 404 (the caller
// routes only Paths here, and answers their other methods itself).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == FramePath {
		h.serveFrame(w, r)
		return
	}
	a, ok := assets[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Cache-Control", "public, max-age="+strconv.Itoa(int(assetMaxAge.Seconds())))
	hd.Set("ETag", a.etag)
	hd.Set("X-Content-Type-Options", "nosniff")
	// The script is loaded by merchants' pages on other origins.
	hd.Set("Cross-Origin-Resource-Policy", "cross-origin")
	if etagMatches(r.Header.Get("If-None-Match"), a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Type", a.contentType)
	hd.Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(a.body)
	}
}

// etagMatches reports whether an If-None-Match header names etag (or *).
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// The frame's error pages. None names the key.
var (
	pageBadKey = web.Page{Tone: "bad", Mark: "!", Heading: "Card fields unavailable",
		Message: "The card fields were requested with a key that is not an active public key.",
		Next:    "The shop must load paygate.js with its public key (smtgw_pk_…)."}
	pageBadOrigin = web.Page{Tone: "bad", Mark: "!", Heading: "Card fields unavailable",
		Message: "This page is not allowed to show these card fields.",
		Next:    "The shop must add its page's origin to the allowed origins (paygate merchant origins set, or the dashboard's Developers page)."}
	pageLimited = web.Page{Tone: "bad", Mark: "!", Heading: "Card fields unavailable",
		Message: "Too many requests with keys that are not active public keys came from this address.",
		Next:    "Wait a minute, then reload the page."}
	pageUnavailable = web.Page{Tone: "info", Mark: "i", Heading: "Please try again",
		Message: "The card fields cannot be shown right now.",
		Next:    "Reload the page in a moment."}
)

// frameData is what the frame's template shows.
type frameData struct {
	Key, Parent, Mode string
	ScriptPath        string
	StylePath         string
	L                 frameWords
}

// frameWords are the frame's labels in one language; card-frame.js has
// the error messages of the same languages.
type frameWords struct {
	Lang, Title, Form, Number, Expiry, ExpiryHint, ExpiryPlaceholder, CVC, CVCHint, Name, Submit string
}

// frameLanguages are the languages of the locale option; any other is
// shown in English.
var frameLanguages = map[string]frameWords{
	"en": {Lang: "en", Title: "Card details", Form: "Card details", Number: "Card number", Expiry: "Expiry date",
		ExpiryHint: "(MM / YY)", ExpiryPlaceholder: "MM / YY", CVC: "Security code", CVCHint: "(CVC)", Name: "Name on card", Submit: "Submit"},
	"fr": {Lang: "fr", Title: "Carte bancaire", Form: "Carte bancaire", Number: "Numéro de carte", Expiry: "Date d’expiration",
		ExpiryHint: "(MM / AA)", ExpiryPlaceholder: "MM / AA", CVC: "Code de sécurité", CVCHint: "(CVC)", Name: "Nom sur la carte", Submit: "Valider"},
	"de": {Lang: "de", Title: "Kartendaten", Form: "Kartendaten", Number: "Kartennummer", Expiry: "Ablaufdatum",
		ExpiryHint: "(MM / JJ)", ExpiryPlaceholder: "MM / JJ", CVC: "Sicherheitscode", CVCHint: "(CVC)", Name: "Name auf der Karte", Submit: "Senden"},
}

// frameLanguage picks the words of a locale ("fr", "fr-CA", "de_DE"…),
// English when there are none.
func frameLanguage(locale string) frameWords {
	l := strings.ToLower(locale)
	if i := strings.IndexAny(l, "-_"); i >= 0 {
		l = l[:i]
	}
	if w, ok := frameLanguages[l]; ok {
		return w
	}
	return frameLanguages["en"]
}

// serveFrame serves the card fields' page for the public key of the query
// to the page origin of the query.
func (h *Handler) serveFrame(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key, err := h.publicKey(r.Context(), q.Get("key"))
	if err != nil {
		if paygate.ErrorCode(err) == paygate.CodeUnauthorized {
			h.refuse(w, r)
			return
		}
		h.unavailable(w, r, err)
		return
	}
	allowed, err := h.store.AllowedOrigins(r.Context(), key.MerchantID, key.Mode)
	if err != nil {
		h.unavailable(w, r, err)
		return
	}
	parent, err := paygate.NormalizeOrigin(paygate.ModeTest, q.Get("origin"))
	if err != nil || !paygate.AllowsOrigin(key.Mode, allowed, parent) {
		web.WritePage(w, http.StatusForbidden, pageBadOrigin, nil)
		return
	}
	var b bytes.Buffer
	err = frameTemplate.Execute(&b, frameData{Key: q.Get("key"), Parent: parent, Mode: string(key.Mode), L: frameLanguage(q.Get("locale")),
		ScriptPath: FrameScriptPath + "?v=" + strings.Trim(assets[FrameScriptPath].etag, `"`),
		StylePath:  FrameStylePath + "?v=" + strings.Trim(assets[FrameStylePath].etag, `"`)})
	if err != nil {
		panic("cardfields: render frame: " + err.Error()) // fixed template and data
	}
	FrameHeaders(w.Header(), key.Mode, allowed)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(b.Bytes())
	}
}

// FrameHeaders sets the security headers of the card fields' frame for a
// key of mode whose merchant allows the origins allowed (normalized):
// frame-ancestors of those (and in test mode TestModeFrameOrigins), and a
// policy that lets the frame run its own script and style and reach its
// own origin, nothing else. No X-Frame-Options: frame-ancestors decides.
func FrameHeaders(h http.Header, mode paygate.Mode, allowed []string) {
	ancestors := append([]string(nil), allowed...)
	if mode == paygate.ModeTest {
		ancestors = append(ancestors, paygate.TestModeFrameOrigins...)
	}
	frames := "'none'"
	if len(ancestors) > 0 {
		frames = strings.Join(ancestors, " ")
	}
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "+
		"img-src 'none'; font-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors "+frames)
	h.Del("X-Frame-Options")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
}

// publicKey returns the active public key header names. Errors:
// UNAUTHORIZED for a malformed, unknown, revoked or expired key and for a
// secret key (which never belongs in a browser); a store failure as it is.
func (h *Handler) publicKey(ctx context.Context, s string) (paygate.APIKey, error) {
	mode, typ, ok := auth.Parse(s)
	if !ok || typ != paygate.KeyPublic {
		return paygate.APIKey{}, auth.Unauthorized()
	}
	hash := auth.Hash(s)
	key, err := paygate.OneAPIKey(h.store.APIKeys(ctx, paygate.APIKeyQuery{Hash: hash}))
	if paygate.IsNotFound(err) {
		return paygate.APIKey{}, auth.Unauthorized()
	}
	if err != nil {
		return paygate.APIKey{}, err
	}
	if subtle.ConstantTimeCompare(key.Hash, hash) != 1 || key.Type != paygate.KeyPublic || key.Mode != mode ||
		!key.ActiveAt(h.clock.Now()) {
		return paygate.APIKey{}, auth.Unauthorized()
	}
	return key, nil
}

// refuse answers a frame asked for with a key that is not an active public
// key: 401, or 429 once the client address spent its budget of failed
// authentications, which every refusal is charged to (the API's, so that
// guessing keys here costs what it costs there).
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request) {
	if h.limiter != nil {
		d, err := h.limiter.Allow(r.Context(), "unauth:"+clientaddr.FromRequest(r), h.unauthLimit)
		if err == nil && !d.Allowed {
			w.Header().Set("Retry-After", strconv.Itoa(max(int((d.RetryAfter+time.Second-1)/time.Second), 1)))
			web.WritePage(w, http.StatusTooManyRequests, pageLimited, nil)
			return
		}
	}
	web.WritePage(w, http.StatusUnauthorized, pageBadKey, nil)
}

// unavailable answers a store failure: 503 when the database cannot be
// reached, 500 (logged, without the key) otherwise.
func (h *Handler) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusServiceUnavailable
	if paygate.ErrorCode(err) != paygate.CodeServiceUnavailable {
		status = http.StatusInternalServerError
		h.log.Error("card frame failed", "request_id", web.FromContext(r.Context()).ID, "error", err.Error())
	}
	w.Header().Set("Retry-After", "5")
	web.WritePage(w, status, pageUnavailable, nil)
}
