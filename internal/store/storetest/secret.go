package storetest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/testenv"
	"github.com/paygate/paygate/internal/vault"
	"github.com/paygate/paygate/internal/webhook"
	swh "github.com/paygate/paygate/webhook"
)

// sealed stands for a sealed secret in cases where the store only keeps
// bytes it cannot read: distinct per secret, and not the secret.
func sealed(secret string) []byte {
	return append([]byte("sealed\x00"), []byte(base64.RawURLEncoding.EncodeToString([]byte(secret)))...)
}

// webhookSecretCases: the store keeps only sealed secrets, and replaces
// them only when unchanged.
func webhookSecretCases() []testCase {
	return []testCase{
		{"PlainSecretRefused", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			e := paygate.WebhookEndpoint{
				MerchantID: f.merchant.ID, Mode: paygate.ModeTest, URL: "https://a.example/hooks",
				Secret: "whsec_cGxhaW4=", SealedSecret: sealed("whsec_cGxhaW4="), CreatedAt: base, UpdatedAt: base,
			}
			if _, err := testenv.ConfigureEndpoint(ctx(t), s, e, false, time.Time{}); err == nil {
				t.Error("WebhookEndpointConfig stored a plain secret")
			}
			if _, err := setEndpoint(t, s, e, false); err == nil {
				t.Error("setting an endpoint stored a plain secret")
			}
			e.Secret, e.SealedSecret = "", nil
			if _, err := testenv.ConfigureEndpoint(ctx(t), s, e, false, time.Time{}); err == nil {
				t.Error("WebhookEndpointConfig stored an endpoint without a secret")
			}
			_, err := s.WebhookEndpointState(ctx(t), f.merchant.ID, paygate.ModeTest)
			wantNotFound(t, err)
		}},
		{"ListAndReplace", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			f.endpoint(t, paygate.ModeTest)
			f.endpoint(t, paygate.ModeLive)
			other.endpoint(t, paygate.ModeTest)
			all, err := s.WebhookSecrets(ctx(t), "", "", 0)
			must(t, err)
			if len(all) != 3 {
				t.Fatalf("WebhookSecrets listed %d endpoints, want 3", len(all))
			}
			for i, w := range all {
				if w.Secret != "" || w.PreviousSecret != "" || len(w.SealedSecret) == 0 || len(w.SealedPreviousSecret) != 0 {
					t.Errorf("endpoint %d: %+v", i, w)
				}
				if i > 0 && (all[i-1].MerchantID > w.MerchantID || all[i-1].MerchantID == w.MerchantID && all[i-1].Mode >= w.Mode) {
					t.Errorf("not in (merchant, mode) order: %+v", all)
				}
			}
			// Paging: after the first, the other two.
			page, err := s.WebhookSecrets(ctx(t), all[0].MerchantID, all[0].Mode, 1)
			must(t, err)
			equal(t, "second page", all[1:2], page)

			w := all[0]
			to := w
			to.SealedSecret, to.SealedPreviousSecret = sealed("whsec_bmV3"), sealed("whsec_b2xk")
			must(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{paygate.WebhookSecretsReplacement{From: w, To: to}}}))
			got, err := s.WebhookEndpointState(ctx(t), w.MerchantID, w.Mode)
			must(t, err)
			equal(t, "replaced secret", to.SealedSecret, got.SealedSecret)
			equal(t, "replaced previous secret", to.SealedPreviousSecret, got.SealedPreviousSecret)
			// A stale read (another node replaced it first) conflicts and
			// changes nothing.
			stale := to
			stale.SealedSecret = sealed("whsec_c3RhbGU=")
			wantIs(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{paygate.WebhookSecretsReplacement{From: w, To: stale}}}), paygate.ErrStateConflict)
			got, err = s.WebhookEndpointState(ctx(t), w.MerchantID, w.Mode)
			must(t, err)
			equal(t, "secret after a stale replace", to.SealedSecret, got.SealedSecret)
			gone := w
			gone.MerchantID = newID()
			wantIs(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{paygate.WebhookSecretsReplacement{From: gone, To: to}}}), paygate.ErrStateConflict)
		}},
		{"KeyIDs", func(t *testing.T, s paygate.Store) {
			ids, err := webhook.SecretKeyIDs(ctx(t), s)
			must(t, err)
			equal(t, "key ids of an empty store", map[string]int{}, ids)
			k1, err := vault.New(randomBytes(vault.KeySize))
			must(t, err)
			k2, err := vault.New(randomBytes(vault.KeySize))
			must(t, err)
			set := func(f fixture, mode paygate.Mode, v *vault.Vault, rotate bool) {
				t.Helper()
				sl, err := webhook.SealSecret(v, f.merchant.ID, mode, webhook.NewSecret())
				must(t, err)
				_, err = testenv.ConfigureEndpoint(ctx(t), s, paygate.WebhookEndpoint{
					MerchantID: f.merchant.ID, Mode: mode, URL: "https://a.example/hooks",
					SealedSecret: sl, CreatedAt: base, UpdatedAt: base,
				}, rotate, at(24*time.Hour))
				must(t, err)
			}
			a, b := newMerchant(t, s, base), newMerchant(t, s, base)
			set(a, paygate.ModeTest, k1, false)
			set(a, paygate.ModeLive, k1, false)
			set(b, paygate.ModeTest, k1, false)
			set(b, paygate.ModeTest, k2, true) // current under k2, previous under k1
			ids, err = webhook.SecretKeyIDs(ctx(t), s)
			must(t, err)
			equal(t, "key ids", map[string]int{k1.PrimaryKeyID(): 3, k2.PrimaryKeyID(): 1}, ids)
			// What is not a sealed secret (the stand-in of other cases) is
			// not counted.
			newMerchant(t, s, base).endpoint(t, paygate.ModeTest)
			ids, err = webhook.SecretKeyIDs(ctx(t), s)
			must(t, err)
			equal(t, "key ids beside a foreign seal", map[string]int{k1.PrimaryKeyID(): 3, k2.PrimaryKeyID(): 1}, ids)
		}},
	}
}

