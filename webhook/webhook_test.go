package webhook

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The published test vector of the Standard Webhooks reference libraries
// (libraries/*/ tests "sign function works" in
// github.com/standard-webhooks/standard-webhooks).
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorPayload   = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	// A well-formed signature that matches nothing, from the same tests.
	foreignSignature = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
)

func vectorHeaders(sig string) http.Header {
	h := http.Header{}
	h.Set(HeaderID, vectorID)
	h.Set(HeaderTimestamp, strconv.Itoa(vectorTimestamp))
	h.Set(HeaderSignature, sig)
	return h
}

var vectorTime = time.Unix(vectorTimestamp, 0)

func TestSignVector(t *testing.T) {
	t.Parallel()
	for _, secret := range []string{vectorSecret, strings.TrimPrefix(vectorSecret, SecretPrefix)} {
		got, err := Sign(secret, vectorID, vectorTime, []byte(vectorPayload))
		if err != nil {
			t.Fatal(err)
		}
		if got != vectorSignature {
			t.Errorf("Sign with %q = %s, want %s", secret, got, vectorSignature)
		}
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	body := []byte(vectorPayload)
	for _, c := range []struct {
		name   string
		secret string
		header func() http.Header
		body   []byte
		now    time.Time
		want   error
	}{
		{"OK", vectorSecret, func() http.Header { return vectorHeaders(vectorSignature) }, body, vectorTime, nil},
		{"OKBareSecret", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", func() http.Header { return vectorHeaders(vectorSignature) }, body, vectorTime, nil},
		{"OKCanonicalHeaderNames", vectorSecret, func() http.Header {
			return http.Header{"Webhook-Id": {vectorID}, "Webhook-Timestamp": {strconv.Itoa(vectorTimestamp)}, "Webhook-Signature": {vectorSignature}}
		}, body, vectorTime, nil},
		{"OKSeveralSignatures", vectorSecret, func() http.Header {
			return vectorHeaders(strings.Join([]string{foreignSignature, "v2," + vectorSignature[3:], vectorSignature, foreignSignature}, " "))
		}, body, vectorTime, nil},
		{"OKJustWithinTolerance", vectorSecret, func() http.Header { return vectorHeaders(vectorSignature) }, body, vectorTime.Add(Tolerance), nil},
		{"OKClockBehind", vectorSecret, func() http.Header { return vectorHeaders(vectorSignature) }, body, vectorTime.Add(-Tolerance), nil},
		{"ErrTooOld", vectorSecret, func() http.Header { return vectorHeaders(vectorSignature) }, body, vectorTime.Add(Tolerance + time.Second), ErrInvalidTimestamp},
		{"ErrTooNew", vectorSecret, func() http.Header { return vectorHeaders(vectorSignature) }, body, vectorTime.Add(-Tolerance - time.Second), ErrInvalidTimestamp},
		{"ErrTimestampNotANumber", vectorSecret, func() http.Header {
			h := vectorHeaders(vectorSignature)
			h.Set(HeaderTimestamp, "hello")
			return h
		}, body, vectorTime, ErrInvalidTimestamp},
		{"ErrMissingID", vectorSecret, func() http.Header {
			h := vectorHeaders(vectorSignature)
			h.Del(HeaderID)
			return h
		}, body, vectorTime, ErrMissingHeader},
		{"ErrMissingTimestamp", vectorSecret, func() http.Header {
			h := vectorHeaders(vectorSignature)
			h.Del(HeaderTimestamp)
			return h
		}, body, vectorTime, ErrMissingHeader},
		{"ErrMissingSignature", vectorSecret, func() http.Header {
			h := vectorHeaders(vectorSignature)
			h.Del(HeaderSignature)
			return h
		}, body, vectorTime, ErrMissingHeader},
		{"ErrForeignSignature", vectorSecret, func() http.Header { return vectorHeaders(foreignSignature) }, body, vectorTime, ErrNoMatchingSignature},
		{"ErrGarbageSignature", vectorSecret, func() http.Header { return vectorHeaders("v1,dawfeoifkpqwoekfpqoekf") }, body, vectorTime, ErrNoMatchingSignature},
		{"ErrPartialSignature", vectorSecret, func() http.Header { return vectorHeaders(vectorSignature[:8]) }, body, vectorTime, ErrNoMatchingSignature},
		{"ErrEmptySignature", vectorSecret, func() http.Header { return vectorHeaders("v1,") }, body, vectorTime, ErrNoMatchingSignature},
		{"ErrOtherVersionOnly", vectorSecret, func() http.Header { return vectorHeaders("v1a," + vectorSignature[3:]) }, body, vectorTime, ErrNoMatchingSignature},
		{"ErrBodyChanged", vectorSecret, func() http.Header { return vectorHeaders(vectorSignature) }, []byte(`{"test": 2432232315}`), vectorTime, ErrNoMatchingSignature},
		{"ErrIDChanged", vectorSecret, func() http.Header {
			h := vectorHeaders(vectorSignature)
			h.Set(HeaderID, vectorID+"x")
			return h
		}, body, vectorTime, ErrNoMatchingSignature},
		{"ErrTimestampChanged", vectorSecret, func() http.Header {
			h := vectorHeaders(vectorSignature)
			h.Set(HeaderTimestamp, strconv.Itoa(vectorTimestamp+1))
			return h
		}, body, vectorTime, ErrNoMatchingSignature},
		{"ErrWrongSecret", "whsec_" + "c2Vjb25kIHNlY3JldCBvZiB0aGUgdGVzdA==", func() http.Header { return vectorHeaders(vectorSignature) }, body, vectorTime, ErrNoMatchingSignature},
		{"ErrEmptySecret", "", func() http.Header { return vectorHeaders(vectorSignature) }, body, vectorTime, ErrInvalidSecret},
		{"ErrSecretNotBase64", "whsec_not base64!", func() http.Header { return vectorHeaders(vectorSignature) }, body, vectorTime, ErrInvalidSecret},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := verifyAt(c.secret, c.header(), c.body, c.now)
			if c.want == nil && err != nil {
				t.Fatalf("Verify: %v, want success", err)
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("Verify: %v, want %v", err, c.want)
			}
		})
	}
}

