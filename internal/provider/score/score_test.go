package score

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
)

var eurVisa = Group{Mode: paygate.ModeTest, Currency: "EUR", Brand: "visa"}

// seeded is a deterministic random source for one goroutine.
func seeded(seed uint64) Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// fixedRand answers IntN from a list, for exact choices.
type fixedRand struct {
	t     *testing.T
	draws []int
}

func (f *fixedRand) IntN(n int) int {
	if len(f.draws) == 0 {
		f.t.Fatalf("IntN(%d) drawn more often than the test expects", n)
	}
	v := f.draws[0]
	f.draws = f.draws[1:]
	if v >= n {
		f.t.Fatalf("draw %d out of [0, %d)", v, n)
	}
	return v
}

// fill records approved of attempts (approved first) for the provider.
func fill(s Scorer, g Group, provider string, window, attempts, approved int) {
	for i := range attempts {
		o := Failed
		if i < approved {
			o = Approved
		}
		s.Record(context.Background(), g, provider, window, o)
	}
}

func stats(s Scorer, g Group, providers ...string) []Stat {
	out := make([]Stat, len(providers))
	s.Stats(g, providers, out)
	return out
}

func TestWindowSlides(t *testing.T) {
	m := NewMemory()
	fill(m, eurVisa, "a", 10, 10, 10) // 10 approved
	fill(m, eurVisa, "a", 10, 4, 0)   // 4 failed push 4 approved out
	got := stats(m, eurVisa, "a")[0]
	if got.Attempts != 10 || got.Approved != 6 {
		t.Fatalf("after 14 attempts in a window of 10: %+v, want 10 attempts, 6 approved", got)
	}
	fill(m, eurVisa, "a", 10, 10, 0)
	if got := stats(m, eurVisa, "a")[0]; got.Attempts != 10 || got.Approved != 0 || got.Score() != 0 {
		t.Fatalf("after 10 more failures: %+v, want 10 attempts, none approved", got)
	}
	// A shorter window (configuration changed) drops the oldest at once.
	fill(m, eurVisa, "a", 3, 1, 1)
	if got := stats(m, eurVisa, "a")[0]; got.Attempts != 3 || got.Approved != 1 {
		t.Fatalf("window shrunk to 3: %+v, want 3 attempts, 1 approved", got)
	}
	// A longer one grows from there.
	fill(m, eurVisa, "a", 5, 2, 2)
	if got := stats(m, eurVisa, "a")[0]; got.Attempts != 5 || got.Approved != 3 {
		t.Fatalf("window grown to 5: %+v, want 5 attempts, 3 approved", got)
	}
	// Groups are apart: another brand knows nothing.
	mc := eurVisa
	mc.Brand = "mastercard"
	if got := stats(m, mc, "a")[0]; got != (Stat{}) {
		t.Fatalf("another brand: %+v, want nothing", got)
	}
}

func TestUncountedDeclines(t *testing.T) {
	for _, code := range []string{"insufficient_funds", "expired_card", "incorrect_cvc", "blocked"} {
		if Declined(code) != Uncounted {
			t.Errorf("decline %s counts against the provider", code)
		}
	}
	for _, code := range []string{"generic_decline", "do_not_honor", ""} {
		if Declined(code) != Failed {
			t.Errorf("decline %q does not count", code)
		}
	}
	m := NewMemory()
	fill(m, eurVisa, "a", 10, 2, 2)
	m.Record(context.Background(), eurVisa, "a", 10, Declined("insufficient_funds"))
	m.Record(context.Background(), eurVisa, "b", 10, Declined("expired_card"))
	got := stats(m, eurVisa, "a", "b")
	if got[0].Attempts != 2 || got[0].Approved != 2 || got[1].Attempts != 0 {
		t.Fatalf("uncounted declines entered the windows: %+v", got)
	}
	// They are traffic all the same: a got 3 of 4 attempts.
	if got[0].Traffic != 3 || got[1].Traffic != 1 || got[0].Share != 0.75 || got[1].Share != 0.25 {
		t.Fatalf("traffic: %+v, want 3 and 1 (shares 0.75, 0.25)", got)
	}
}

func TestShareSlides(t *testing.T) {
	m := NewMemory()
	fill(m, eurVisa, "a", 4, 4, 4)
	fill(m, eurVisa, "b", 4, 3, 3)
	got := stats(m, eurVisa, "a", "b")
	if got[0].Traffic != 1 || got[1].Traffic != 3 || got[1].Share != 0.75 {
		t.Fatalf("shares over the last 4 attempts: %+v, want a 1, b 3", got)
	}
	scores := m.Scores()
	if len(scores) != 2 || scores[0].ProviderID != "a" || scores[1].ProviderID != "b" ||
		scores[1].Attempts != 3 || scores[1].Score != 1 || scores[0].Share != 0.25 {
		t.Fatalf("Scores: %+v", scores)
	}
}

