package httpapi

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/ratelimit"
)

// Card tokens (decisions §19):
//
//	POST /v1/tokens   tokenize a card, with the public key
//
// The card fields' frame is served by the gateway's own origin, so its
// fetch is same-origin: no answer here carries Access-Control-Allow-Origin,
// and a preflight (OPTIONS) from another origin is answered 405 without
// allowing anything, which a browser takes as a refusal. The public key is
// the only key this endpoint takes (a secret key is 401: it never belongs
// in a browser), and no other endpoint takes it (auth.Authenticate).
// Idempotency-Key is not required, nor used: each call is a new token.

// tokensPath is the path of the tokens endpoint.
const tokensPath = "/v1/tokens"

// Default token rate limits, per minute (decisions §19).
const (
	DefaultRateLimitTokens        = 300
	DefaultRateLimitTokensPerAddr = 30
)

// tokenRecord is a token as POST /v1/tokens answers it: the card's brand,
// last four and expiry, never more.
type tokenRecord struct {
	ID        string          `json:"id"`
	Card      tokenCardRecord `json:"card"`
	ExpiresAt string          `json:"expiresAt"`
	Used      bool            `json:"used"`
}

// tokenCardRecord is what a token shows of its card.
type tokenCardRecord struct {
	Brand       string `json:"brand"`
	Last4       string `json:"last4"`
	ExpiryMonth string `json:"expiryMonth"`
	ExpiryYear  string `json:"expiryYear"`
}

// tokenResponse renders a token; its id is the token as the merchant
// holds it (token: the stored id and the secret that alone opens the
// card), the expiry two digits each, as submitted.
func tokenResponse(t paygate.CardToken, token string) tokenRecord {
	return tokenRecord{
		ID: token,
		Card: tokenCardRecord{
			Brand: t.Brand, Last4: t.Last4,
			ExpiryMonth: fmt.Sprintf("%02d", t.ExpMonth), ExpiryYear: fmt.Sprintf("%02d", t.ExpYear%100),
		},
		ExpiresAt: formatTime(t.ExpiresAt), Used: t.Used(),
	}
}

// tokenRoutes are the routes of the tokens endpoint, for the document's
// test: the operations taken with the public key.
func tokenRoutes() []string { return []string{"POST " + tokensPath} }

// serveTokens answers every method of /v1/tokens. The public key is
// authenticated first, whatever the method (decisions §1: without a valid
// key even a wrong method answers 401, or 429 past the failed-auth
// budget); then POST tokenizes, and anything else is 405 with Allow: POST,
// OPTIONS included: a preflight carries no key, so it is refused as any
// request without one, and no answer carries an Access-Control-Allow-*
// header, which a browser takes as a refusal of the other origin.
func (s *Server) serveTokens(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	key, err := s.cfg.Auth.AuthenticatePublic(ctx, r.Header.Get("X-API-Key"))
	if err != nil {
		if paygate.ErrorCode(err) != paygate.CodeUnauthorized {
			s.fail(w, r, err)
			return
		}
		s.refuse(w, r, err)
		return
	}
	st := stateOf(ctx)
	st.key, st.authed = key, true
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.writeError(w, r, paygate.Errorf(paygate.CodeMethodNotAllowed, "", "method %s is not allowed here", r.Method))
		return
	}
	s.createToken(w, r, key)
}

// createToken charges the token rate limits of the authenticated public
// key (the client address's, then the key's), validates the card as a
// payment's card is validated, and stores the token: 201 with it.
func (s *Server) createToken(w http.ResponseWriter, r *http.Request, key paygate.APIKey) {
	ctx := r.Context()
	// The address first: an address over its limit (one attacker) must
	// not use up the key's budget, which every shopper of the merchant
	// shares.
	d, err := s.cfg.Limiter.Allow(ctx, "tokens:addr:"+clientIP(r), s.cfg.RateLimitTokensPerAddr)
	if err == nil && d.Allowed {
		var dk ratelimit.Decision
		dk, err = s.cfg.Limiter.Allow(ctx, "tokens:key:"+key.ID, s.cfg.RateLimitTokens)
		if err == nil && (!dk.Allowed || dk.Remaining < d.Remaining) {
			d = dk // the headers tell the tighter budget
		}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(d.Remaining, 0)))
	h.Set("X-RateLimit-Reset", strconv.Itoa(ceilSeconds(d.ResetAfter)))
	if !d.Allowed {
		h.Set("Retry-After", retryAfter(d.RetryAfter))
		s.writeError(w, r, paygate.Errorf(paygate.CodeRateLimited, "", "rate limit exceeded: %d tokens per minute", d.Limit))
		return
	}
	if !isJSON(r.Header.Get("Content-Type")) {
		s.writeError(w, r, paygate.Errorf(paygate.CodeInvalidRequest, "Content-Type", "Content-Type must be application/json"))
		return
	}
	body, err := readBody(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var tr tokenRequest
	if e := decodeJSON(body, &tr); e != nil {
		s.writeError(w, r, e)
		return
	}
	if tr.Card == nil {
		s.writeError(w, r, fieldError("card", "card is required"))
		return
	}
	c, e := tr.Card.validate(s.clock.Now(), true)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	t, token, err := s.cfg.Payments.Tokenize(ctx, key, c, clientIP(r))
	if paygate.ErrorCode(err) == paygate.CodeUnauthorized {
		s.refuse(w, r, err) // the key was revoked since it authenticated
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeData(w, r, http.StatusCreated, tokenResponse(t, token))
}
