package webhook_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/webhook"
)

// The README's "Receiving webhooks" section shows this code verbatim
// (TestReadmeExample checks it), between the markers.

// readme:begin
// handleWebhook answers paygate's webhooks: it checks the signature on the
// raw body, queues the event and answers 204 at once. Fulfil orders from
// the queue, not in the handler: paygate waits at most 10 seconds.
func handleWebhook(secret string, queue chan<- []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if err := webhook.Verify(secret, r.Header, body); err != nil {
			http.Error(w, "invalid signature", http.StatusBadRequest)
			return
		}
		select {
		case queue <- body:
			w.WriteHeader(http.StatusNoContent)
		default: // queue full: paygate will retry
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}
	}
}

// handleEvents consumes the queue. Delivery is at least once: the same
// event (same id, same webhook-id) may come again, so skip ids already
// handled (in production, a table with a unique key on the id).
func handleEvents(queue <-chan []byte, handled map[string]bool, fulfil func(id, event, payment string, amount int64)) {
	for body := range queue {
		var ev struct {
			ID    string `json:"id"`
			Event string `json:"event"`
			Data  struct {
				TransactionID string `json:"transactionId"`
				Amount        int64  `json:"amount"` // minor units: 1050 is 10.50 EUR
			} `json:"data"`
		}
		if json.Unmarshal(body, &ev) != nil || handled[ev.ID] {
			continue
		}
		handled[ev.ID] = true
		fulfil(ev.ID, ev.Event, ev.Data.TransactionID, ev.Data.Amount)
	}
}

// readme:end

// The secret printed by `paygate webhook set`.
const endpointSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// Example receives one event delivered twice (as a retry would) and
// fulfils it once.
func Example() {
	queue := make(chan []byte, 10)
	srv := httptest.NewServer(handleWebhook(endpointSecret, queue))
	defer srv.Close()

	// What paygate sends.
	const id = "0190b6a2-7c1e-7d4a-9f3b-2b8c1d4e5f60"
	body := []byte(`{"id":"` + id + `","event":"payment.captured","mode":"test",` +
		`"timestamp":"2031-03-14T15:09:26.535Z","data":{"transactionId":"0190b6a2-7c1d-7000-8000-000000000001",` +
		`"merchantId":"0190b6a2-0000-7000-8000-000000000002","status":"captured","amount":1050,"currency":"EUR"}}`)
	for _, secret := range []string{endpointSecret, endpointSecret, "whsec_b3RoZXIgc2VjcmV0"} {
		now := time.Now()
		sig, _ := webhook.Sign(secret, id, now, body)
		req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		req.Header.Set(webhook.HeaderID, id)
		req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
		req.Header.Set(webhook.HeaderSignature, sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode)
	}
	close(queue)
	handleEvents(queue, map[string]bool{}, func(id, event, payment string, amount int64) {
		fmt.Println(event, payment, amount)
	})
	// Output:
	// 204
	// 204
	// 400
	// payment.captured 0190b6a2-7c1d-7000-8000-000000000001 1050
}

// TestReadmeExample checks that the README's receiver is this file's,
// which Example runs.
func TestReadmeExample(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	code := s[strings.Index(s, "// readme:begin\n")+len("// readme:begin\n") : strings.Index(s, "\n// readme:end")]
	section := string(readme)
	i := strings.Index(section, "## Receiving webhooks")
	if i < 0 {
		t.Fatal(`README.md has no "## Receiving webhooks" section`)
	}
	section = section[i:]
	start := strings.Index(section, "```go\n")
	if start < 0 {
		t.Fatal("the section has no Go example")
	}
	block := section[start+len("```go\n"):]
	block = block[:strings.Index(block, "```")]
	if !strings.Contains(block, code) {
		t.Errorf("the README's Go example differs from webhook/example_test.go between the readme markers;\nREADME:\n%s\nfile:\n%s", block, code)
	}
}
