package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// lost is an answer a client never got: the connection failed, or a 5xx
// came from nginx, not from paygate (a node died with the request).
type lost struct {
	at  time.Time
	why string
}

// outcome is what a payment's requests came to, as its client saw them.
type outcome struct {
	key        string // the Idempotency-Key, also the payment's merchantRef
	status     int    // the final answer's HTTP status; 0 when none came
	paymentID  string // data.id, or error.transactionId of a decline
	state      string // the payment's status in the answer ("failed" for a decline)
	body       string // the final answer, for failure messages
	attempts   int
	conflicts  int    // 409 answers: the key in flight elsewhere
	lost       []lost // answers lost on the way
	paygate5xx string // a 5xx paygate itself answered: the first one
	replayed   bool   // the final answer was a replay (Idempotent-Replayed)
}

// apiClient is a merchant backend talking to the cluster. It retries a POST
// with the same Idempotency-Key on a lost answer and on 409 (the key is in
// flight, on a node that may have died with it), and takes any answer that
// paygate rendered, 5xx included, as final.
type apiClient struct {
	http *http.Client
	base string
	key  string
}

// envelope is paygate's answer body.
type envelope struct {
	Data struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	} `json:"data"`
	Error *struct {
		Name          string `json:"name"`
		TransactionID string `json:"transactionId"`
	} `json:"error"`
}

// fromPaygate reports whether an answer is paygate's own: its JSON
// envelope and its X-Request-Id. nginx's error pages are HTML.
func fromPaygate(resp *http.Response, body []byte) (envelope, bool) {
	var env envelope
	if resp.Header.Get("X-Request-Id") == "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return env, false
	}
	return env, json.Unmarshal(body, &env) == nil
}

// do sends one request and reads the whole answer.
func (c *apiClient) do(ctx context.Context, base, method, path, idemKey string, body []byte) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("X-API-Key", c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp, raw, err
}

// pay creates a payment under idemKey until paygate answers it, or ctx
// ends. first, when set, sends the first attempt elsewhere (straight to a
// node).
func (c *apiClient) pay(ctx context.Context, idemKey string, body []byte, first *apiClient) outcome {
	o := outcome{key: idemKey}
	via := c
	if first != nil {
		via = first
	}
	for ctx.Err() == nil {
		o.attempts++
		resp, raw, err := via.do(ctx, via.base, http.MethodPost, "/v1/payments", idemKey, body)
		via = c
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			o.lost = append(o.lost, lost{time.Now(), err.Error()})
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		env, ours := fromPaygate(resp, raw)
		switch {
		case !ours && resp.StatusCode >= 500:
			o.lost = append(o.lost, lost{time.Now(), fmt.Sprintf("%d from nginx", resp.StatusCode)})
			sleep(ctx, 100*time.Millisecond)
			continue
		case !ours:
			o.status, o.body = resp.StatusCode, string(raw)
			return o // not paygate's answer, and not a lost one: the checks fail it
		case resp.StatusCode == http.StatusConflict:
			o.conflicts++
			sleep(ctx, 250*time.Millisecond)
			continue
		}
		o.status, o.body = resp.StatusCode, string(raw)
		o.replayed = resp.Header.Get("Idempotent-Replayed") == "true"
		if resp.StatusCode >= 500 && o.paygate5xx == "" {
			o.paygate5xx = fmt.Sprintf("%d %s", resp.StatusCode, raw)
		}
		o.paymentID, o.state = env.Data.ID, env.Data.Status
		if env.Error != nil {
			o.paymentID, o.state = env.Error.TransactionID, "failed"
		}
		return o
	}
	return o
}

// get reads a payment; the answer must be paygate's (nginx retries a GET
// on another node by itself).
func (c *apiClient) get(ctx context.Context, id string) (int, envelope, error) {
	resp, raw, err := c.do(ctx, c.base, http.MethodGet, "/v1/payments/"+id, "", nil)
	if err != nil {
		return 0, envelope{}, err
	}
	env, ours := fromPaygate(resp, raw)
	if !ours {
		return resp.StatusCode, env, fmt.Errorf("GET answered %d by nginx: %s", resp.StatusCode, raw)
	}
	return resp.StatusCode, env, nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// paymentJSON is a card payment of amount EUR or USD, its merchantRef the
// idempotency key.
func paymentJSON(number, amount, currency, customer, ref string) []byte {
	b, _ := json.Marshal(map[string]any{
		"amount": amount, "currency": currency, "customerId": customer, "merchantRef": ref,
		"card": map[string]any{
			"number": number, "expiryMonth": "12", "expiryYear": fmt.Sprintf("%02d", (time.Now().Year()+3)%100),
			"cvv": "123", "holderName": "Ada Lovelace",
		},
		"billing": map[string]any{
			"firstName": "Ada", "lastName": "Lovelace", "email": "ada@example.com",
			"phone": "+44 20 7946 0000", "country": "GB", "address": "1 Analytical St",
			"city": "London", "postalCode": "N1 1AA",
		},
	})
	return b
}

// record collects what every client saw.
type record struct {
	mu       sync.Mutex
	outcomes []outcome
	getErrs  []string
}

func (r *record) add(o outcome) {
	r.mu.Lock()
	r.outcomes = append(r.outcomes, o)
	r.mu.Unlock()
}

func (r *record) getFailed(msg string) {
	r.mu.Lock()
	r.getErrs = append(r.getErrs, msg)
	r.mu.Unlock()
}
