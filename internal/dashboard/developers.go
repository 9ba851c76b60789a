package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/account"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// maxGrace bounds the grace period of a rotation in the dashboard, as on
// every interface.
const maxGrace = account.MaxGrace

// graceChoices are the grace periods the rotate form offers; any other
// duration up to maxGrace may be typed.
var graceChoices = []string{"0s", "1h", "24h", "72h", "168h"}

// keyRow is one API key in the list.
type keyRow struct {
	paygate.APIKey
	// Status is "active", "expiring", "expired" or "revoked".
	Status string
	Active bool
}

// developersData is the Developers page.
type developersData struct {
	Secret, Public []keyRow
	Webhook        *paygate.WebhookEndpointState
	// Notice says what was just done ("revoked").
	Notice string
	// CreateKey is the idempotency key of the create form, minted when the
	// page is rendered, so that submitting the form again (a reload of the
	// page that showed the secret) creates no second key.
	CreateKey string
	// Origins are the origins allowed to embed the card fields in this
	// mode (decisions §19); OriginsText is what the form shows: those, or
	// what was typed when it was refused, and OriginsError why.
	Origins      []string
	OriginsText  string
	OriginsError string
	// TestOrigins are the sources test mode always allows.
	TestOrigins []string
	// Gateway is the gateway's public URL, for the paygate.js snippet.
	Gateway string
	// PublicHint is the hint of the mode's newest working public key,
	// for the snippet ("" when there is none).
	PublicHint string
}

// keyStatus is a key's state at t, as a badge word.
func keyStatus(k paygate.APIKey, t time.Time) string {
	switch {
	case k.RevokedAt != nil && !t.Before(*k.RevokedAt):
		return "revoked"
	case k.ExpiresAt != nil && !t.Before(*k.ExpiresAt):
		return "expired"
	case k.ExpiresAt != nil:
		return "expiring"
	}
	return "active"
}

// developers serves GET /developers: the API keys of the mode, a summary
// of the webhook endpoint, and the card fields: the allowed origins and a
// paygate.js snippet.
func (d *Dashboard) developers(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	data, err := d.loadDevelopers(r, v)
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	if rid := r.URL.Query().Get("revoked"); rid != "" {
		data.Notice = "The key was revoked: requests made with it now get 401."
	}
	if r.URL.Query().Get("created") != "" {
		data.Notice = "This form already created a key (listed below). Its secret was shown only once: if it was not copied, revoke that key and create another."
	}
	if r.URL.Query().Get("origins") == "saved" {
		data.Notice = "The allowed origins were saved. They apply to the next card fields loaded."
	}
	d.render(w, r, v, http.StatusOK, "developers", data)
}

// loadDevelopers reads what the Developers page shows.
func (d *Dashboard) loadDevelopers(r *http.Request, v *viewer) (developersData, error) {
	ctx := r.Context()
	keys, err := account.MerchantKeys(ctx, d.store, v.User.MerchantID, v.Mode)
	if err != nil {
		return developersData{}, err
	}
	var data developersData
	now := d.now()
	for _, k := range keys {
		row := keyRow{APIKey: k, Status: keyStatus(k, now), Active: k.ActiveAt(now)}
		if k.Type == paygate.KeyPublic {
			data.Public = append(data.Public, row)
		} else {
			data.Secret = append(data.Secret, row)
		}
	}
	sortKeys(data.Secret)
	sortKeys(data.Public)
	for _, k := range data.Public {
		if k.Active {
			data.PublicHint = k.Hint
			break
		}
	}
	ep, err := d.store.WebhookEndpointState(ctx, v.User.MerchantID, v.Mode)
	switch {
	case err == nil:
		data.Webhook = &ep
	case !paygate.IsNotFound(err):
		return developersData{}, err
	}
	if data.Origins, err = d.store.AllowedOrigins(ctx, v.User.MerchantID, v.Mode); err != nil {
		return developersData{}, err
	}
	data.OriginsText = strings.Join(data.Origins, "\n")
	if v.Mode == paygate.ModeTest {
		data.TestOrigins = paygate.TestModeFrameOrigins
	}
	data.Gateway = strings.TrimSuffix(d.cfg.BaseURL, "/")
	data.CreateKey = id.New()
	return data, nil
}