// TestSignVerifyRoundTrip checks Verify against Sign at the current time,
// through the public entry point, including a rotation's two signatures.
func TestSignVerifyRoundTrip(t *testing.T) {
	t.Parallel()
	const oldSecret, newSecret = "whsec_b2xkIHNlY3JldCBvbmUgdHdvIHRocmVlIGZvdXI=", "whsec_bmV3IHNlY3JldCBmaXZlIHNpeCBzZXZlbiBlaWdodA=="
	body := []byte(`{"id":"evt","event":"payment.captured"}`)
	now := time.Now()
	sigOld, err := Sign(oldSecret, "evt_1", now, body)
	if err != nil {
		t.Fatal(err)
	}
	sigNew, err := Sign(newSecret, "evt_1", now, body)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(HeaderID, "evt_1")
	h.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(HeaderSignature, sigNew+" "+sigOld)
	for _, s := range []string{oldSecret, newSecret} {
		if err := Verify(s, h, body); err != nil {
			t.Errorf("Verify with %s: %v", s[:10], err)
		}
	}
	if err := Verify("whsec_dGhpcmQgc2VjcmV0IG5pbmUgdGVuIGVsZXZlbg==", h, body); !errors.Is(err, ErrNoMatchingSignature) {
		t.Errorf("Verify with a third secret: %v, want ErrNoMatchingSignature", err)
	}
	if _, err := Sign("whsec_%%%", "evt_1", now, body); !errors.Is(err, ErrInvalidSecret) {
		t.Errorf("Sign with a bad secret: %v, want ErrInvalidSecret", err)
	}
}