// SecretRows is what ExerciseSecretsAtRest needs beyond paygate.Store: a
// look at the raw rows of the endpoints' table, and a row written as
// versions before sealed secrets wrote it.
type SecretRows struct {
	// Values returns every value of every column of every webhook
	// endpoint row, as text or bytes.
	Values func(t *testing.T, s paygate.Store) [][]byte
	// WriteLegacy inserts the endpoint of (merchant, mode) as versions
	// before migration 00009 did: the plain secret (and previous secret
	// until previousUntil, when not empty) and no sealed column.
	WriteLegacy func(t *testing.T, s paygate.Store, merchantID string, mode paygate.Mode, url, secret, previous string, previousUntil time.Time)
}

// ExerciseSecretsAtRest checks, on the engine's raw rows, that webhook
// signing secrets are encrypted at rest (decisions.md section 15): after
// set, rotation, conversion of rows written by earlier versions and rewrap,
// no column holds a plain secret, and the secrets still sign.
func ExerciseSecretsAtRest(t *testing.T, newStore func(t *testing.T) paygate.Store, rows SecretRows) {
	newVault := func(t *testing.T, keys ...[]byte) *vault.Vault {
		t.Helper()
		v, err := vault.New(keys...)
		must(t, err)
		return v
	}
	// noPlain fails when any column of any row holds one of the secrets,
	// as text (whole or its base64 part) or as the decoded key.
	noPlain := func(t *testing.T, s paygate.Store, secrets ...string) {
		t.Helper()
		for _, v := range rows.Values(t, s) {
			for _, sec := range secrets {
				b64 := strings.TrimPrefix(sec, swh.SecretPrefix)
				raw, _ := base64.StdEncoding.DecodeString(b64)
				if bytes.Contains(v, []byte(sec)) || bytes.Contains(v, []byte(b64)) || len(raw) > 0 && bytes.Contains(v, raw) {
					t.Fatalf("a column holds the plain secret %.10s…", sec)
				}
			}
		}
	}
	openState := func(t *testing.T, s paygate.Store, v *vault.Vault, merchantID string, mode paygate.Mode) paygate.WebhookEndpointState {
		t.Helper()
		ep, err := s.WebhookEndpointState(ctx(t), merchantID, mode)
		must(t, err)
		must(t, webhook.OpenSecrets(v, &ep))
		return ep
	}
	// signs checks that secret (as opened) signs what the receiver
	// holding want verifies.
	signs := func(t *testing.T, secret, want string) {
		t.Helper()
		body := []byte(`{"id":"evt","event":"payment.captured"}`)
		now := time.Now()
		sig, err := swh.Sign(secret, "evt_1", now, body)
		must(t, err)
		h := http.Header{}
		h.Set(swh.HeaderID, "evt_1")
		h.Set(swh.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
		h.Set(swh.HeaderSignature, sig)
		if err := swh.Verify(want, h, body); err != nil {
			t.Fatalf("the opened secret does not sign for the receiver's secret: %v", err)
		}
	}
	k1, k2 := randomBytes(vault.KeySize), randomBytes(vault.KeySize)

	t.Run("NoColumnHoldsThePlainSecret", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		v := newVault(t, k1)
		f := newMerchant(t, s, base)
		first, second := webhook.NewSecret(), webhook.NewSecret()
		for i, sec := range []string{first, second} {
			sl, err := webhook.SealSecret(v, f.merchant.ID, paygate.ModeLive, sec)
			must(t, err)
			_, err = testenv.ConfigureEndpoint(ctx(t), s, paygate.WebhookEndpoint{
				MerchantID: f.merchant.ID, Mode: paygate.ModeLive, URL: "https://a.example/hooks",
				SealedSecret: sl, CreatedAt: at(time.Duration(i) * time.Hour), UpdatedAt: at(time.Duration(i) * time.Hour),
			}, i > 0, at(25*time.Hour))
			must(t, err)
		}
		noPlain(t, s, first, second)
		ep := openState(t, s, v, f.merchant.ID, paygate.ModeLive)
		if ep.Secret != second || ep.PreviousSecret != first {
			t.Fatal("the opened secrets are not the ones set")
		}
		// Every read gives the sealed secret only.
		plain, err := endpointOf(t, s, f.merchant.ID, paygate.ModeLive)
		must(t, err)
		if plain.Secret != "" || len(plain.SealedSecret) == 0 {
			t.Errorf("the endpoint read has a plain secret, or no sealed one")
		}
	})

	t.Run("UpgradeConvertsPlainSecrets", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		v := newVault(t, k1)
		var merchants []fixture
		type legacy struct{ secret, previous string }
		old := map[string]legacy{}
		for range 3 {
			f := newMerchant(t, s, base)
			merchants = append(merchants, f)
			l := legacy{webhook.NewSecret(), webhook.NewSecret()}
			old[f.merchant.ID] = l
			rows.WriteLegacy(t, s, f.merchant.ID, paygate.ModeTest, "https://a.example/hooks", l.secret, l.previous, time.Now().Add(time.Hour))
		}
		// Before the conversion, readers take the plain secret as it is.
		f0 := merchants[0]
		ep := openState(t, s, v, f0.merchant.ID, paygate.ModeTest)
		if ep.Secret != old[f0.merchant.ID].secret || ep.PreviousSecret != old[f0.merchant.ID].previous {
			t.Fatal("an unconverted row does not read its plain secrets")
		}
		// Two nodes starting together: each row converted exactly once.
		var wg sync.WaitGroup
		counts, errs := make([]int, 2), make([]error, 2)
		for i := range counts {
			wg.Go(func() { counts[i], errs[i] = webhook.SealStoredSecrets(ctx(t), s, v) })
		}
		wg.Wait()
		must(t, errors.Join(errs...))
		if counts[0]+counts[1] != len(merchants) {
			t.Errorf("converted %v endpoints, want %d in all", counts, len(merchants))
		}
		var secrets []string
		for _, l := range old {
			secrets = append(secrets, l.secret, l.previous)
		}
		noPlain(t, s, secrets...)
		for _, f := range merchants {
			ep := openState(t, s, v, f.merchant.ID, paygate.ModeTest)
			l := old[f.merchant.ID]
			signs(t, ep.Secret, l.secret)
			signs(t, ep.PreviousSecret, l.previous)
			if got := ep.Secrets(time.Now()); len(got) != 2 {
				t.Errorf("signing secrets after the conversion: %d, want 2", len(got))
			}
		}
		again, err := webhook.SealStoredSecrets(ctx(t), s, v)
		must(t, err)
		if again != 0 {
			t.Errorf("a second conversion converted %d endpoints", again)
		}
	})

	t.Run("RotationNeverCopiesAPlainSecret", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		v := newVault(t, k1)
		f := newMerchant(t, s, base)
		current, previous := webhook.NewSecret(), webhook.NewSecret()
		rows.WriteLegacy(t, s, f.merchant.ID, paygate.ModeTest, "https://a.example/hooks", current, previous, time.Now().Add(time.Hour))
		next := webhook.NewSecret()
		sl, err := webhook.SealSecret(v, f.merchant.ID, paygate.ModeTest, next)
		must(t, err)
		e := paygate.WebhookEndpoint{
			MerchantID: f.merchant.ID, Mode: paygate.ModeTest, URL: "https://a.example/new",
			SealedSecret: sl, CreatedAt: at(time.Hour), UpdatedAt: at(time.Hour),
		}
		// A rotation of the unconverted row is refused, and changes nothing.
		_, err = testenv.ConfigureEndpoint(ctx(t), s, e, true, time.Now().Add(24*time.Hour))
		wantIs(t, err, paygate.ErrStateConflict)
		got, err := s.WebhookEndpointState(ctx(t), f.merchant.ID, paygate.ModeTest)
		must(t, err)
		if got.URL != "https://a.example/hooks" || got.Secret != current || got.PreviousSecret != previous || len(got.SealedSecret) != 0 {
			t.Fatalf("the refused rotation changed the row: url %s, %d sealed bytes", got.URL, len(got.SealedSecret))
		}
		// Setting it again without a rotation copies nothing either.
		_, err = testenv.ConfigureEndpoint(ctx(t), s, e, false, time.Time{})
		must(t, err)
		got, err = s.WebhookEndpointState(ctx(t), f.merchant.ID, paygate.ModeTest)
		must(t, err)
		if got.Secret != current || got.PreviousSecret != previous {
			t.Fatal("setting the unconverted row again lost its secrets")
		}
		// Converted, the rotation goes through: the old current secret is
		// the previous one, sealed; no column holds any of them.
		n, err := webhook.SealStoredSecrets(ctx(t), s, v)
		must(t, err)
		if n != 1 {
			t.Fatalf("converted %d endpoints, want 1", n)
		}
		_, err = testenv.ConfigureEndpoint(ctx(t), s, e, true, time.Now().Add(24*time.Hour))
		must(t, err)
		noPlain(t, s, current, previous, next)
		ep := openState(t, s, v, f.merchant.ID, paygate.ModeTest)
		if ep.Secret != next || ep.PreviousSecret != current {
			t.Fatal("after the rotation: not the new secret and the old current one")
		}
	})

	t.Run("RewrapMovesSecrets", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		f := newMerchant(t, s, base)
		older := newVault(t, k1)
		secret := webhook.NewSecret()
		sl, err := webhook.SealSecret(older, f.merchant.ID, paygate.ModeTest, secret)
		must(t, err)
		_, err = testenv.ConfigureEndpoint(ctx(t), s, paygate.WebhookEndpoint{
			MerchantID: f.merchant.ID, Mode: paygate.ModeTest, URL: "https://a.example/hooks",
			SealedSecret: sl, CreatedAt: base, UpdatedAt: base,
		}, false, time.Time{})
		must(t, err)
		rotated := newVault(t, k2, k1)
		n, err := webhook.RewrapSecrets(ctx(t), s, rotated)
		must(t, err)
		if n != 1 {
			t.Fatalf("rewrapped %d endpoints, want 1", n)
		}
		ep, err := s.WebhookEndpointState(ctx(t), f.merchant.ID, paygate.ModeTest)
		must(t, err)
		if id, _ := vault.SecretKeyID(ep.SealedSecret); id != rotated.PrimaryKeyID() {
			t.Fatalf("sealed under %s after the rewrap, want %s", id, rotated.PrimaryKeyID())
		}
		// The new key alone opens it now; the old key alone no longer does.
		if got := openState(t, s, newVault(t, k2), f.merchant.ID, paygate.ModeTest); got.Secret != secret {
			t.Fatal("the rewrapped secret is not the secret")
		}
		if err := webhook.OpenSecrets(older, &ep); !errors.Is(err, vault.ErrUnknownKey) {
			t.Errorf("the old key opened the rewrapped secret: %v", err)
		}
		noPlain(t, s, secret)
		if n, err := webhook.RewrapSecrets(ctx(t), s, rotated); err != nil || n != 0 {
			t.Errorf("a second rewrap: %d, %v", n, err)
		}
	})

	t.Run("MovedToAnotherMerchantFailsToOpen", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		v := newVault(t, k1)
		a, b := newMerchant(t, s, base), newMerchant(t, s, base)
		sl, err := webhook.SealSecret(v, a.merchant.ID, paygate.ModeTest, webhook.NewSecret())
		must(t, err)
		for _, f := range []fixture{a, b} {
			own, err := webhook.SealSecret(v, f.merchant.ID, paygate.ModeTest, webhook.NewSecret())
			must(t, err)
			_, err = testenv.ConfigureEndpoint(ctx(t), s, paygate.WebhookEndpoint{
				MerchantID: f.merchant.ID, Mode: paygate.ModeTest, URL: "https://a.example/hooks",
				SealedSecret: own, CreatedAt: base, UpdatedAt: base,
			}, false, time.Time{})
			must(t, err)
		}
		// A database writer copies a's sealed secret into b's row.
		page, err := s.WebhookSecrets(ctx(t), b.merchant.ID, "", 1)
		must(t, err)
		to := page[0]
		to.SealedSecret = sl
		must(t, s.Commit(ctx(t), paygate.Unit{Ops: []paygate.Op{paygate.WebhookSecretsReplacement{From: page[0], To: to}}}))
		ep, err := s.WebhookEndpointState(ctx(t), b.merchant.ID, paygate.ModeTest)
		must(t, err)
		if err := webhook.OpenSecrets(v, &ep); !errors.Is(err, vault.ErrTampered) || ep.Secret != "" {
			t.Fatalf("a secret moved to another merchant opened: %v", err)
		}
		// Another mode of the same merchant: the same.
		ep.MerchantID, ep.Mode, ep.SealedSecret = a.merchant.ID, paygate.ModeLive, sl
		if err := webhook.OpenSecrets(v, &ep); !errors.Is(err, vault.ErrTampered) {
			t.Fatalf("a secret moved to another mode opened: %v", err)
		}
	})
}