// setOrigins serves POST /origins: the origins allowed to embed the card
// fields in this mode (field origins: one per line, or separated by commas
// or spaces; empty clears them). A refused list shows the page again with
// the error (400); a valid one is stored with its audit entry in one unit.
func (d *Dashboard) setOrigins(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	data, err := d.loadDevelopers(r, v)
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	typed := r.PostFormValue("origins")
	origins, err := paygate.NormalizeOrigins(v.Mode, strings.FieldsFunc(typed, func(c rune) bool {
		return c == ',' || c == ' ' || c == '\n' || c == '\r' || c == '\t'
	}))
	if err != nil {
		msg := err.Error()
		var pe *paygate.Error
		if errors.As(err, &pe) {
			msg = pe.Message
		}
		data.OriginsText, data.OriginsError = typed, "The origins were not saved: "+msg+"."
		d.render(w, r, v, http.StatusBadRequest, "developers", data)
		return
	}
	now := d.now()
	ch := paygate.OriginsChange{MerchantID: v.User.MerchantID, Mode: v.Mode, Origins: origins, At: now}
	e := paygate.AuditEntry{ID: newID(), MerchantID: v.User.MerchantID, Mode: v.Mode, UserID: v.User.ID, Email: v.User.Email,
		Action: paygate.AuditOriginsChanged, Detail: ch.Describe(), RemoteAddr: clientAddr(r), CreatedAt: now}
	if err := d.store.Commit(r.Context(), paygate.Unit{Ops: []paygate.Op{ch, e}}); err != nil {
		d.fail(w, r, v, err)
		return
	}
	http.Redirect(w, r, modePath(v, "/developers")+"?origins=saved", http.StatusSeeOther)
}

// sortKeys puts working keys first, newest first within each group.
func sortKeys(rows []keyRow) {
	// Insertion sort: a merchant has a handful of keys.
	for i := 1; i < len(rows); i++ {
		for j := i; j > 0 && keyBefore(rows[j], rows[j-1]); j-- {
			rows[j], rows[j-1] = rows[j-1], rows[j]
		}
	}
}

func keyBefore(a, b keyRow) bool {
	if a.Active != b.Active {
		return a.Active
	}
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.ID > b.ID
}

// newKeyData is the page that shows a new secret once.
type newKeyData struct {
	Key    paygate.APIKey
	Secret string
	// Old is the key a rotation replaced (nil for a created key).
	Old *paygate.APIKey
}

// createKey serves POST /keys: a new secret key of the mode, shown once.
// keyCreateKeyPrefix marks the idempotency keys of the create-key form, in
// the (merchant, mode) scope of the API's keys (see refundKeyPrefix).
const keyCreateKeyPrefix = "dashboard-key:"

// keyCreateFingerprint is the fingerprint of every create-key form: the
// form has no fields besides its key.
var keyCreateFingerprint = []byte("dashboard: create a secret key")

// createKey serves POST /keys. The form's idempotency key makes a second
// submission of one form (the browser's reload of the page that showed the
// secret) lead back to the developers page instead of creating another
// key. The stored answer names the key, never its secret: only the secret's
// hash is kept anywhere.
func (d *Dashboard) createKey(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	ctx := r.Context()
	form := r.PostFormValue("idempotency_key")
	if !id.Valid(form) {
		d.fail(w, r, v, paygate.Errorf(paygate.CodeInvalidRequest, "idempotency_key", "The form has expired; reload the page and create the key again."))
		return
	}
	key := keyCreateKeyPrefix + strings.ToLower(form)
	rec, reserved, err := d.store.ReserveIdempotency(ctx, paygate.IdempotencyReservation{
		MerchantID: v.User.MerchantID, Mode: v.Mode, Key: key, Fingerprint: keyCreateFingerprint, Now: d.now(),
	})
	if err != nil {
		d.fail(w, r, v, fmt.Errorf("reserve the create-key form: %w", err))
		return
	}
	if !reserved {
		// Complete or still in flight, the form made (or is making) its
		// key: the list shows it.
		http.Redirect(w, r, modePath(v, "/developers")+"?created="+url.QueryEscape(string(rec.Body)), http.StatusSeeOther)
		return
	}
	secret, created, err := account.CreateKey(ctx, d.store, v.User.MerchantID, v.Mode, d.now())
	if err != nil {
		release := paygate.IdempotencyRelease{MerchantID: v.User.MerchantID, Mode: v.Mode, Key: key}
		if rerr := d.store.Commit(context.WithoutCancel(ctx), paygate.Unit{Ops: []paygate.Op{release}}); rerr != nil {
			err = errors.Join(err, fmt.Errorf("release the create-key form: %w", rerr))
		}
		d.fail(w, r, v, err)
		return
	}
	if err := d.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.IdempotencyCompletion{
		MerchantID: v.User.MerchantID, Mode: v.Mode, Key: key, StatusCode: http.StatusCreated, Body: []byte(created.ID),
	}}}); err != nil {
		// The key exists and its secret is about to be shown: a failure
		// here only loses the protection against a second submission.
		d.log.Warn("complete the create-key form", "key", created.ID, "error", err)
	}
	d.audit(ctx, r, v, v.Mode, paygate.AuditKeyCreated, created.ID, "secret key "+created.Hint)
	d.render(w, r, v, http.StatusOK, "key_new", newKeyData{Key: created, Secret: secret})
}

