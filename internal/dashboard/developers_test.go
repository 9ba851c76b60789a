package dashboard

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/testenv"
	"github.com/paygate/paygate/internal/webhook"
)

var newSecret = regexp.MustCompile(`id="new-secret">([^<]+)<`)

// key reads a key as stored.
func (s *site) key(keyID string) paygate.APIKey {
	s.t.Helper()
	k, err := paygate.OneAPIKey(s.st.APIKeys(context.Background(), paygate.APIKeyQuery{ID: keyID}))
	if err != nil {
		s.t.Fatal(err)
	}
	return k
}

// TestDevelopersLinksAPIReference checks that the developers page leads to
// the API's reference page and its OpenAPI document (decisions §18).
func TestDevelopersLinksAPIReference(t *testing.T) {
	t.Parallel()
	_, b := signedInSite(t)
	for _, mode := range []string{"test", "live"} {
		dev := b.get("/dashboard/" + mode + "/developers")
		if dev.code != http.StatusOK || !strings.Contains(dev.body, `href="/docs/"`) || !strings.Contains(dev.body, `href="/v1/openapi.json"`) {
			t.Errorf("%s developers page: %d, without the links to /docs/ and /v1/openapi.json", mode, dev.code)
		}
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	s, b := signedInSite(t)
	ctx := context.Background()

	dev := b.get("/dashboard/test/developers")
	if dev.code != http.StatusOK || !strings.Contains(dev.body, s.a.testKeyID) || strings.Contains(dev.body, s.a.liveKeyID) {
		t.Fatalf("test developers page lists the wrong keys: %d", dev.code)
	}

	// Create: the secret is on the page once and authenticates.
	p := b.post("/dashboard/test/developers", "/dashboard/test/keys", nil)
	m := newSecret.FindStringSubmatch(p.body)
	if p.code != http.StatusOK || m == nil {
		t.Fatalf("create key: %d\n%s", p.code, p.body)
	}
	secret := m[1]
	authn := &auth.Authenticator{Store: s.st, Clock: s.clock}
	k, err := authn.Authenticate(ctx, secret)
	if err != nil || k.MerchantID != s.a.id || k.Mode != paygate.ModeTest {
		t.Fatalf("the new key authenticates as %+v, %v", k, err)
	}
	if strings.Contains(b.get("/dashboard/test/developers").body, secret) {
		t.Error("the secret is shown again on the developers page")
	}

	// Rotate: grace must be a duration within 30 days.
	rotatePath := "/dashboard/test/keys/" + k.ID + "/rotate"
	for _, g := range []string{"soon", "-1h", "721h"} {
		if p := b.post(rotatePath, rotatePath, url.Values{"grace": {g}}); p.code != http.StatusBadRequest {
			t.Errorf("grace %q: %d", g, p.code)
		}
	}
	if got := s.key(k.ID); got.ExpiresAt != nil {
		t.Fatalf("a refused rotation changed the key: %+v", got)
	}
	p = b.post(rotatePath, rotatePath, url.Values{"grace": {"0s"}})
	m = newSecret.FindStringSubmatch(p.body)
	if p.code != http.StatusOK || m == nil {
		t.Fatalf("rotate: %d\n%s", p.code, p.body)
	}
	if _, err := authn.Authenticate(ctx, secret); paygate.ErrorCode(err) != paygate.CodeUnauthorized {
		t.Errorf("the old key after a rotation with grace 0: %v", err)
	}
	next, err := authn.Authenticate(ctx, m[1])
	if err != nil {
		t.Fatalf("the rotated key: %v", err)
	}
	// A stopped key cannot be rotated again.
	if p := b.do(http.MethodPost, rotatePath, url.Values{"grace": {"1h"}, "csrf": {csrfOf(t, b.get("/dashboard/test/developers"))}}); p.code != http.StatusConflict {
		t.Errorf("rotating a stopped key: %d", p.code)
	}

	// Rotate with a grace period keeps the old key until then.
	graced := "/dashboard/test/keys/" + next.ID + "/rotate"
	if p := b.post(graced, graced, url.Values{"grace": {"2h"}}); p.code != http.StatusOK {
		t.Fatalf("rotate with grace: %d", p.code)
	}
	if got := s.key(next.ID); got.ExpiresAt == nil || !got.ExpiresAt.Equal(s.clock.Now().Add(2*time.Hour)) {
		t.Errorf("grace 2h: the old key expires at %v", got.ExpiresAt)
	}
	// The graced key has a successor now: rotating it again is refused
	// with an error that names the successor, and creates no key.
	keysBefore, _ := s.st.APIKeys(ctx, paygate.APIKeyQuery{MerchantID: s.a.id})
	p = b.do(http.MethodPost, graced, url.Values{"grace": {"1h"}, "csrf": {csrfOf(t, b.get("/dashboard/test/developers"))}})
	keysAfter, _ := s.st.APIKeys(ctx, paygate.APIKeyQuery{MerchantID: s.a.id})
	successor := keysAfter[len(keysAfter)-1].ID
	if p.code != http.StatusConflict || !strings.Contains(p.body, "its successor is key "+successor) || newSecret.MatchString(p.body) || len(keysAfter) != len(keysBefore) {
		t.Errorf("rotating a key with a successor: %d, %d keys before and %d after\n%s", p.code, len(keysBefore), len(keysAfter), p.body)
	}

	// Revoke: a confirmation page, then the key stops at once.
	revokePath := "/dashboard/test/keys/" + s.a.testKeyID + "/revoke"
	if p := b.get(revokePath); p.code != http.StatusOK || !strings.Contains(p.body, `id="confirm-revoke"`) {
		t.Fatalf("revoke confirmation: %d", p.code)
	}
	if got := s.key(s.a.testKeyID); got.RevokedAt != nil {
		t.Fatal("the confirmation page revoked the key")
	}
	p = b.post(revokePath, revokePath, nil)
	if p.code != http.StatusSeeOther || !strings.HasPrefix(p.location, "/dashboard/test/developers?revoked=") {
		t.Fatalf("revoke: %d %q", p.code, p.location)
	}
	if got := s.key(s.a.testKeyID); got.RevokedAt == nil {
		t.Error("the key was not revoked")
	}

	got := s.auditActions(s.a.id)
	for action, n := range map[string]int{paygate.AuditKeyCreated: 1, paygate.AuditKeyRotated: 2, paygate.AuditKeyRevoked: 1} {
		if countOf(got, action) != n {
			t.Errorf("audit has %d %s, want %d: %v", countOf(got, action), action, n, got)
		}
	}
	es, err := s.st.AuditLog(ctx, paygate.AuditQuery{MerchantID: s.a.id, Limit: 1})
	if err != nil || len(es) != 1 {
		t.Fatal(err)
	}
	if e := es[0]; e.Email != s.a.email || e.RemoteAddr != "192.0.2.10" || e.Mode != paygate.ModeTest || e.Target != s.a.testKeyID {
		t.Errorf("audit entry %+v", e)
	}
	// The audit page shows it.
	if p := b.get("/dashboard/live/audit"); !strings.Contains(p.body, "API key revoked") || !strings.Contains(p.body, "192.0.2.10") {
		t.Errorf("audit page:\n%s", p.body)
	}
}

func TestAuditPagination(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ctx := context.Background()
	for i := range pageSize + 5 {
		err := s.st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.AuditEntry{
			ID: id.New(), MerchantID: s.a.id, Mode: paygate.ModeTest, UserID: "u", Email: s.a.email,
			Action: paygate.AuditWebhookTested, Target: "entry-" + strings.Repeat("x", i%3), RemoteAddr: "192.0.2.1",
			CreatedAt: s.clock.Now().Add(-time.Duration(i) * time.Minute),
		}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	b := s.signedIn()
	first := b.get("/dashboard/test/audit")
	older := regexp.MustCompile(`href="([^"]+)" id="older-page"`).FindStringSubmatch(first.body)
	if first.code != http.StatusOK || older == nil {
		t.Fatalf("first audit page: %d, no Older link", first.code)
	}
	rows := func(body string) int { return strings.Count(body, "<tr>") - 1 }
	if n := rows(first.body); n != pageSize {
		t.Errorf("first page has %d rows, want %d", n, pageSize)
	}
	second := b.get(strings.ReplaceAll(older[1], "&amp;", "&"))
	// 55 test entries and 1 sign-in: 6 on the second page.
	if second.code != http.StatusOK || rows(second.body) != 6 || strings.Contains(second.body, `id="older-page"`) {
		t.Errorf("second page: %d, %d rows", second.code, rows(second.body))
	}
	if p := b.get("/dashboard/test/audit?after=garbage"); p.code != http.StatusBadRequest {
		t.Errorf("a damaged cursor: %d", p.code)
	}
	// B sees none of A's entries.
	bb := s.browser()
	bb.mustSignIn(s.b.email)
	if p := bb.get("/dashboard/test/audit"); strings.Contains(p.body, `title="webhook.test_sent"`) {
		t.Error("merchant B sees merchant A's audit entries")
	}
}

func TestWebhookPages(t *testing.T) {
	t.Parallel()
	var woken int
	s := newSite(t, func(c *Config) { c.Wake = func() { woken++ } })
	b := s.signedIn()
	ctx := context.Background()

	// Live mode follows `paygate webhook set`: https and a public address.
	for _, u := range []string{"http://hooks.example.com/x", "https://127.0.0.1/x", "https://localhost/x", "ftp://x.example/"} {
		p := b.post("/dashboard/live/webhook", "/dashboard/live/webhook", url.Values{"url": {u}})
		if p.code != http.StatusBadRequest || !strings.Contains(p.body, `id="webhook-error"`) {
			t.Errorf("live URL %s: %d", u, p.code)
		}
	}
	if _, err := s.st.WebhookEndpointState(ctx, s.a.id, paygate.ModeLive); !paygate.IsNotFound(err) {
		t.Fatalf("a refused URL was stored: %v", err)
	}
	if p := b.post("/dashboard/test/webhook", "/dashboard/test/webhook", url.Values{"url": {"http://127.0.0.1:9/hook"}, "events": {"payment.captured", "nope"}}); p.code != http.StatusBadRequest {
		t.Errorf("unknown event: %d", p.code)
	}
	// Test mode takes a local http URL.
	p := b.post("/dashboard/test/webhook", "/dashboard/test/webhook", url.Values{"url": {"http://127.0.0.1:9/hook"}, "events": {"payment.captured", "refund.succeeded"}})
	if p.code != http.StatusSeeOther {
		t.Fatalf("set test webhook: %d\n%s", p.code, p.body)
	}
	ep, err := openedEndpoint(ctx, s.st, s.a.id, paygate.ModeTest)
	if err != nil || ep.URL != "http://127.0.0.1:9/hook" || strings.Join(ep.Events, ",") != "payment.captured,refund.succeeded" {
		t.Fatalf("stored endpoint %+v, %v", ep, err)
	}
	if stored, _ := s.st.WebhookEndpointState(ctx, s.a.id, paygate.ModeTest); stored.Secret != "" || len(stored.SealedSecret) == 0 {
		t.Fatal("the dashboard stored the plain secret")
	}
	page := b.get("/dashboard/test/webhook")
	if strings.Contains(html.UnescapeString(page.body), ep.Secret) {
		t.Fatal("the secret is on the page before it was revealed")
	}
	// Reveal.
	p = b.post("/dashboard/test/webhook", "/dashboard/test/webhook/secret", nil)
	if !strings.Contains(html.UnescapeString(p.body), `id="webhook-secret">`+ep.Secret+"<") {
		t.Fatalf("reveal: %d", p.code)
	}
	// Rotate: a new secret, the old one signs beside it.
	p = b.post("/dashboard/test/webhook", "/dashboard/test/webhook/rotate", nil)
	rotated, err := openedEndpoint(ctx, s.st, s.a.id, paygate.ModeTest)
	if err != nil || rotated.Secret == ep.Secret || rotated.PreviousSecret != ep.Secret || !strings.Contains(html.UnescapeString(p.body), rotated.Secret) {
		t.Fatalf("rotate secret: %d, %+v, %v", p.code, rotated, err)
	}
	// Saving the URL again keeps the secret.
	b.post("/dashboard/test/webhook", "/dashboard/test/webhook", url.Values{"url": {"http://127.0.0.1:9/other"}})
	if again, _ := openedEndpoint(ctx, s.st, s.a.id, paygate.ModeTest); again.Secret != rotated.Secret || len(again.Events) != 0 {
		t.Errorf("saving again: %+v", again)
	}
	// Test event: a ping delivery, and the dispatcher woken.
	p = b.post("/dashboard/test/webhook", "/dashboard/test/webhook/test", nil)
	if p.code != http.StatusSeeOther || woken != 1 {
		t.Fatalf("send test: %d, woken %d", p.code, woken)
	}
	ds, err := s.st.Deliveries(ctx, paygate.DeliveryQuery{MerchantID: s.a.id, Mode: paygate.ModeTest})
	if err != nil || len(ds) != 1 || ds[0].EventType != paygate.EventPing {
		t.Fatalf("deliveries %+v, %v", ds, err)
	}
	if p := b.get("/dashboard/test/webhook"); !strings.Contains(p.body, ds[0].ID) {
		t.Error("the delivery log does not list the ping")
	}
	detail := b.get("/dashboard/test/webhook/deliveries/" + ds[0].ID)
	if detail.code != http.StatusOK || !strings.Contains(detail.body, ds[0].EventID) {
		t.Fatalf("delivery page: %d", detail.code)
	}
	// Resend: a new delivery of the same event.
	p = b.post("/dashboard/test/webhook/deliveries/"+ds[0].ID, "/dashboard/test/webhook/deliveries/"+ds[0].ID+"/resend", nil)
	if p.code != http.StatusSeeOther || woken != 2 {
		t.Fatalf("resend: %d, woken %d", p.code, woken)
	}
	ds2, _ := s.st.Deliveries(ctx, paygate.DeliveryQuery{MerchantID: s.a.id, Mode: paygate.ModeTest})
	if len(ds2) != 2 || ds2[0].EventID != ds[0].EventID || ds2[0].ID == ds[0].ID {
		t.Errorf("after resend: %+v", ds2)
	}
	// No endpoint in live mode: the test button is refused on the page.
	csrf := csrfOf(t, b.get("/dashboard/live/webhook"))
	if p := b.do(http.MethodPost, "/dashboard/live/webhook/test", url.Values{"csrf": {csrf}}); p.code != http.StatusConflict {
		t.Errorf("test without an endpoint: %d", p.code)
	}
	got := s.auditActions(s.a.id)
	for action, n := range map[string]int{paygate.AuditWebhookChanged: 2, paygate.AuditWebhookSecretShown: 1, paygate.AuditWebhookRotated: 1, paygate.AuditWebhookTested: 1, paygate.AuditWebhookResent: 1} {
		if countOf(got, action) != n {
			t.Errorf("audit has %d %s, want %d", countOf(got, action), action, n)
		}
	}
}

// TestOtherMerchantsIDs: a user of merchant A who puts merchant B's ids
// (or A's own ids of the other mode) in URLs gets 404, and nothing changes.
func TestOtherMerchantsIDs(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ctx := context.Background()
	// B has a test endpoint and a delivery.
	if _, err := testenv.ConfigureEndpoint(ctx, s.st, paygate.WebhookEndpoint{
		MerchantID: s.b.id, Mode: paygate.ModeTest, URL: "http://127.0.0.1:9/b", SealedSecret: sealedSecret(t, s.b.id, paygate.ModeTest),
		CreatedAt: s.clock.Now(), UpdatedAt: s.clock.Now(),
	}, false, s.clock.Now()); err != nil {
		t.Fatal(err)
	}
	bd, err := testenv.CreatePing(ctx, s.st, webhook.PingEvent(s.b.id, paygate.ModeTest, s.clock.Now()), id.New())
	if err != nil {
		t.Fatal(err)
	}
	b := s.signedIn()
	csrf := csrfOf(t, b.get("/dashboard/test/developers"))

	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/dashboard/test/keys/" + s.b.testKeyID + "/rotate"},
		{http.MethodPost, "/dashboard/test/keys/" + s.b.testKeyID + "/rotate"},
		{http.MethodGet, "/dashboard/test/keys/" + s.b.testKeyID + "/revoke"},
		{http.MethodPost, "/dashboard/test/keys/" + s.b.testKeyID + "/revoke"},
		{http.MethodPost, "/dashboard/live/keys/" + s.a.testKeyID + "/revoke"},
		{http.MethodPost, "/dashboard/test/keys/" + s.a.liveKeyID + "/rotate"},
		{http.MethodPost, "/dashboard/test/keys/not-an-id/revoke"},
		{http.MethodGet, "/dashboard/test/webhook/deliveries/" + bd.ID},
		{http.MethodPost, "/dashboard/test/webhook/deliveries/" + bd.ID + "/resend"},
		{http.MethodGet, "/dashboard/live/webhook/deliveries/" + bd.ID},
	} {
		var form url.Values
		if c.method == http.MethodPost {
			form = url.Values{"csrf": {csrf}, "grace": {"0s"}}
		}
		p := b.do(c.method, c.path, form)
		if p.code != http.StatusNotFound {
			t.Errorf("%s %s: %d, want 404", c.method, c.path, p.code)
		}
		if strings.Contains(p.body, s.b.testKeyID) || strings.Contains(p.body, bd.EventID) {
			t.Errorf("%s %s shows merchant B's data", c.method, c.path)
		}
	}
	for _, kid := range []string{s.b.testKeyID, s.a.testKeyID, s.a.liveKeyID} {
		if k := s.key(kid); k.RevokedAt != nil || k.ExpiresAt != nil {
			t.Errorf("key %s changed: %+v", kid, k)
		}
	}
	ds, err := s.st.Deliveries(ctx, paygate.DeliveryQuery{MerchantID: s.b.id, Mode: paygate.ModeTest})
	if err != nil || len(ds) != 1 {
		t.Errorf("merchant B's deliveries after A's attempts: %d, %v", len(ds), err)
	}
	if p := b.get("/dashboard/test/webhook"); strings.Contains(p.body, bd.ID) || strings.Contains(p.body, "127.0.0.1:9/b") {
		t.Error("A's webhook page shows B's endpoint or delivery")
	}
}

// Submitting one create-key form twice (the browser's reload of the page
// that showed the secret) creates one key: the second submission leads to
// the list, which says so, and no stored answer holds the secret. A form
// without its key creates nothing.
func TestCreateKeyOnce(t *testing.T) {
	t.Parallel()
	s, b := signedInSite(t)
	ctx := context.Background()
	secretKeys := func() int {
		t.Helper()
		keys, err := s.st.APIKeys(ctx, paygate.APIKeyQuery{MerchantID: s.a.id, Mode: paygate.ModeTest})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, k := range keys {
			if k.Type == paygate.KeySecret {
				n++
			}
		}
		return n
	}
	before := secretKeys()

	dev := b.get("/dashboard/test/developers")
	form := url.Values{"csrf": {csrfOf(t, dev)}, "idempotency_key": {formValue(t, dev.body, "idempotency_key")}}
	first := b.do(http.MethodPost, "/dashboard/test/keys", form)
	m := newSecret.FindStringSubmatch(first.body)
	if first.code != http.StatusOK || m == nil {
		t.Fatalf("create key: %d\n%s", first.code, first.body)
	}
	again := b.do(http.MethodPost, "/dashboard/test/keys", form)
	if again.code != http.StatusSeeOther || !strings.HasPrefix(again.location, "/dashboard/test/developers?created=") {
		t.Fatalf("the same form again: %d to %q, want 303 to the developers page", again.code, again.location)
	}
	if n := secretKeys(); n != before+1 {
		t.Fatalf("secret keys after one form submitted twice: %d, want %d", n, before+1)
	}
	if list := b.get(again.location); !strings.Contains(list.body, "This form already created a key") || strings.Contains(list.body, m[1]) {
		t.Fatalf("the page after a second submission should say the key exists, without its secret:\n%s", list.body)
	}
	rec, reserved, err := s.st.ReserveIdempotency(ctx, paygate.IdempotencyReservation{
		MerchantID: s.a.id, Mode: paygate.ModeTest, Key: keyCreateKeyPrefix + form.Get("idempotency_key"),
		Fingerprint: keyCreateFingerprint, Now: s.clock.Now(),
	})
	if err != nil || reserved || rec.State != paygate.IdempotencyComplete || strings.Contains(string(rec.Body), "smtgw_") {
		t.Fatalf("the form's stored answer: %+v reserved %v, %v", rec, reserved, err)
	}

	// A new page is a new form: it creates another key.
	if p := b.post("/dashboard/test/developers", "/dashboard/test/keys", nil); p.code != http.StatusOK || newSecret.FindStringSubmatch(p.body) == nil {
		t.Fatalf("a new form: %d", p.code)
	}
	// Without its key (or with a malformed one) the form creates nothing.
	for _, bad := range []string{"", "not-a-uuid"} {
		dev := b.get("/dashboard/test/developers")
		p := b.do(http.MethodPost, "/dashboard/test/keys", url.Values{"csrf": {csrfOf(t, dev)}, "idempotency_key": {bad}})
		if p.code != http.StatusBadRequest {
			t.Errorf("idempotency_key %q: %d, want 400", bad, p.code)
		}
	}
	if n := secretKeys(); n != before+2 {
		t.Fatalf("secret keys: %d, want %d", n, before+2)
	}
}

// The keys list says when each key was last used, in the viewer's zone,
// and "never" for a key not used yet.
func TestKeysLastUsed(t *testing.T) {
	t.Parallel()
	s, b := signedInSite(t)
	row := func(keyID string) string {
		t.Helper()
		body := b.get("/dashboard/test/developers").body
		i := strings.Index(body, keyID)
		if i < 0 {
			t.Fatalf("key %s not listed", keyID)
		}
		end := strings.Index(body[i:], "</tr>")
		return body[i : i+end]
	}
	if r := row(s.a.testKeyID); !strings.Contains(r, "never") {
		t.Fatalf("an unused key's row: %s", r)
	}
	used := time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)
	if err := s.st.Commit(context.Background(), paygate.Unit{Ops: []paygate.Op{paygate.APIKeyUsage{Used: map[string]time.Time{s.a.testKeyID: used}}}}); err != nil {
		t.Fatal(err)
	}
	r := row(s.a.testKeyID)
	if strings.Contains(r, "never") || !strings.Contains(r, "2030") {
		t.Fatalf("a used key's row should show 2 Jan 2030: %s", r)
	}
}

