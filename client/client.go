// Package client is the Go client of paygate's /v1 API, for merchant
// backends. It covers every endpoint with typed requests and answers, and
// does the two things integrations most often get wrong:
//
//   - Every POST carries an Idempotency-Key, generated per call (or given
//     with WithIdempotencyKey) and reused on every retry of that call, so
//     that a retry can never charge twice.
//   - Retries: a call is retried when paygate's answer was lost: a network
//     error, a connection closed before the answer, or a 5xx answer that is
//     not paygate's JSON envelope (the 502 or 504 page of a proxy in front
//     of the gateway, whose node may have died holding the request). It is
//     also retried on 409 DUPLICATE_REQUEST with Retry-After (the first
//     request with that key is still running), on 429 RATE_LIMITED and on
//     503 SERVICE_UNAVAILABLE. The wait before each retry is capped
//     exponential backoff with jitter, and never less than the answer's
//     Retry-After. A retry that could not start before the context's
//     deadline is not attempted: the call returns the last answer at once.
//
// Every other error answer of paygate is returned as an *Error at once:
// retrying it with the same key would replay the same answer
// (CARD_DECLINED, PROVIDER_ERROR are stored under the key), or fail the
// same way (INVALID_REQUEST). Only such an *Error, with paygate's Name, is
// a final answer: to try a declined or failed payment again, call again
// without WithIdempotencyKey (or with a new key): that is a new payment.
//
// A call whose answer was lost on every attempt returns a *TransportError
// naming the Idempotency-Key it used. The payment may have been made: never
// use a new key then, call again later with WithIdempotencyKey of that key,
// which answers what happened without charging twice.
//
// Webhooks are verified with VerifyWebhook, which checks the Standard
// Webhooks signature (package github.com/paygate/paygate/webhook) and
// decodes the event.
//
// Card numbers and CVVs given to the client are sent to the gateway and
// nowhere else: they are redacted when a request value is printed or
// logged, and no error of this package repeats a request body.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Version is the client's version, sent in its User-Agent.
const Version = "0.1.0"

// Defaults of a Client's options.
const (
	DefaultMaxRetries = 4
	DefaultBaseDelay  = 500 * time.Millisecond
	DefaultMaxDelay   = 8 * time.Second
	// DefaultTimeout bounds one attempt (connection, request and whole
	// answer). A payment takes the provider's time: leave it generous.
	DefaultTimeout = 60 * time.Second
)

// maxAnswer is the largest answer body read; the gateway's are far smaller.
const maxAnswer = 8 << 20

// Client calls the gateway. It is safe for concurrent use; create it with
// New.
type Client struct {
	base       string // scheme, host and path prefix, without a trailing slash
	apiKey     string
	httpClient *http.Client
	maxRetries int
	backoff    Backoff
	userAgent  string
	// sleep waits d or until ctx is done; tests replace it to record the
	// waits.
	sleep func(ctx context.Context, d time.Duration) error
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client send its requests with hc instead of a
// client of its own (whose Timeout is DefaultTimeout, and which follows no
// redirect: the API never redirects, and a POST redirected would be sent
// again as a GET). hc's Timeout bounds
// each attempt; the context given to a call bounds the whole call,
// retries and waits included.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.httpClient = hc }
}

// WithMaxRetries sets how many times a call is retried after its first
// attempt (DefaultMaxRetries); 0 turns retries off.
func WithMaxRetries(n int) Option {
	return func(c *Client) { c.maxRetries = max(n, 0) }
}

// WithBackoff sets how long to wait before each retry (default:
// ExponentialBackoff(DefaultBaseDelay, DefaultMaxDelay)). Whatever b
// returns, the client never waits less than the gateway's Retry-After.
func WithBackoff(b Backoff) Option {
	return func(c *Client) { c.backoff = b }
}

// WithUserAgent adds product (such as "shop/1.2") before the client's own
// User-Agent.
func WithUserAgent(product string) Option {
	return func(c *Client) { c.userAgent = product + " " + c.userAgent }
}

