package bench

import (
	"context"
	"encoding/json"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// A cardtest mix plays a card-testing attack (decisions §20) among
// legitimate payments. The attacker sends declining cards from a few
// addresses as customers of its own; with cardtest in the mix every other
// payment comes from one of many addresses (legitimateAddr). Addresses
// travel in X-Forwarded-For, which the gateway trusts only from a trusted
// proxy: bench runs its child server with itself (loopback) as one.
//
// The sandboxes decline exactly four test cards (declineCards), so the
// attacker's distinct declining cards are those four: what a real attack
// spreads over thousands of cards is here spread over four, which the card
// rule stops sooner than ip_cards would.

// attackerAddrs are the attacker's few addresses.
var attackerAddrs = []string{"203.0.113.7", "203.0.113.8", "198.51.100.23"}

// attackerCustomers is how many customer ids the attacker uses, after the
// legitimate ones (customerPool).
const attackerCustomers = 20

// legitimateAddr is one of about a million addresses of 100.64.0.0/10.
func legitimateAddr(rng *mrand.Rand) string {
	n := rng.IntN(1 << 20)
	return "100." + strconv.Itoa(64+n>>16) + "." + strconv.Itoa(n>>8&0xff) + "." + strconv.Itoa(n&0xff)
}

// CardTest is what the guard did in a cardtest run, over the measurement.
type CardTest struct {
	// AttackerAttempts were sent; AttackerReached reached a provider (any
	// answer but a block); AttackerBlocked were blocked (declineCode
	// blocked). ReachedShare is AttackerReached / AttackerAttempts.
	AttackerAttempts int64   `json:"attackerAttempts"`
	AttackerReached  int64   `json:"attackerReached"`
	AttackerBlocked  int64   `json:"attackerBlocked"`
	ReachedShare     float64 `json:"reachedShare"`
	// Legitimate payments (approve, refund's create, decline) sent, and
	// those blocked by the guard.
	Legitimate        int64   `json:"legitimate"`
	LegitimateBlocked int64   `json:"legitimateBlocked"`
	BlockedShare      float64 `json:"legitimateBlockedShare"`
	// WarmupAttempts and WarmupReached are the attacker's attempts during
	// the warmup, and those that reached a provider: a rule lets its
	// threshold of declines through before it blocks, and with a warmup
	// of a few seconds that happens there.
	WarmupAttempts int64 `json:"warmupAttempts"`
	WarmupReached  int64 `json:"warmupReached"`
}

// cardTestCounts are the counters of a run.
type cardTestCounts struct {
	attempts, reached, blocked, legit, legitBlocked atomic.Int64
	warmupAttempts, warmupReached                   atomic.Int64
}

func (c *cardTestCounts) result() *CardTest {
	out := &CardTest{
		AttackerAttempts: c.attempts.Load(), AttackerReached: c.reached.Load(), AttackerBlocked: c.blocked.Load(),
		Legitimate: c.legit.Load(), LegitimateBlocked: c.legitBlocked.Load(),
		WarmupAttempts: c.warmupAttempts.Load(), WarmupReached: c.warmupReached.Load(),
	}
	if out.AttackerAttempts > 0 {
		out.ReachedShare = float64(out.AttackerReached) / float64(out.AttackerAttempts)
	}
	if out.Legitimate > 0 {
		out.BlockedShare = float64(out.LegitimateBlocked) / float64(out.Legitimate)
	}
	return out
}

// legitimate counts a legitimate payment's answer.
func (c *cardTestCounts) legitimate(_ Op, body []byte) {
	c.legit.Add(1)
	if declineCode(body) == "blocked" {
		c.legitBlocked.Add(1)
	}
}

// attack sends one attacker attempt: a declining card from one of the
// attacker's addresses, as one of its customers.
func (r *runner) attack(ctx context.Context, w *worker, start time.Time, measured bool, record func(Kind, time.Time, Outcome)) {
	tpl := &r.tpl.decline[w.rng.IntN(len(r.tpl.decline))]
	w.xff = attackerAddrs[w.rng.IntN(len(attackerAddrs))]
	w.seq++
	w.ref = appendRef(w.ref[:0], r.runID, w.id, w.seq)
	w.body = tpl.appendBody(w.body[:0], customerPool+w.rng.IntN(attackerCustomers), w.ref)
	o := r.do(ctx, w, http.MethodPost, "/v1/payments", r.cfg.SecretKey, string(w.ref), w.body)
	o.Expected = o.Name == "CARD_DECLINED"
	record(KindPayment, start, o)
	if ctx.Err() != nil || o.Err != nil {
		return
	}
	if !measured {
		r.cardTest.warmupAttempts.Add(1)
		if declineCode(w.resp.Bytes()) != "blocked" {
			r.cardTest.warmupReached.Add(1)
		}
		return
	}
	r.cardTest.attempts.Add(1)
	if declineCode(w.resp.Bytes()) == "blocked" {
		r.cardTest.blocked.Add(1)
	} else {
		r.cardTest.reached.Add(1)
	}
}

// declineCode returns error.declineCode of an answer, "" when none.
func declineCode(body []byte) string {
	var env struct {
		Error struct {
			DeclineCode string `json:"declineCode"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil {
		return ""
	}
	return env.Error.DeclineCode
}
