package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/paygate/paygate/client"
	"github.com/paygate/paygate/webhook"
)

// A card payment, and what to do with each kind of failure (the README's
// example).
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New("http://127.0.0.1:8080", os.Getenv("PAYGATE_KEY"))
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.CreatePayment(ctx, &client.PaymentParams{
		Amount: "10.50", Currency: "EUR", CustomerID: "customer-42", MerchantRef: "order-1001",
		Card:    &client.Card{Number: "4242424242424242", ExpiryMonth: "12", ExpiryYear: "30", CVV: "123", HolderName: "Ada Lovelace"},
		Billing: &client.Billing{Email: "ada@example.com", Phone: "+44 20 7946 0000", Country: "GB", Address: "1 Analytical St", City: "London", PostalCode: "N1 1AA"},
	}, client.WithIdempotencyKey("order-1001")) // retried with this key: never charged twice
	switch e, ok := errors.AsType[*client.Error](err); {
	case ok && e.Name == client.NameCardDeclined:
		fmt.Println("declined:", e.DeclineCode)
	case err != nil:
		log.Fatal(err) // a *client.TransportError: unknown whether charged; retry later with the same key
	default:
		fmt.Println(res.ID, res.Status)
	}
}

// What each kind of failure carries.
func ExampleError() {
	var err error // from a call
	var apiErr *client.Error
	var netErr *client.TransportError
	switch {
	case errors.As(err, &apiErr) && apiErr.Name == client.NameInvalidRequest:
		fmt.Println("fix the field", apiErr.Param)
	case errors.As(err, &apiErr):
		fmt.Println(apiErr.StatusCode, apiErr.Name, apiErr.TransactionID, apiErr.RequestID)
	case errors.As(err, &netErr):
		fmt.Println("no answer; the same call later with key", netErr.IdempotencyKey, "is safe")
	}
}

// A partial capture of an authorized payment, then a refund of part of it.
func ExampleClient_CapturePayment() {
	c, err := client.New("http://127.0.0.1:8080", "smtgw_sk_test_...")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	p, err := c.CapturePayment(ctx, "0190b6a2-7c1d-7000-8000-000000000001", &client.CaptureParams{Amount: "6.00"})
	if err != nil {
		log.Fatal(err)
	}
	r, err := c.CreateRefund(ctx, &client.RefundParams{TransactionID: p.ID, Amount: "2.00", Currency: p.Currency, Reason: "damaged"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.AmountCaptured, r.Status)
}

// Retries tuned for a batch job: more of them, longer waits. The context's
// deadline still bounds the whole call.
func ExampleWithBackoff() {
	c, err := client.New("https://pay.example.com", "smtgw_sk_live_...",
		client.WithMaxRetries(8),
		client.WithBackoff(client.ExponentialBackoff(time.Second, 30*time.Second)),
		client.WithHTTPClient(&http.Client{Timeout: 90 * time.Second}),
	)
	if err != nil {
		log.Fatal(err)
	}
	_ = c
}

// A webhook receiver: verify the raw body, then use the event. (Here a
// delivery is signed by hand, as the gateway signs it.)
func ExampleVerifyWebhook() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		ev, err := client.VerifyWebhook(secret, r.Header, body)
		if err != nil {
			http.Error(w, "invalid signature", http.StatusBadRequest)
			return
		}
		fmt.Println(ev.Type, ev.Data.TransactionID, ev.Data.Amount, ev.Data.Currency)
		w.WriteHeader(http.StatusNoContent)
	})

	body := `{"id":"evt-1","event":"payment.captured","mode":"test","timestamp":"2031-03-14T15:09:26.535Z",` +
		`"data":{"transactionId":"0190b6a2-7c1d-7000-8000-000000000001","merchantId":"m-1","status":"captured","amount":1050,"currency":"EUR"}}`
	now := time.Now()
	sig, err := webhook.Sign(secret, "evt-1", now, []byte(body))
	if err != nil {
		log.Fatal(err)
	}
	deliver := func(body string) int {
		req := httptest.NewRequest(http.MethodPost, "/hooks/paygate", strings.NewReader(body))
		req.Header.Set("webhook-id", "evt-1")
		req.Header.Set("webhook-timestamp", fmt.Sprint(now.Unix()))
		req.Header.Set("webhook-signature", sig)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec.Code
	}
	fmt.Println(deliver(body))
	// The same body with another amount does not verify.
	fmt.Println(deliver(strings.Replace(body, "1050", "9050", 1)))
	// Output:
	// payment.captured 0190b6a2-7c1d-7000-8000-000000000001 1050 EUR
	// 204
	// 400
}