// New returns a client of the gateway at baseURL (such as
// "https://pay.example.com", without /v1) authenticating with apiKey, a
// secret key (smtgw_sk_test_… or smtgw_sk_live_…). It fails when baseURL
// is not an absolute http or https URL, or apiKey is empty.
func New(baseURL, apiKey string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("paygate client: base URL %q is not an absolute http or https URL", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("paygate client: base URL %q has a query or fragment", baseURL)
	}
	if apiKey == "" {
		return nil, errors.New("paygate client: the API key is empty")
	}
	c := &Client{
		base:       u.String(),
		apiKey:     apiKey,
		httpClient: &http.Client{Timeout: DefaultTimeout, CheckRedirect: noRedirects},
		maxRetries: DefaultMaxRetries,
		backoff:    ExponentialBackoff(DefaultBaseDelay, DefaultMaxDelay),
		userAgent:  "paygate-go/" + Version,
		sleep:      sleepContext,
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// CallOption configures one call.
type CallOption func(*callOptions)

type callOptions struct {
	idempotencyKey string
	requestID      string
	info           *ResponseInfo
}

// WithIdempotencyKey makes a POST use key (1 to 255 characters) instead of
// a generated one. Give a key derived from your own operation (an order
// id) to make a call safe to repeat across restarts of your program: the
// gateway answers a repeat with the first answer, byte for byte, and does
// nothing again. GETs and DELETEs ignore it.
func WithIdempotencyKey(key string) CallOption {
	return func(o *callOptions) { o.idempotencyKey = key }
}

// WithRequestID sends id as X-Request-Id on every attempt of the call, so
// that the gateway's logs name it (1 to 128 characters of
// [A-Za-z0-9._:-]; the gateway makes up its own for any other value).
func WithRequestID(id string) CallOption {
	return func(o *callOptions) { o.requestID = id }
}

// WithResponseInfo fills *info with what the last attempt of the call
// answered, error or not.
func WithResponseInfo(info *ResponseInfo) CallOption {
	return func(o *callOptions) { o.info = info }
}

// ResponseInfo is what a call's last answer said besides its body.
type ResponseInfo struct {
	// StatusCode is the HTTP status; 0 when no answer came.
	StatusCode int
	// RequestID is the answer's X-Request-Id.
	RequestID string
	// IdempotencyKey is the key the call sent ("" for GET and DELETE).
	IdempotencyKey string
	// Replayed is true when the gateway answered with the stored answer
	// of an earlier request with the same key (Idempotent-Replayed).
	Replayed bool
	// Attempts counts the requests the call sent, retries included.
	Attempts int
	// RateLimit is the key's budget as the answer reported it.
	RateLimit RateLimit
}

// RateLimit is the X-RateLimit-* headers of an answer.
type RateLimit struct {
	Limit     int           // requests per minute of the key
	Remaining int           // requests left now
	Reset     time.Duration // until the window frees a request
}

// TransportError is a call that got no usable answer on every attempt:
// the gateway could not be reached, the connection failed before the
// answer was read, or a proxy answered a 5xx page of its own instead of
// paygate's answer (Err is then a *LostAnswerError). The request may or
// may not have been processed: calling again with
// WithIdempotencyKey(IdempotencyKey) is safe and answers what happened; a
// new key could charge twice.
type TransportError struct {
	Method, Path   string
	IdempotencyKey string // "" for GET and DELETE
	Attempts       int
	Err            error // the last attempt's failure
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("paygate client: %s %s: no answer after %d attempt(s): %v", e.Method, e.Path, e.Attempts, e.Err)
}

// Unwrap returns the last attempt's failure (context.DeadlineExceeded,
// a *url.Error, …).
func (e *TransportError) Unwrap() error { return e.Err }

// LostAnswerError is an attempt answered with a 5xx that is not paygate's
// JSON envelope: a proxy in front of the gateway (nginx's 502 or 504 page)
// answered in its place, so paygate's own answer, if any, was lost.
type LostAnswerError struct {
	StatusCode int
	RequestID  string // the answer's X-Request-Id, if the proxy sent one
}

func (e *LostAnswerError) Error() string {
	return fmt.Sprintf("answered %d %s with a body that is not paygate's envelope (a proxy's page): paygate's answer was lost", e.StatusCode, http.StatusText(e.StatusCode))
}

// envelope is every answer's body.
type envelope struct {
	Data  json.RawMessage `json:"data"`
	Error *Error          `json:"error"`
}

// request is one call: what to send and where to decode data.
type request struct {
	method string
	path   string // escaped, from /v1
	query  url.Values
	body   any // nil: no body
	out    any // nil: data is not decoded
	// apiKey, when set, is sent instead of the client's key: the public
	// key of CreateToken.
	apiKey string
}

// do runs a call with its retries.
func (c *Client) do(ctx context.Context, r request, opts []CallOption) error {
	var o callOptions
	for _, f := range opts {
		f(&o)
	}
	var info ResponseInfo
	defer func() {
		if o.info != nil {
			*o.info = info
		}
	}()
	var payload []byte
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return fmt.Errorf("paygate client: encode the request of %s %s: %w", r.method, r.path, err)
		}
		payload = b
	}
	if r.method == http.MethodPost {
		info.IdempotencyKey = o.idempotencyKey
		if info.IdempotencyKey == "" {
			info.IdempotencyKey = uuid.NewString()
		}
	}
	target := c.base + r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}

	for attempt := 1; ; attempt++ {
		info.Attempts = attempt
		ans, err := c.send(ctx, target, r.method, payload, r.apiKey, info.IdempotencyKey, o.requestID)
		var last error
		var retryAfter time.Duration
		retry := false
		if err != nil {
			info.StatusCode, info.RequestID, info.Replayed, info.RateLimit = 0, "", false, RateLimit{}
			last = &TransportError{Method: r.method, Path: r.path, IdempotencyKey: info.IdempotencyKey, Attempts: attempt, Err: err}
			retry = ctx.Err() == nil
		} else {
			info.StatusCode = ans.status
			info.RequestID = ans.header.Get("X-Request-Id")
			info.Replayed = ans.header.Get("Idempotent-Replayed") == "true"
			info.RateLimit = rateLimitOf(ans.header)
			if ans.status < 300 {
				return decodeData(ans, r)
			}
			if ans.status >= 500 && !isEnvelopeError(ans) {
				// A proxy's page, not paygate's answer: the request may have
				// been processed, so it is retried with the same key like a
				// dropped connection, and ends the same way.
				last = &TransportError{Method: r.method, Path: r.path, IdempotencyKey: info.IdempotencyKey, Attempts: attempt,
					Err: &LostAnswerError{StatusCode: ans.status, RequestID: info.RequestID}}
				retryAfter = retryAfterOf(ans.header.Get("Retry-After"), time.Now())
				retry = ctx.Err() == nil
			} else {
				e := errorOf(ans, info.IdempotencyKey)
				last, retryAfter = e, e.RetryAfter
				switch e.StatusCode {
				case http.StatusTooManyRequests, http.StatusServiceUnavailable:
					retry = true
				case http.StatusConflict:
					// Only the in-flight conflict carries Retry-After; a key
					// reused with another body never succeeds.
					retry = e.Name == NameDuplicateRequest && e.RetryAfter > 0
				}
			}
		}
		if !retry || attempt > c.maxRetries {
			return last
		}
		wait := max(c.backoff(attempt, retryAfter), retryAfter)
		if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
			return last // the retry could not start in time
		}
		if c.sleep(ctx, wait) != nil {
			return last
		}
	}
}