func TestChooseBestAndTies(t *testing.T) {
	s := Settings{Window: 200, Explore: 0, MinSamples: 20}
	st := []Stat{{Attempts: 100, Approved: 60}, {Attempts: 100, Approved: 90}, {Attempts: 50, Approved: 45}}
	if got := Choose(st, s, &fixedRand{t: t}); got != 1 {
		t.Fatalf("best of 0.6, 0.9, 0.9: %d, want 1 (the first of the tie in route order)", got)
	}
	st[1].Approved = 80
	if got := Choose(st, s, &fixedRand{t: t}); got != 2 {
		t.Fatalf("best of 0.6, 0.8, 0.9: %d, want 2", got)
	}
	if got := Choose(st[:1], s, &fixedRand{t: t}); got != 0 {
		t.Fatalf("one provider: %d", got)
	}
}

func TestChooseExploresUnderSampledFirst(t *testing.T) {
	s := Settings{Window: 200, Explore: 5, MinSamples: 20}
	st := []Stat{{Attempts: 200, Approved: 200}, {Attempts: 19, Approved: 0}, {Attempts: 100, Approved: 1}}
	// No draw for explore: the under-sampled one goes first, whatever its score.
	if got := Choose(st, s, &fixedRand{t: t}); got != 1 {
		t.Fatalf("with one under-sampled provider: %d, want 1", got)
	}
	st[2].Attempts = 0
	if got := Choose(st, s, &fixedRand{t: t, draws: []int{1}}); got != 2 {
		t.Fatalf("second of two under-sampled: %d, want 2", got)
	}
	if got := Choose(st, s, &fixedRand{t: t, draws: []int{0}}); got != 1 {
		t.Fatalf("first of two under-sampled: %d, want 1", got)
	}
	// minSamples 0: no exploration of empty windows.
	s.MinSamples, s.Explore = 0, 0
	if got := Choose(st, s, &fixedRand{t: t}); got != 0 {
		t.Fatalf("minSamples 0: %d, want the best (0)", got)
	}
}

func TestChooseExploreShare(t *testing.T) {
	s := Settings{Window: 200, Explore: 5, MinSamples: 20}
	st := []Stat{{Attempts: 200, Approved: 100}, {Attempts: 200, Approved: 190}, {Attempts: 200, Approved: 150}}
	rnd := seeded(42)
	const n = 100_000
	got := make([]int, len(st))
	for range n {
		got[Choose(st, s, rnd)]++
	}
	explored := float64(n-got[1]) / n
	if math.Abs(explored-0.05) > 0.005 {
		t.Fatalf("explored %.4f of payments, want 0.05 ± 0.005 (%v)", explored, got)
	}
	// The others share the exploration evenly.
	if math.Abs(float64(got[0]-got[2])) > 0.1*float64(n-got[1]) {
		t.Fatalf("exploration uneven between the others: %v", got)
	}
	s.Explore = 0
	for range 1000 {
		if c := Choose(st, s, rnd); c != 1 {
			t.Fatalf("explore 0 chose %d", c)
		}
	}
	s.Explore = 100
	for range 1000 {
		if c := Choose(st, s, rnd); c == 1 {
			t.Fatal("explore 100 chose the best")
		}
	}
}

// TestLearnsBetterProvider runs the scorer and Choose together against two
// simulated providers: traffic moves to the better one.
func TestLearnsBetterProvider(t *testing.T) {
	m := NewMemory()
	s := Defaults()
	rnd := seeded(7)
	rate := map[string]int{"a": 60, "b": 95}
	providers := []string{"a", "b"}
	st := make([]Stat, 2)
	sent := map[string]int{}
	for i := range 2000 {
		m.Stats(eurVisa, providers, st)
		p := providers[Choose(st, s, rnd)]
		if i >= 1000 {
			sent[p]++
		}
		o := Failed
		if rnd.IntN(100) < rate[p] {
			o = Approved
		}
		m.Record(context.Background(), eurVisa, p, s.Window, o)
	}
	if share := float64(sent["b"]) / 1000; share < 0.9 {
		t.Fatalf("the better provider got %.3f of the last 1000 payments, want at least 0.9 (%v)", share, sent)
	}
}
