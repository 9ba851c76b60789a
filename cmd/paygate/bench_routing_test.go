package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/testenv"
)

// benchRoutingJSON runs bench routing with args and --json.
func benchRoutingJSON(t *testing.T, args ...string) routingSimReport {
	t.Helper()
	r := cliRun(t, nil, append([]string{"bench", "routing", "--json"}, args...)...).mustSucceed(t)
	var rep routingSimReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v: %q", err, r.stdout)
	}
	return rep
}

// TestBenchRouting: on the same payments, success_rate moves traffic off
// the degraded provider and authorizes more than priority, which stays on
// it; a run is reproducible from its seed.
func TestBenchRouting(t *testing.T) {
	t.Parallel()
	rep := benchRoutingJSON(t, "--seed", "7", "--payments", "4000")
	if len(rep.Runs) != 2 || rep.DegradeAt != 2000 || rep.RecoverAt != 2800 || rep.Window != 200 || rep.Explore != 5 || rep.MinSamples != 20 {
		t.Fatalf("report %+v", rep)
	}
	prio, sr := rep.Runs[0], rep.Runs[1]
	if prio.Strategy != provider.StrategyPriority || sr.Strategy != provider.StrategySuccessRate || sr.Scores != "in-process" {
		t.Fatalf("runs %+v / %+v", prio, sr)
	}
	// Priority sends everything to sandbox-a and so suffers its
	// degradation in full.
	if prio.Shares[simDegraded] != 1 || prio.MovedAwayAfter != nil || prio.CameBackAfter != nil || prio.RedisRoundTrips != nil {
		t.Fatalf("priority run %+v", prio)
	}
	if d := prio.Phases[1].AuthorizationRate; d < 0.55 || d > 0.65 {
		t.Fatalf("priority's degraded phase authorized %v, want about 0.6", d)
	}
	if sr.MovedAwayAfter == nil || *sr.MovedAwayAfter > 800 {
		t.Fatalf("success_rate moved away after %v payments", sr.MovedAwayAfter)
	}
	if sr.Phases[1].AuthorizationRate < prio.Phases[1].AuthorizationRate+0.1 || sr.AuthorizationRate <= prio.AuthorizationRate {
		t.Fatalf("success_rate %v (degraded %v) vs priority %v (degraded %v)", sr.AuthorizationRate, sr.Phases[1].AuthorizationRate,
			prio.AuthorizationRate, prio.Phases[1].AuthorizationRate)
	}
	if sr.DecisionNs <= 0 || sr.Approved != int(sr.AuthorizationRate*float64(sr.Payments)+0.5) {
		t.Fatalf("success_rate run %+v", sr)
	}

	again := benchRoutingJSON(t, "--seed", "7", "--payments", "4000")
	for i := range rep.Runs {
		a, b := rep.Runs[i], again.Runs[i]
		if a.Approved != b.Approved || payments(a.MovedAwayAfter) != payments(b.MovedAwayAfter) || payments(a.CameBackAfter) != payments(b.CameBackAfter) {
			t.Fatalf("run %d differs with the same seed: %+v / %+v", i, a, b)
		}
	}
	other := benchRoutingJSON(t, "--seed", "8", "--payments", "4000")
	if other.Runs[1].Approved == sr.Approved && other.Runs[0].Approved == prio.Approved {
		t.Fatal("seeds 7 and 8 gave the same runs")
	}
}

// TestBenchRoutingRedis: with the scores in Redis the decisions are the
// in-process ones, at one round trip per payment.
func TestBenchRoutingRedis(t *testing.T) {
	t.Parallel()
	rep := benchRoutingJSON(t, "--seed", "3", "--payments", "2000", "--redis-url", testenv.RedisURL(t))
	if len(rep.Runs) != 3 {
		t.Fatalf("runs %+v", rep.Runs)
	}
	mem, red := rep.Runs[1], rep.Runs[2]
	if red.Scores != "redis" || red.RedisRoundTrips == nil || *red.RedisRoundTrips < 1 || *red.RedisRoundTrips > 1.05 {
		t.Fatalf("redis run %+v", red)
	}
	if red.Approved != mem.Approved {
		t.Fatalf("redis run approved %d, in process %d", red.Approved, mem.Approved)
	}
}

func TestBenchRoutingUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--payments", "10"}, "--payments must be from 1000"},
		{[]string{"--explore", "101"}, "--explore must be from 0 to 100"},
		{[]string{"--window", "0"}, "--window must be from 1"},
		{[]string{"--redis-url", "redis://10.1.2.3:6379/0"}, "not a loopback address"},
		{[]string{"--bogus"}, "unknown flag --bogus"},
	} {
		cliRun(t, nil, append([]string{"bench", "routing"}, c.args...)...).mustFail(t, exitUsage, c.want)
	}
	r := cliRun(t, nil, "bench", "routing", "--payments", "1000").mustSucceed(t)
	for _, want := range []string{"priority", "success_rate (in-process)", "moved away", "sandbox-a drops to 60.0 % at payment 500"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("text report lacks %q:\n%s", want, r.stdout)
		}
	}
}
