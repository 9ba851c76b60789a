package webhook

import (
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/vault"
	swh "github.com/paygate/paygate/webhook"
)

func testVault(t *testing.T) *vault.Vault {
	t.Helper()
	k := make([]byte, vault.KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	v, err := vault.New(k)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// sealedClaim is claimed with the endpoint's secrets sealed by v, as the
// store holds them.
func sealedClaim(t *testing.T, v *vault.Vault, url, secret, previous string) paygate.ClaimedDelivery {
	t.Helper()
	c := claimed(url, paygate.ModeTest, 1, "")
	ep := c.Endpoint
	var err error
	if ep.SealedSecret, err = SealSecret(v, ep.MerchantID, ep.Mode, secret); err != nil {
		t.Fatal(err)
	}
	if previous != "" {
		if ep.SealedPreviousSecret, err = SealSecret(v, ep.MerchantID, ep.Mode, previous); err != nil {
			t.Fatal(err)
		}
		until := paygate.SystemClock{}.Now().Add(paygate.WebhookSecretOverlap)
		ep.PreviousSecretExpiresAt = &until
	}
	return c
}

func TestDispatcherSignsWithTheSealedSecrets(t *testing.T) {
	t.Parallel()
	v := testVault(t)
	rcv := newReceiver(t, answer(http.StatusNoContent, ""))
	st, _ := dispatch(t, Config{Vault: v}, sealedClaim(t, v, rcv.srv.URL, secretA, secretB))
	if rcv.count() != 1 {
		t.Fatalf("receiver got %d requests, want 1", rcv.count())
	}
	req, body := rcv.request(0)
	for _, s := range []string{secretA, secretB} {
		if err := swh.Verify(s, req.Header, body); err != nil {
			t.Errorf("the signature does not verify with one of the secrets: %v", err)
		}
	}
	if fin := st.only(t); fin.Status != paygate.DeliverySucceeded {
		t.Errorf("finish %+v, want succeeded", fin)
	}
}

// A secret the vault cannot open never signs: the attempt fails without a
// request, is retried on the schedule, and the log names the endpoint (not
// the secret).
func TestDispatcherSecretThatDoesNotOpen(t *testing.T) {
	t.Parallel()
	sealer := testVault(t)
	for name, v := range map[string]*vault.Vault{"WrongKey": testVault(t), "NoVault": nil} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rcv := newReceiver(t, answer(http.StatusNoContent, ""))
			c := sealedClaim(t, sealer, rcv.srv.URL, secretA, "")
			st, logs := dispatch(t, Config{Vault: v, Schedule: Schedule{0, 0}}, c)
			if rcv.count() != 0 {
				t.Fatalf("the receiver got %d requests signed with a secret that did not open", rcv.count())
			}
			fin := st.only(t)
			if fin.Status != paygate.DeliveryPending || fin.Attempt == nil || !strings.Contains(fin.Error, "signing secret cannot be opened") {
				t.Errorf("finish %+v, want a failed attempt to retry", fin)
			}
			log := logs.String()
			if !strings.Contains(log, `"level":"ERROR"`) || !strings.Contains(log, c.Endpoint.MerchantID) ||
				!strings.Contains(log, "signing secret cannot be opened") {
				t.Errorf("log does not name the endpoint's failure: %s", log)
			}
			if strings.Contains(log, strings.TrimPrefix(secretA, swh.SecretPrefix)) {
				t.Error("the log holds the secret")
			}
		})
	}
}

func TestOpenSecrets(t *testing.T) {
	t.Parallel()
	v := testVault(t)
	c := sealedClaim(t, v, "https://a.example", secretA, secretB)
	t.Run("OK", func(t *testing.T) {
		ep := *c.Endpoint
		if err := OpenSecrets(v, &ep); err != nil || ep.Secret != secretA || ep.PreviousSecret != secretB {
			t.Fatalf("OpenSecrets: %v", err)
		}
	})
	t.Run("PlainRowNotConvertedYet", func(t *testing.T) {
		ep := paygate.WebhookEndpointState{WebhookEndpoint: paygate.WebhookEndpoint{MerchantID: "m", Mode: paygate.ModeTest, Secret: secretA}}
		if err := OpenSecrets(v, &ep); err != nil || ep.Secret != secretA {
			t.Fatalf("OpenSecrets of a plain row: %v", err)
		}
	})
	t.Run("ErrMovedToAnotherMerchant", func(t *testing.T) {
		ep := *c.Endpoint
		ep.MerchantID = "another-merchant"
		if err := OpenSecrets(v, &ep); err == nil || ep.Secret != "" || ep.PreviousSecret != "" {
			t.Fatalf("a moved secret opened: %v", err)
		}
	})
	t.Run("ErrUnknownKeyNamesTheSecretAndTheKey", func(t *testing.T) {
		ep := *c.Endpoint
		err := OpenSecrets(testVault(t), &ep)
		want := "the current webhook signing secret of the test endpoint of merchant " + ep.MerchantID +
			" is sealed under master key " + v.PrimaryKeyID() + ", which is not configured"
		if !errors.Is(err, vault.ErrUnknownKey) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "card") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("OpenSecrets under another key: %q, want it to say %q", err, want)
		}
		if ep.Secret != "" || ep.PreviousSecret != "" {
			t.Fatal("a secret is left after the error")
		}
	})
	t.Run("ErrNoSecret", func(t *testing.T) {
		ep := paygate.WebhookEndpointState{WebhookEndpoint: paygate.WebhookEndpoint{MerchantID: "m", Mode: paygate.ModeTest}}
		if err := OpenSecrets(v, &ep); err == nil {
			t.Fatal("an endpoint without a secret opened")
		}
	})
}
