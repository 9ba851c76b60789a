package auth

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

func TestGenerate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		mode   paygate.Mode
		typ    paygate.KeyType
		prefix string
	}{
		{paygate.ModeTest, paygate.KeySecret, "smtgw_sk_test_"},
		{paygate.ModeLive, paygate.KeySecret, "smtgw_sk_live_"},
		{paygate.ModeTest, paygate.KeyPublic, "smtgw_pk_test_"},
		{paygate.ModeLive, paygate.KeyPublic, "smtgw_pk_live_"},
	}
	for _, c := range cases {
		t.Run(c.prefix, func(t *testing.T) {
			t.Parallel()
			secret, hash, hint, err := Generate(c.mode, c.typ)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(secret, c.prefix) {
				t.Fatalf("secret %q lacks prefix %q", secret, c.prefix)
			}
			tail := secret[len(c.prefix):]
			if len(tail) != RandomLength {
				t.Fatalf("tail has %d characters, want %d", len(tail), RandomLength)
			}
			for i := 0; i < len(tail); i++ {
				if !strings.ContainsRune(base62, rune(tail[i])) {
					t.Fatalf("tail %q has non-base62 %q", tail, tail[i])
				}
			}
			want := sha256.Sum256([]byte(secret))
			if !bytes.Equal(hash, want[:]) {
				t.Fatalf("hash is not SHA-256 of the key")
			}
			if wantHint := c.prefix + "…" + secret[len(secret)-4:]; hint != wantHint {
				t.Fatalf("hint %q, want %q", hint, wantHint)
			}
			mode, typ, ok := Parse(secret)
			if !ok || mode != c.mode || typ != c.typ {
				t.Fatalf("Parse(generated) = %q %q %v", mode, typ, ok)
			}
		})
	}
}

func TestGenerateUnique(t *testing.T) {
	t.Parallel()
	seen := make(map[string]bool)
	for range 1000 {
		s, _, _, err := Generate(paygate.ModeTest, paygate.KeySecret)
		if err != nil {
			t.Fatal(err)
		}
		if seen[s] {
			t.Fatalf("duplicate key after %d", len(seen))
		}
		seen[s] = true
	}
}

func TestGenerateErrInvalidModeOrType(t *testing.T) {
	t.Parallel()
	if _, _, _, err := Generate("staging", paygate.KeySecret); err == nil {
		t.Fatal("unknown mode accepted")
	}
	if _, _, _, err := Generate(paygate.ModeTest, "restricted"); err == nil {
		t.Fatal("unknown type accepted")
	}
}

func TestNewKey(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	secret, key, err := NewKey("key_1", "m_1", paygate.ModeLive, paygate.KeySecret, now)
	if err != nil {
		t.Fatal(err)
	}
	if key.ID != "key_1" || key.MerchantID != "m_1" || key.Mode != paygate.ModeLive ||
		key.Type != paygate.KeySecret || !key.CreatedAt.Equal(now) ||
		key.ExpiresAt != nil || key.RevokedAt != nil {
		t.Fatalf("unexpected key %+v", key)
	}
	if !bytes.Equal(key.Hash, Hash(secret)) {
		t.Fatal("stored hash does not match the secret")
	}
	if strings.Contains(key.Hint, secret[len("smtgw_sk_live_"):len(secret)-4]) {
		t.Fatal("hint reveals the secret")
	}
	if !strings.HasPrefix(key.Hint, "smtgw_sk_live_…") || !strings.HasSuffix(key.Hint, secret[len(secret)-4:]) {
		t.Fatalf("hint %q", key.Hint)
	}
}

// byteReader serves fixed bytes, then an error.
type byteReader struct{ b []byte }

