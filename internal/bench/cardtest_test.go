package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCardTestMix: the attacker's attempts come from its few addresses with
// declining cards, legitimate payments from many other addresses, and the
// report counts what the server blocked.
func TestCardTestMix(t *testing.T) {
	var mu sync.Mutex
	legitAddrs := map[string]bool{}
	var attacks, legits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		xff := r.Header.Get("X-Forwarded-For")
		declining := strings.Contains(string(body), `"number":"40000000000`)
		if slices.Contains(attackerAddrs, xff) {
			if !declining {
				t.Errorf("attacker attempt with an approving card: %s", body)
			}
			// The first attempt reaches the provider; the rest are
			// blocked.
			w.WriteHeader(400)
			if attacks.Add(1) == 1 {
				io.WriteString(w, `{"data":null,"error":{"status":400,"name":"CARD_DECLINED","declineCode":"generic_decline"}}`)
				return
			}
			io.WriteString(w, `{"data":null,"error":{"status":400,"name":"CARD_DECLINED","declineCode":"blocked"}}`)
			return
		}
		a, err := netip.ParseAddr(xff)
		if err != nil || !netip.MustParsePrefix("100.64.0.0/10").Contains(a) {
			t.Errorf("legitimate payment from %q", xff)
		}
		mu.Lock()
		legitAddrs[xff] = true
		mu.Unlock()
		// One legitimate payment is wrongly blocked.
		if legits.Add(1) == 10 {
			w.WriteHeader(400)
			io.WriteString(w, `{"data":null,"error":{"status":400,"name":"CARD_DECLINED","declineCode":"blocked"}}`)
			return
		}
		w.WriteHeader(201)
		io.WriteString(w, `{"data":{"id":"x"}}`)
	}))
	defer srv.Close()
	res, err := Run(context.Background(), Config{BaseURL: srv.URL, SecretKey: "k", Concurrency: 2, Requests: 400,
		Mix: Mix{OpApprove: 3, OpCardTest: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ct := res.CardTest
	if ct == nil {
		t.Fatal("no card-testing counts")
	}
	if ct.AttackerAttempts+ct.Legitimate != 400 || ct.AttackerAttempts != attacks.Load() || ct.AttackerReached != 1 ||
		ct.AttackerBlocked != ct.AttackerAttempts-1 || ct.LegitimateBlocked != 1 {
		t.Errorf("counts %+v (attacks %d, legitimate %d)", ct, attacks.Load(), legits.Load())
	}
	if len(legitAddrs) < 200 {
		t.Errorf("%d legitimate addresses for %d payments, want most of them distinct", len(legitAddrs), legits.Load())
	}
	if m, err := ParseMix("approve=90,cardtest=10"); err != nil || m[OpCardTest] != 10 || m.String() != "approve=90,cardtest=10" {
		t.Errorf("ParseMix: %v %v", m, err)
	}
}
