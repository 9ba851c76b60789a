package payment

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/card"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/vault"
)

// Single-use card tokens (issue 24, decisions §19). The card fields' frame
// posts a card with the public key (Tokenize); the merchant's server then
// pays with the token once (Create with MethodToken). Between the two the
// number and the CVV exist only sealed together by the vault, bound to
// the token's id, merchant and mode; the payment that uses the token erases
// them in the unit that stores it, before any provider sees the card.

// purposeCardToken is the purpose of a token's seal; the token's id is
// bound into it (tokenContext), so that a sealed card copied to another
// token, merchant or mode does not open.
const purposeCardToken = "card-token"

// tokenContext is the vault context of a token's seal.
func tokenContext(id, merchantID string, mode paygate.Mode) vault.SecretContext {
	return vault.SecretContext{Purpose: purposeCardToken + ":" + id, MerchantID: merchantID, Mode: mode}
}

// A token as the merchant holds it is TokenPrefix, the stored id's 32 hex
// digits, then 32 hex digits of a 128-bit secret that is never stored, not
// even hashed. The card is sealed under a key derived from the vault's
// master key and that secret (vault.SealSecretKeyed): once the payment or
// the sweeper erased the row, what is left of it in the database's dead
// tuples, WAL, backups or free pages does not open, even with the master
// key (crypto-shredding). Lookups use the id; a wrong secret is refused
// as an unknown token.
const (
	tokenIDHex     = 32
	tokenSecretHex = 32
)

// newToken returns a token's stored id and the token the merchant gets.
func newToken() (id, token string, secret []byte) {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	secret = make([]byte, tokenSecretHex/2)
	_, _ = rand.Read(secret)
	id = paygate.TokenPrefix + hex.EncodeToString(b[:])
	return id, id + hex.EncodeToString(secret), secret
}

// ValidTokenID reports whether s has the form of a token as the merchant
// holds it (TokenPrefix and 64 lower-case hex digits).
func ValidTokenID(s string) bool {
	_, _, ok := splitToken(s)
	return ok
}

// splitToken returns the stored id and the secret of a token.
func splitToken(s string) (id string, secret []byte, ok bool) {
	rest, found := strings.CutPrefix(s, paygate.TokenPrefix)
	if !found || len(rest) != tokenIDHex+tokenSecretHex {
		return "", nil, false
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", nil, false
		}
	}
	secret, err := hex.DecodeString(rest[tokenIDHex:])
	if err != nil {
		return "", nil, false
	}
	return paygate.TokenPrefix + rest[:tokenIDHex], secret, true
}

// sealedCardSeparator separates the number and the CVV in a token's
// plaintext: both are digits only.
const sealedCardSeparator = '|'

// Tokenize stores a token of the card (returned with the token string the
// merchant is given: its id and its secret, which only that string holds) (validated, with its CVV) for the
// merchant and mode of the public key, and returns it. The token's insert
// re-checks the key (decisions §4): one revoked since its authentication
// is UNAUTHORIZED. The client's address is kept with the token: the
// guard counts the token's payment by it (guardAddr). The card-testing guard goes first
// (decisions §20): a card or client address (clientAddr) that it has
// blocked gets no token; the refusal is CARD_DECLINED with declineCode
// blocked, as a blocked payment's answer, and nothing is stored. Other
// errors are internal.
func (s *Service) Tokenize(ctx context.Context, key paygate.APIKey, c paygate.Card, clientAddr string) (paygate.CardToken, string, error) {
	merchantID, mode := key.MerchantID, key.Mode
	att := paygate.GuardAttempt{
		MerchantID: merchantID, Mode: mode, Card: s.vault.Fingerprint(c.Number), Addr: clientAddr,
	}
	if rule := s.guard.Check(context.WithoutCancel(ctx), att); rule != "" {
		s.metrics.CardTestingBlocked(string(rule))
		s.log.LogAttrs(ctx, levelInfo, "tokenization blocked by the card-testing guard",
			slog.String("merchant", merchantID), slog.String("mode", string(mode)), strAttr("rule", string(rule)))
		return paygate.CardToken{}, "", &paygate.Error{Code: paygate.CodeCardDeclined, Message: blockedMessage, DeclineCode: paygate.DeclineBlocked}
	}
	now := s.clock.Now()
	id, token, secret := newToken()
	t := paygate.CardToken{
		ID: id, MerchantID: merchantID, Mode: mode,
		Brand: card.Brand(c.Number.Reveal()), Last4: c.Number.Last4(),
		ExpMonth: c.ExpMonth, ExpYear: c.ExpYear, HolderName: c.HolderName,
		ClientAddr: clientAddr, APIKeyID: key.ID,
		CreatedAt: now, ExpiresAt: now.Add(paygate.TokenLifetime),
	}
	plain := make([]byte, 0, len(c.Number)+1+len(c.CVV))
	plain = append(plain, c.Number.Reveal()...)
	plain = append(plain, sealedCardSeparator)
	plain = append(plain, c.CVV.Reveal()...)
	sealed, err := s.vault.SealSecretKeyed(tokenContext(t.ID, merchantID, mode), secret, plain)
	clear(plain)
	if err != nil {
		return paygate.CardToken{}, "", fmt.Errorf("seal card token: %w", err)
	}
	if t.KeyID, err = vault.SecretKeyID(sealed); err != nil {
		return paygate.CardToken{}, "", fmt.Errorf("seal card token: %w", err)
	}
	t.Sealed = sealed
	if err := s.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{t}}); err != nil {
		if paygate.ErrorCode(err) == paygate.CodeUnauthorized {
			return paygate.CardToken{}, "", err
		}
		return paygate.CardToken{}, "", fmt.Errorf("store card token: %w", err)
	}
	s.log.LogAttrs(ctx, levelInfo, "card tokenized", attrToken(t), strAttr("key_id", t.KeyID))
	return t, token, nil
}

