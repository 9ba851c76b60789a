package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/testenv"
)

// Shape of the load: workers pay one after another, each with its own
// customer; one payment in ten is declined. The sandbox answers EUR after
// 50 ms, so that the killed node surely dies with payments in flight, and
// USD (the sentinel's) after 3 s.
const (
	workers   = 8
	liveLimit = 12 // requests per minute per live key: the shared-limit check
)

const providersYAML = `providers:
  - id: sandbox-eu
    kind: sandbox
    currencies: [EUR]
    sandbox: {latency: 50ms}
  - id: sandbox-slow
    kind: sandbox
    currencies: [USD]
    sandbox: {latency: 3s}
routes:
  test:
    EUR: [sandbox-eu]
    USD: [sandbox-slow]
`

// TestCluster runs deploy/nginx.conf (adapted to loopback) in front of
// three `paygate serve` on one PostgreSQL schema and one Redis, and drives
// payments through it while one node is SIGKILLed and restarted and then
// all three are restarted in turn (SIGTERM, exit, start). The clients
// retry with the same Idempotency-Key on a lost answer or a 409.
//
// It passes when every payment is final and made once: each key has
// exactly one payment, in the state its client was told, with exactly one
// payment event and at most one charge at the provider; no answer is lost
// but with the killed node (and those payments' retries get their final
// answer, once recovery has finished what the dead node started); paygate
// itself answers no 5xx but the replay of such a payment; GETs never fail
// (nginx moves them on by itself); and a live key's rate limit holds across
// the three nodes (Redis), not three times over.
func TestCluster(t *testing.T) {
	t.Parallel()
	dbURL := testenv.PostgresSchema(t)
	redisURL := testenv.RedisURL(t)
	testenv.Program(t, nginxPath, "nginx")

	dir := t.TempDir()
	config := filepath.Join(dir, "providers.yaml")
	if err := os.WriteFile(config, []byte(providersYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	addrs := [3]string{freeAddr(t), freeAddr(t), freeAddr(t)}
	site, pool := newNginxSite(t, threeNodes(addrs))
	nodes := make([]*node, 3)
	for i := range nodes {
		nodes[i] = &node{name: fmt.Sprintf("paygate-%d", i+1), addr: addrs[i], logs: &testenv.Buffer{}, args: []string{
			"--database-url", dbURL, "--redis-url", redisURL, "--config", config,
			"--base-url", "https://" + site.listen, "--trusted-proxies", "127.0.0.1",
			"--rate-limit-test", "1000000", "--rate-limit-live", strconv.Itoa(liveLimit),
			"--recovery-interval", "1s", "--log-level", "warn", "--drain-delay", "500ms",
		}}
		t.Cleanup(func() { nodes[i].stop(t, syscall.SIGTERM) })
	}
	// The three start at once on the empty schema: one migrates, under
	// the migration lock, and the others wait for it.
	errs := make(chan error, len(nodes))
	for _, n := range nodes {
		go func() { errs <- n.launch() }()
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	m := createMerchant(t, dbURL)
	ngx := startNginx(t, site, pool)
	api := &apiClient{http: ngx.client, base: ngx.url, key: m.TestSecretKey}

	// The load.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rec := &record{}
	stop := make(chan struct{})
	var stopOnce sync.Once
	var wg sync.WaitGroup
	halt := func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }
	defer halt()
	began := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("w%d-%d", w, i)
				card := "4242424242424242"
				if i%10 == 9 {
					card = "4000000000000002" // declined
				}
				amount := fmt.Sprintf("%d.%02d", 1+i%90, i%100)
				o := api.pay(ctx, key, paymentJSON(card, amount, "EUR", fmt.Sprintf("customer-%d", w), key), nil)
				rec.add(o)
				if o.paymentID == "" {
					continue
				}
				code, env, err := api.get(ctx, o.paymentID)
				if err != nil || code != http.StatusOK || env.Data.Status != o.state {
					rec.getFailed(fmt.Sprintf("GET %s (%s): %d %q %v", o.paymentID, key, code, env.Data.Status, err))
				}
			}
		}()
	}

	// The sentinel: a payment surely in flight on paygate-2 when it is
	// killed: sent straight to it, and killed once its provider has it
	// (and answers only 3 s later). Its retries go through nginx.
	time.Sleep(1500 * time.Millisecond)
	direct := &apiClient{http: &http.Client{Timeout: 30 * time.Second}, base: "http://" + nodes[1].addr, key: m.TestSecretKey}
	sentinelc := make(chan outcome, 1)
	go func() {
		sentinelc <- api.pay(ctx, "sentinel", paymentJSON("4242424242424242", "99.00", "USD", "customer-sentinel", "sentinel"), direct)
	}()
	waitInFlight(ctx, t, dbURL, "sentinel")
	killedAt := time.Now()
	nodes[1].stop(t, syscall.SIGKILL)
	time.Sleep(500 * time.Millisecond)
	nodes[1].start(t)

	// The rolling restart. Between two nodes, wait out nginx's
	// fail_timeout (2 s), after which it sends to the restarted node again.
	time.Sleep(2500 * time.Millisecond)
	rollFrom := time.Now()
	for _, n := range nodes {
		n.stop(t, syscall.SIGTERM)
		n.start(t)
		time.Sleep(2500 * time.Millisecond)
	}
	rollTo := time.Now()
	halt() // the workers finish the payment they are on, retries included
	loadTime := time.Since(began)
	sentinel := <-sentinelc
	outcomes := append(rec.outcomes, sentinel)

	// Every payment has its final answer, and no answer was lost but with
	// the killed node.
	lostAnswers, conflicts, moved := 0, 0, 0
	for _, o := range outcomes {
		conflicts += o.conflicts
		for _, l := range o.lost {
			lostAnswers++
			if l.at.Before(killedAt) || l.at.After(killedAt.Add(2*time.Second)) {
				t.Errorf("payment %s: answer lost at %s (%s), outside the kill at %s (rolling restart %s–%s)",
					o.key, l.at.Format("15:04:05.000"), l.why, killedAt.Format("15:04:05.000"),
					rollFrom.Format("15:04:05.000"), rollTo.Format("15:04:05.000"))
			}
		}
		switch {
		case o.status == 0:
			t.Errorf("payment %s: no final answer after %d attempts (%d conflicts, lost %v)", o.key, o.attempts, o.conflicts, o.lost)
			continue
		case o.paygate5xx != "" && (len(o.lost) == 0 || !o.replayed):
			t.Errorf("payment %s: paygate answered %s", o.key, o.paygate5xx)
		case o.status != http.StatusCreated && o.status != http.StatusBadRequest && o.paygate5xx == "":
			t.Errorf("payment %s: final answer %d %s", o.key, o.status, o.body)
		}
		if o.paymentID == "" || (o.state != "captured" && o.state != "failed") {
			t.Errorf("payment %s: answer names payment %q in state %q: %s", o.key, o.paymentID, o.state, o.body)
		}
	}
	if sentinel.status != http.StatusCreated || sentinel.state != "captured" || len(sentinel.lost) == 0 || sentinel.conflicts == 0 {
		t.Errorf("the sentinel, in flight on the killed node: %d %q after %d lost answers and %d conflicts, "+
			"want its first answer lost, 409 while recovery had not finished it, then 201 captured: %s",
			sentinel.status, sentinel.state, len(sentinel.lost), sentinel.conflicts, sentinel.body)
	}
	for _, e := range rec.getErrs {
		t.Error(e)
	}

	// What the database holds: one payment per key, final, in the state
	// the client saw; one payment event each; at most one charge each at
	// the provider; every key's record complete.
	checkDatabase(ctx, t, dbURL, m.MerchantID, outcomes)

	// Every node served payments, and nginx moved some requests on.
	for _, line := range ngx.accessLog() {
		if strings.Contains(line, ", ") && strings.Contains(line, "upstream=") {
			moved++
		}
	}
	for _, n := range nodes {
		served := 0
		for _, line := range ngx.accessLog() {
			if strings.Contains(line, "POST /v1/payments") && strings.Contains(line, n.addr) {
				served++
			}
		}
		if served == 0 {
			t.Errorf("%s (%s) served no payment through nginx", n.name, n.addr)
		}
	}

	checkSharedRateLimit(t, nodes, m.LiveSecretKey)

	for _, n := range nodes {
		if strings.Contains(n.logs.String(), "panic:") {
			t.Errorf("%s panicked:\n%s", n.name, n.logs)
		}
	}
	t.Logf("%d payments in %s (%d workers); %d answers lost with the killed node, %d 409s while recovery finished them, %d requests nginx moved to another node",
		len(outcomes), loadTime.Round(100*time.Millisecond), workers, lostAnswers, conflicts, moved)
	if t.Failed() {
		for _, n := range nodes {
			t.Logf("--- %s log ---\n%s", n.name, n.logs)
		}
		t.Logf("--- nginx error log ---\n%s", ngx.errorLog())
	}
}