func (r *byteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// TestRandomBase62RejectsBiasedBytes checks the rejection sampling: bytes
// 248..255 would map onto the first eight characters under a plain modulo,
// so they must be skipped, not folded.
func TestRandomBase62RejectsBiasedBytes(t *testing.T) {
	t.Parallel()
	src := make([]byte, 128)
	for i := range src[:64] {
		src[i] = byte(248 + i%8) // all rejected
	}
	for i := range src[64:] {
		src[64+i] = byte(i) // 0..63: 0..61 map directly, 62 and 63 wrap to 0 and 1
	}
	got, err := randomBase62(&byteReader{b: src}, 40)
	if err != nil {
		t.Fatal(err)
	}
	if want := base62[:40]; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestRandomBase62ErrSourceFails(t *testing.T) {
	t.Parallel()
	src := bytes.Repeat([]byte{255}, 64) // one buffer, all rejected, then EOF
	if _, err := randomBase62(&byteReader{b: src}, 40); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want the source's error", err)
	}
}

// TestRandomBase62Uniform is a coarse check that no character is favoured:
// with 62,000 draws each character is expected 1,000 times; a modulo bias
// would put the first eight near 1,290.
func TestRandomBase62Uniform(t *testing.T) {
	t.Parallel()
	counts := make(map[byte]int)
	for range 1550 {
		s, err := randomBase62(randReader, 40)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(s); i++ {
			counts[s[i]]++
		}
	}
	if len(counts) != 62 {
		t.Fatalf("%d distinct characters, want 62", len(counts))
	}
	for c, n := range counts {
		// 1000 ± 6 standard deviations (≈ 31.4 each).
		if n < 810 || n > 1190 {
			t.Errorf("character %q drawn %d times, expected about 1000", c, n)
		}
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	tail32 := strings.Repeat("aZ09", 8)
	cases := []struct {
		name string
		in   string
		mode paygate.Mode
		typ  paygate.KeyType
		ok   bool
	}{
		{"OKSecretTest", "smtgw_sk_test_" + tail32, paygate.ModeTest, paygate.KeySecret, true},
		{"OKSecretLive", "smtgw_sk_live_" + tail32, paygate.ModeLive, paygate.KeySecret, true},
		{"OKPublicTest", "smtgw_pk_test_" + tail32, paygate.ModeTest, paygate.KeyPublic, true},
		{"OKPublicLive", "smtgw_pk_live_" + tail32, paygate.ModeLive, paygate.KeyPublic, true},
		{"OKMaxLength", "smtgw_sk_test_" + strings.Repeat("a", MaxKeyLength-14), paygate.ModeTest, paygate.KeySecret, true},
		{"ErrEmpty", "", "", "", false},
		{"ErrPrefixOnly", "smtgw_sk_test_", "", "", false},
		{"ErrTooShort", "smtgw_sk_test_" + tail32[:31], "", "", false},
		{"ErrTooLong", "smtgw_sk_test_" + strings.Repeat("a", MaxKeyLength-13), "", "", false},
		{"ErrUnknownPrefix", "smtgw_rk_test_" + tail32, "", "", false},
		{"ErrUpperPrefix", "SMTGW_SK_TEST_" + tail32, "", "", false},
		{"ErrOtherMode", "smtgw_sk_prod_" + tail32, "", "", false},
		{"ErrNotBase62", "smtgw_sk_test_" + tail32 + "-", "", "", false},
		{"ErrUnderscore", "smtgw_sk_test_" + tail32[:16] + "_" + tail32[16:], "", "", false},
		{"ErrSpace", " smtgw_sk_test_" + tail32, "", "", false},
		{"ErrTrailingSpace", "smtgw_sk_test_" + tail32 + " ", "", "", false},
		{"ErrNonASCII", "smtgw_sk_test_" + tail32 + "é", "", "", false},
		{"ErrBearer", "Bearer smtgw_sk_test_" + tail32, "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			mode, typ, ok := Parse(c.in)
			if ok != c.ok || mode != c.mode || typ != c.typ {
				t.Fatalf("Parse = %q %q %v, want %q %q %v", mode, typ, ok, c.mode, c.typ, c.ok)
			}
		})
	}
}

func BenchmarkGenerate(b *testing.B) {
	for b.Loop() {
		if _, _, _, err := Generate(paygate.ModeTest, paygate.KeySecret); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHash(b *testing.B) {
	secret, _, _, err := Generate(paygate.ModeLive, paygate.KeySecret)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = Hash(secret)
	}
}

func BenchmarkParseAndHash(b *testing.B) {
	secret, _, _, err := Generate(paygate.ModeLive, paygate.KeySecret)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := Parse(secret); !ok {
			b.Fatal("parse failed")
		}
		_ = Hash(secret)
	}
}
