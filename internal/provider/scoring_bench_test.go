package provider

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/score"
	"github.com/paygate/paygate/internal/testenv"
)

// benchRouter is a success_rate route of three providers with full
// windows in the scorer.
func benchRouter(b *testing.B, s score.Scorer) *Router {
	b.Helper()
	route := []paygate.Provider{newRated("a", 80, 1), newRated("b", 90, 2), newRated("c", 70, 3)}
	tab, err := NewScoredTable(map[paygate.Mode]Routes{paygate.ModeTest: {Default: route}},
		map[paygate.Mode]map[string]score.Settings{paygate.ModeTest: {defaultRouteKey: score.Defaults()}})
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewRouter(tab, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	r.SetScorer(s)
	g := score.Group{Mode: paygate.ModeTest, Currency: "EUR", Brand: "visa"}
	for i := range 200 {
		for _, p := range []string{"a", "b", "c"} {
			o := score.Approved
			if i%5 == 0 {
				o = score.Failed
			}
			s.Record(context.Background(), g, p, 200, o)
		}
	}
	return r
}

// BenchmarkRouteDecision is the routing decision of one payment on a
// success_rate route (in process): the route, the scores read, the choice.
func BenchmarkRouteDecision(b *testing.B) {
	r := benchRouter(b, score.NewMemory())
	b.ReportAllocs()
	for b.Loop() {
		_ = r.RouteCard(paygate.ModeTest, "EUR", "visa")
	}
}

// BenchmarkRouteDecisionRedis is the same decision with the scores shared
// through Redis: it reads this node's copy of the shared counters, so it
// costs no round trip (the copy is read again in the background).
func BenchmarkRouteDecisionRedis(b *testing.B) {
	client := redis.NewClient(mustRedisOptions(b))
	b.Cleanup(func() { _ = client.Close() })
	r := benchRouter(b, score.NewRedis(client, score.RedisConfig{}))
	b.ReportAllocs()
	for b.Loop() {
		_ = r.RouteCard(paygate.ModeTest, "EUR", "visa")
	}
}

// BenchmarkRecordRedis is the other per-payment cost with Redis: recording
// one attempt's outcome, one script and one round trip that also brings
// back the group's counters.
func BenchmarkRecordRedis(b *testing.B) {
	client := redis.NewClient(mustRedisOptions(b))
	b.Cleanup(func() { _ = client.Close() })
	s := score.NewRedis(client, score.RedisConfig{})
	g := score.Group{Mode: paygate.ModeTest, Currency: "EUR", Brand: "bench"}
	b.ReportAllocs()
	for b.Loop() {
		s.Record(context.Background(), g, "a", 200, score.Approved)
	}
}

func mustRedisOptions(b *testing.B) *redis.Options {
	opt, err := redis.ParseURL(testenv.RedisURL(b))
	if err != nil {
		b.Fatal(err)
	}
	return opt
}