// waitInFlight waits until the sandbox has received the payment whose
// merchantRef is ref: the payment is inserted and its provider call has
// begun, and no answer will come for 3 s.
func waitInFlight(ctx context.Context, t *testing.T, dbURL, ref string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM sandbox_ledger l JOIN payments p ON p.id = l.payment_id
			WHERE p.merchant_ref = $1 AND p.status = 'created'`, ref).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("payment %s did not reach its provider within 30s", ref)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkDatabase compares what the clients were told with what PostgreSQL
// holds for the merchant.
func checkDatabase(ctx context.Context, t *testing.T, dbURL, merchantID string, outcomes []outcome) {
	t.Helper()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	type row struct{ id, status string }
	byRef := map[string][]row{}
	rows, err := conn.Query(ctx, `SELECT merchant_ref, id, status FROM payments WHERE merchant_id = $1 AND mode = 'test'`, merchantID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var ref string
		var r row
		if err := rows.Scan(&ref, &r.id, &r.status); err != nil {
			t.Fatal(err)
		}
		byRef[ref] = append(byRef[ref], r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	events := map[string][]string{}
	rows, err = conn.Query(ctx, `SELECT payment_id, type FROM events WHERE merchant_id = $1 AND mode = 'test' AND type LIKE 'payment.%'`, merchantID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, typ string
		if err := rows.Scan(&id, &typ); err != nil {
			t.Fatal(err)
		}
		events[id] = append(events[id], typ)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	charges := map[string]int{}
	rows, err = conn.Query(ctx, `SELECT payment_id, count(*) FROM sandbox_ledger WHERE mode = 'test' GROUP BY payment_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		charges[id] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	rows, err = conn.Query(ctx, `SELECT key, state FROM idempotency_keys WHERE merchant_id = $1 AND mode = 'test'`, merchantID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var key, state string
		if err := rows.Scan(&key, &state); err != nil {
			t.Fatal(err)
		}
		keys[key] = state
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	if len(byRef) != len(outcomes) {
		t.Errorf("the database holds payments under %d references, the clients made %d", len(byRef), len(outcomes))
	}
	for _, o := range outcomes {
		got := byRef[o.key]
		if len(got) != 1 {
			t.Errorf("payment %s: %d payments in the database, want exactly 1: %v", o.key, len(got), got)
			continue
		}
		p := got[0]
		if p.id != o.paymentID || p.status != o.state {
			t.Errorf("payment %s: the database holds %s %s, the client was told %s %s", o.key, p.id, p.status, o.paymentID, o.state)
		}
		if ev := events[p.id]; len(ev) != 1 || ev[0] != "payment."+p.status {
			t.Errorf("payment %s (%s, %s): events %v, want exactly [payment.%s]", o.key, p.id, p.status, ev, p.status)
		}
		if charges[p.id] > 1 {
			t.Errorf("payment %s (%s): charged %d times at the provider", o.key, p.id, charges[p.id])
		}
		if keys[o.key] != "complete" {
			t.Errorf("payment %s: idempotency record %q, want complete", o.key, keys[o.key])
		}
	}
}

// checkSharedRateLimit sends a live key's requests to the three nodes in
// turn, straight: the key's budget (liveLimit a minute, a burst of as
// many) must be spent once across them, through Redis, not once per node.
func checkSharedRateLimit(t *testing.T, nodes []*node, liveKey string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	allowed := 0
	began := time.Now()
	refusedBy := map[string]int{}
	for i := range 3 * liveLimit {
		n := nodes[i%3]
		req, _ := http.NewRequest(http.MethodGet, "http://"+n.addr+"/v1/payments/0190b5c3-1111-7aaa-8bbb-123456789abc", nil)
		req.Header.Set("X-API-Key", liveKey)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET with the live key on %s: %v", n.name, err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-RateLimit-Limit"); got != strconv.Itoa(liveLimit) {
			t.Errorf("%s: X-RateLimit-Limit %q, want %d", n.name, got, liveLimit)
		}
		switch resp.StatusCode {
		case http.StatusNotFound:
			allowed++
		case http.StatusTooManyRequests:
			refusedBy[n.name]++
		default:
			t.Errorf("%s: GET of an unknown payment answered %d", n.name, resp.StatusCode)
		}
	}
	// The budget refills one request every minute/liveLimit while the
	// requests go out (well under a second, unless the machine is busy);
	// per-node budgets would allow 3 × liveLimit.
	most := liveLimit + 1 + int(time.Since(began)/(time.Minute/liveLimit))
	if allowed < liveLimit || allowed > most {
		t.Errorf("%d of %d requests with one live key, spread over three nodes, were allowed; want %d to %d (the key's limit, shared through Redis)",
			allowed, 3*liveLimit, liveLimit, most)
	}
	for _, n := range nodes {
		if refusedBy[n.name] == 0 {
			t.Errorf("%s refused none of the key's requests once its budget was spent on the others", n.name)
		}
	}
}