// rotateData is the rotate form.
type rotateData struct {
	Key     keyRow
	Grace   string
	Choices []string
	Error   string
}

// rotateKey serves GET and POST /keys/{id}/rotate. The form's field
// "grace" is a Go duration (24h, 1h30m, 0s) up to 30 days: how long the old
// key keeps working.
func (d *Dashboard) rotateKey(w http.ResponseWriter, r *http.Request, v *viewer, params []string) {
	ctx := r.Context()
	old, err := account.MerchantKey(ctx, d.store, v.User.MerchantID, v.Mode, strings.ToLower(params[0]))
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	now := d.now()
	data := rotateData{Key: keyRow{APIKey: old, Status: keyStatus(old, now), Active: old.ActiveAt(now)}, Grace: "24h", Choices: graceChoices}
	if r.Method != http.MethodPost {
		d.render(w, r, v, http.StatusOK, "key_rotate", data)
		return
	}
	data.Grace = strings.TrimSpace(r.PostFormValue("grace"))
	grace, msg := parseGrace(data.Grace)
	if msg != "" {
		data.Error = msg
		d.render(w, r, v, http.StatusBadRequest, "key_rotate", data)
		return
	}
	secret, next, after, err := account.RotateKey(ctx, d.store, old, grace, now)
	if err != nil {
		var inactive *account.InactiveKeyError
		var replaced *paygate.KeyReplacedError
		switch {
		case errors.As(err, &inactive):
			data.Error = capitalize(inactive.Error()) + "."
			d.render(w, r, v, http.StatusConflict, "key_rotate", data)
			return
		case errors.As(err, &replaced):
			data.Error = capitalize(replaced.Error()) + "; rotate the successor instead."
			d.render(w, r, v, http.StatusConflict, "key_rotate", data)
			return
		}
		d.fail(w, r, v, err)
		return
	}
	d.audit(ctx, r, v, v.Mode, paygate.AuditKeyRotated, old.ID,
		fmt.Sprintf("new key %s; the old one stops %s", next.Hint, formatTime(*after.ExpiresAt, time.UTC)))
	d.render(w, r, v, http.StatusOK, "key_new", newKeyData{Key: next, Secret: secret, Old: &after})
}

// parseGrace reads the grace field; a message explains a refusal.
func parseGrace(s string) (time.Duration, string) {
	if s == "0" {
		return 0, ""
	}
	g, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, "The grace period must be a duration such as 24h, 1h30m or 0s."
	case g < 0:
		return 0, "The grace period must not be negative."
	case g > maxGrace:
		return 0, "The grace period can be at most 30 days (720h)."
	}
	return g, ""
}

// revokeKey serves GET /keys/{id}/revoke (the confirmation) and POST (the
// revocation, at once: requests with the key get 401 from then on).
func (d *Dashboard) revokeKey(w http.ResponseWriter, r *http.Request, v *viewer, params []string) {
	ctx := r.Context()
	k, err := account.MerchantKey(ctx, d.store, v.User.MerchantID, v.Mode, strings.ToLower(params[0]))
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	now := d.now()
	if r.Method != http.MethodPost {
		d.render(w, r, v, http.StatusOK, "key_revoke", keyRow{APIKey: k, Status: keyStatus(k, now), Active: k.ActiveAt(now)})
		return
	}
	k, err = account.RevokeKey(ctx, d.store, k.ID, now)
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	d.audit(ctx, r, v, v.Mode, paygate.AuditKeyRevoked, k.ID, string(k.Type)+" key "+k.Hint)
	http.Redirect(w, r, modePath(v, "/developers")+"?"+url.Values{"revoked": {k.ID}}.Encode(), http.StatusSeeOther)
}
