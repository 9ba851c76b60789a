package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
)

// readAheadStore counts the reads of GET /v1/payments/{id}; with miss set the
// payment read with the key is missing, and with fail set that read fails:
// the server then reads the payment itself.
type readAheadStore struct {
	paygate.Store
	miss, fail          atomic.Bool
	peeks, byID, byHash atomic.Int64
}

func (s *readAheadStore) APIKeyAndRequest(ctx context.Context, hash []byte, reads paygate.RequestReads) (paygate.APIKey, paygate.RequestData, error) {
	s.peeks.Add(1)
	k, data, err := s.Store.(paygate.RequestReader).APIKeyAndRequest(ctx, hash, reads)
	switch {
	case s.fail.Load():
		return k, paygate.RequestData{Err: errors.New("the read beside the key failed")}, err
	case s.miss.Load():
		return k, paygate.RequestData{}, err
	}
	return k, data, err
}

func (s *readAheadStore) PaymentByID(ctx context.Context, merchantID string, mode paygate.Mode, id string) (paygate.Payment, error) {
	s.byID.Add(1)
	return s.Store.PaymentByID(ctx, merchantID, mode, id)
}

func (s *readAheadStore) APIKeys(ctx context.Context, q paygate.APIKeyQuery) ([]paygate.APIKey, error) {
	if len(q.Hash) > 0 {
		s.byHash.Add(1)
	}
	return s.Store.APIKeys(ctx, q)
}

// TestGetPaymentReadAhead checks that GET /v1/payments/{id} reads the payment
// with the API key in one store call where the store can (PostgreSQL), and
// answers exactly as reading it on its own does.
func TestGetPaymentReadAhead(t *testing.T) {
	st := &readAheadStore{}
	s := newBenchServer(t, "postgres", func(inner paygate.Store) paygate.Store {
		if _, ok := inner.(paygate.RequestReader); !ok {
			t.Fatalf("%T does not read payments ahead", inner)
		}
		st.Store = inner
		return st
	})
	id := s.create(t, 1, "peek-1")
	get := func(path, key string) (int, json.RawMessage) {
		t.Helper()
		w := s.do(http.MethodGet, path, key, "", nil)
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, w.Body.String())
		}
		return w.Code, env.Data
	}
	counts := func() [3]int64 { return [3]int64{st.peeks.Load(), st.byID.Load(), st.byHash.Load()} }

	before := counts()
	code, peeked := get("/v1/payments/"+id, s.secret)
	if after := counts(); code != http.StatusOK || after != [3]int64{before[0] + 1, before[1], before[2]} {
		t.Fatalf("GET with peek: status %d, reads (peek, by id, by hash) %v -> %v; want 200 and one peek", code, before, after)
	}
	// The route's own reading of the path decides: an upper-case id is the
	// same payment, read with the key too.
	before = counts()
	code, upper := get("/v1/payments/"+strings.ToUpper(id), s.secret)
	if after := counts(); code != http.StatusOK || string(upper) != string(peeked) || after != [3]int64{before[0] + 1, before[1], before[2]} {
		t.Fatalf("GET by the upper-case id: status %d, reads %v -> %v, same answer %v", code, before, after, string(upper) == string(peeked))
	}
	st.miss.Store(true)
	code, read := get("/v1/payments/"+id, s.secret)
	if code != http.StatusOK || st.byID.Load() != before[1]+1 {
		t.Fatalf("GET without the peek's payment: status %d, by id %d", code, st.byID.Load())
	}
	if string(peeked) != string(read) {
		t.Errorf("the peeked answer differs:\n%s\n%s", peeked, read)
	}
	st.miss.Store(false)
	// A failed read beside the key: the server reads the payment itself,
	// and a key that does not authenticate still gets 401.
	st.fail.Store(true)
	before = counts()
	if code, failed := get("/v1/payments/"+id, s.secret); code != http.StatusOK || string(failed) != string(peeked) || st.byID.Load() != before[1]+1 {
		t.Fatalf("GET after a failed read beside the key: status %d, by id %d -> %d, same answer %v", code, before[1], st.byID.Load(), string(failed) == string(peeked))
	}
	if code, _ := get("/v1/payments/"+id, s.secret[:len(s.secret)-2]+"zz"); code != http.StatusUnauthorized {
		t.Errorf("wrong key, failed read beside it: status %d, want 401", code)
	}
	st.fail.Store(false)
	if code, _ := get("/v1/payments/00000000-0000-7000-8000-000000000000", s.secret); code != http.StatusNotFound {
		t.Errorf("unknown payment: status %d, want 404", code)
	}
	if code, _ := get("/v1/payments/"+id, s.secret[:len(s.secret)-2]+"zz"); code != http.StatusUnauthorized {
		t.Errorf("wrong key: status %d, want 401", code)
	}
	before = counts()
	if code, _ := get("/v1/payments/"+id+"/refunds", s.secret); code != http.StatusOK || st.peeks.Load() != before[0] {
		t.Errorf("refunds of the payment: status %d, peeks %d -> %d; want 200 and no peek", code, before[0], st.peeks.Load())
	}
}
