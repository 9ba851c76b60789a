package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// trivialAnswer is what the self-test server answers every request: a
// creation result of the gateway's size.
const trivialAnswer = `{"data":{"id":"0b6f5b8e-3b7a-4c51-9d0e-2b1f1f6f7a10","status":"captured","amount":"19.99",` +
	`"currency":"EUR","provider":"sandbox-eu","threeDsRequired":false,"threeDsData":null,` +
	`"createdAt":"2026-01-01T00:00:00Z"}}`

// TrivialHandler answers every request 201 with a fixed JSON body, after
// reading the request body: the server of the self-test, which measures
// what the load tool itself can drive.
func TrivialHandler() http.Handler {
	body := []byte(trivialAnswer)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})
}

// StartTrivialServer serves h on a free loopback port until the returned
// stop function is called.
func StartTrivialServer(h http.Handler) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Serve returns when stop shuts the server down.
		_ = srv.Serve(ln)
	}()
	return "http://" + ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