// tokenRefused is the one refusal of a token that cannot pay, whatever the
// reason (unknown, another merchant's or mode's, used, expired): it says
// nothing of other merchants' tokens.
func tokenRefused() error {
	return errors.Join(paygate.Errorf(paygate.CodeInvalidRequest, "token", "The token does not exist, was already used, or has expired."), errTokenUnusable)
}

// errTokenUnusable marks tokenRefused: a request whose key was read ahead
// as free may find its token used by its own twin, the same request sent
// twice, which committed in between (Run).
var errTokenUnusable = errors.New("the token cannot pay")

// tokenCard returns the card of the token a token payment names, opened
// for the provider call, the use that consumes it for the payment
// (paymentID) in the unit that stores the payment, and the address of the
// client that tokenized it. A token that is not
// usable now is INVALID_REQUEST param token; one that cannot be opened is
// an internal failure, logged without anything of the card.
func (s *Service) tokenCard(ctx context.Context, req Request, tokenID, paymentID string) (paygate.Card, paygate.TokenUse, string, error) {
	id, secret, ok := splitToken(tokenID)
	if !ok {
		return paygate.Card{}, paygate.TokenUse{}, "", tokenRefused()
	}
	t, err := s.store.CardToken(ctx, req.MerchantID, req.Mode, id)
	if paygate.IsNotFound(err) {
		return paygate.Card{}, paygate.TokenUse{}, "", tokenRefused()
	}
	if err != nil {
		return paygate.Card{}, paygate.TokenUse{}, "", fmt.Errorf("load card token: %w", err)
	}
	now := s.clock.Now()
	if !t.Usable(now) || card.Expired(t.ExpMonth, t.ExpYear, now) {
		return paygate.Card{}, paygate.TokenUse{}, "", tokenRefused()
	}
	plain, err := s.vault.OpenSecretKeyed(tokenContext(t.ID, t.MerchantID, t.Mode), secret, t.Sealed)
	if errors.Is(err, vault.ErrTampered) {
		// A wrong secret: refused as an unknown token would be.
		return paygate.Card{}, paygate.TokenUse{}, "", tokenRefused()
	}
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "card token could not be decrypted",
			attrToken(t), strAttr("key_id", t.KeyID), strAttr("error", err.Error()))
		return paygate.Card{}, paygate.TokenUse{}, "", fmt.Errorf("open card token %s: %w", t.ID, err)
	}
	defer clear(plain)
	number, cvv, ok := bytes.Cut(plain, []byte{sealedCardSeparator})
	if !ok {
		return paygate.Card{}, paygate.TokenUse{}, "", fmt.Errorf("open card token %s: malformed plaintext", t.ID)
	}
	c := paygate.Card{
		Number: paygate.PAN(number), CVV: paygate.CVV(cvv),
		ExpMonth: t.ExpMonth, ExpYear: t.ExpYear, HolderName: t.HolderName,
	}
	use := paygate.TokenUse{ID: t.ID, MerchantID: t.MerchantID, Mode: t.Mode, PaymentID: paymentID, At: now}
	return c, use, t.ClientAddr, nil
}

// ipv4Of is the address as billing.ipAddress takes it: dotted IPv4 (an
// IPv4-mapped IPv6 address unmapped), "" for any other.
func ipv4Of(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return ""
	}
	if a = a.Unmap(); !a.Is4() {
		return ""
	}
	return a.String()
}

// attrToken names a token in a log line: ids, brand and last four, nothing
// more.
func attrToken(t paygate.CardToken) slog.Attr {
	return slog.Group("card_token", slog.String("id", t.ID), slog.String("merchant", t.MerchantID),
		slog.String("mode", string(t.Mode)), slog.String("brand", t.Brand), slog.String("last4", t.Last4))
}

// TokenSweeperInterval is how often serve's sweeper deletes expired
// tokens: a token's sealed card outlives its expiry by at most this long
// (a used token's is erased at once), though no payment can use it after
// its expiry (TokenUse). A run that finds nothing expired writes nothing.
const TokenSweeperInterval = 5 * time.Second

// TokenSweeper is the background job that deletes expired card tokens,
// their sealed cards with them. Several nodes may run one each: a delete
// of what is already gone deletes nothing.
type TokenSweeper struct {
	svc      *Service
	interval time.Duration
	job      job
}

// NewTokenSweeper returns the sweeper, running every interval.
func (s *Service) NewTokenSweeper(interval time.Duration) *TokenSweeper {
	if interval <= 0 {
		interval = TokenSweeperInterval
	}
	return &TokenSweeper{svc: s, interval: interval}
}

// Start launches the job. It returns at once.
func (w *TokenSweeper) Start(ctx context.Context) error {
	w.job.start(ctx, w.interval, nil, func(ctx context.Context) { w.RunOnce(ctx) })
	return nil
}

// Stop stops the job and returns once its goroutine has exited.
func (w *TokenSweeper) Stop() { w.job.stop() }

// RunOnce deletes the tokens expired by now and returns how many.
func (w *TokenSweeper) RunOnce(ctx context.Context) int64 {
	s := w.svc
	n, err := s.store.PurgeCardTokens(ctx, s.clock.Now())
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("purge expired card tokens", "error", err)
		}
		return 0
	}
	if n > 0 {
		s.log.LogAttrs(ctx, levelInfo, "purged expired card tokens", slog.Int64("count", n))
	}
	return n
}