// TestWebhookPrivateTestGuard is serve --allow-private-test-webhooks=false
// in the dashboard (decisions.md section 15): a local test-mode endpoint is
// refused when set and when pinged, and a delivery's page shows nothing of
// an answer from a private address; without the guard it shows at most
// 1 KiB of it.
func TestWebhookPrivateTestGuard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	answer := strings.Repeat("internal-answer-", 200) // 3200 bytes
	// A delivery with one recorded attempt from a loopback address.
	delivered := func(s *site) paygate.Delivery {
		t.Helper()
		if _, err := testenv.ConfigureEndpoint(ctx, s.st, paygate.WebhookEndpoint{
			MerchantID: s.a.id, Mode: paygate.ModeTest, URL: "http://127.0.0.1:9/hook", SealedSecret: sealedSecret(t, s.a.id, paygate.ModeTest),
			CreatedAt: s.clock.Now(), UpdatedAt: s.clock.Now(),
		}, false, s.clock.Now()); err != nil {
			t.Fatal(err)
		}
		d, err := testenv.CreatePing(ctx, s.st, webhook.PingEvent(s.a.id, paygate.ModeTest, s.clock.Now()), id.New())
		if err != nil {
			t.Fatal(err)
		}
		now := s.clock.Now()
		claims, err := s.st.ClaimDeliveries(ctx, paygate.DeliveryClaim{Now: now, FirstDue: now, Lease: id.New(), LeaseUntil: now.Add(time.Minute), Limit: 1})
		if err != nil || len(claims) != 1 {
			t.Fatalf("claim: %v %v", claims, err)
		}
		private := true
		if err := s.st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.DeliveryFinish{
			DeliveryID: d.ID, Lease: claims[0].Lease, At: now, Status: paygate.DeliverySucceeded,
			Attempt: &paygate.DeliveryAttempt{DeliveryID: d.ID, Number: 1, URL: "http://127.0.0.1:9/hook", StartedAt: now,
				StatusCode: 200, Response: []byte(answer), PrivateAddress: &private},
		}}}); err != nil {
			t.Fatal(err)
		}
		return d
	}

	t.Run("Guarded", func(t *testing.T) {
		t.Parallel()
		s := newSite(t, func(c *Config) { c.Webhooks = webhook.Policy{GuardTestMode: true} })
		b := s.signedIn()
		for _, u := range []string{"http://127.0.0.1:9/hook", "http://localhost:9/hook", "http://192.168.0.10/hook"} {
			if p := b.post("/dashboard/test/webhook", "/dashboard/test/webhook", url.Values{"url": {u}}); p.code != http.StatusBadRequest || !strings.Contains(p.body, "refused") {
				t.Errorf("guarded test endpoint %s: %d", u, p.code)
			}
		}
		if _, err := s.st.WebhookEndpointState(ctx, s.a.id, paygate.ModeTest); !paygate.IsNotFound(err) {
			t.Fatalf("a refused URL was stored: %v", err)
		}
		if p := b.post("/dashboard/test/webhook", "/dashboard/test/webhook", url.Values{"url": {"http://hooks.example.com/x"}}); p.code != http.StatusSeeOther {
			t.Errorf("guarded test endpoint on a public name over http: %d", p.code)
		}
		d := delivered(s) // set before the guard, as it were
		page := b.get("/dashboard/test/webhook/deliveries/" + d.ID)
		if page.code != http.StatusOK || strings.Contains(page.body, "internal-answer") {
			t.Errorf("the delivery page shows the answer of a private address under the guard: %d", page.code)
		}
	})

	t.Run("Allowed", func(t *testing.T) {
		t.Parallel()
		s, b := signedInSite(t)
		d := delivered(s)
		page := b.get("/dashboard/test/webhook/deliveries/" + d.ID)
		if n := strings.Count(page.body, "internal-answer-"); page.code != http.StatusOK || n != 1024/len("internal-answer-") {
			t.Errorf("the delivery page shows %d pieces of the answer, want 1 KiB (%d)", n, 1024/len("internal-answer-"))
		}
	})
}