// answer is one attempt's HTTP answer, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// send makes one attempt. An error means no complete answer arrived.
func (c *Client) send(ctx context.Context, target, method string, payload []byte, apiKey, key, requestID string) (answer, error) {
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return answer{}, err
	}
	if apiKey == "" {
		apiKey = c.apiKey
	}
	req.Header.Set("X-API-Key", apiKey)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if requestID != "" {
		req.Header.Set("X-Request-Id", requestID)
	}
	res, err := c.httpClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
	if err != nil {
		return answer{}, err
	}
	return answer{status: res.StatusCode, header: res.Header, body: b}, nil
}

// decodeData decodes a 2xx answer's data into r.out.
func decodeData(a answer, r request) error {
	if r.out == nil {
		return nil
	}
	var env envelope
	if err := json.Unmarshal(a.body, &env); err != nil || len(env.Data) == 0 {
		return fmt.Errorf("paygate client: %s %s answered %d with a body that is not the API's envelope", r.method, r.path, a.status)
	}
	if err := json.Unmarshal(env.Data, r.out); err != nil {
		return fmt.Errorf("paygate client: %s %s: decode the answer: %w", r.method, r.path, err)
	}
	return nil
}

// isEnvelopeError tells whether an answer's body is paygate's envelope
// with an error, as every error answer of the gateway is.
func isEnvelopeError(a answer) bool {
	var env envelope
	return json.Unmarshal(a.body, &env) == nil && env.Error != nil
}

// errorOf reads an error answer. A body that is not the envelope (a
// proxy's 4xx page; its 5xx pages are lost answers, see do) gives an Error
// with the status and no name.
func errorOf(a answer, key string) *Error {
	e := &Error{}
	var env envelope
	if json.Unmarshal(a.body, &env) == nil && env.Error != nil {
		e = env.Error
	} else {
		e.Message = http.StatusText(a.status)
	}
	e.StatusCode = a.status
	e.RequestID = a.header.Get("X-Request-Id")
	e.IdempotencyKey = key
	e.RetryAfter = retryAfterOf(a.header.Get("Retry-After"), time.Now())
	return e
}

// retryAfterOf reads Retry-After: delay seconds or an HTTP date; 0 when
// absent or unreadable.
func retryAfterOf(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(n, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

func rateLimitOf(h http.Header) RateLimit {
	atoi := func(name string) int {
		n, _ := strconv.Atoi(h.Get(name))
		return n
	}
	return RateLimit{
		Limit:     atoi("X-RateLimit-Limit"),
		Remaining: atoi("X-RateLimit-Remaining"),
		Reset:     time.Duration(atoi("X-RateLimit-Reset")) * time.Second,
	}
}

// noRedirects makes an http.Client return a redirect as the answer.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// sleepContext waits d, or less when ctx is done first (its error).
func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pathID escapes one id of a path; an empty id is refused before any
// request, since the path would name another resource.
func pathID(kind, id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("paygate client: the %s id is empty", kind)
	}
	return url.PathEscape(id), nil
}
