package dashboard

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// getRouting serves GET /routing to the viewer through the route table.
func (f *dataFixture) getRouting(v *viewer) answer {
	f.t.Helper()
	base := "/dashboard/" + string(v.Mode)
	for _, rt := range f.d.routes {
		if rt.method == http.MethodGet && rt.pattern == "/routing" {
			if rt.need != needRead {
				f.t.Fatalf("/routing needs %v, want every role", rt.need)
			}
			w := httptest.NewRecorder()
			rt.h(w, httptest.NewRequest(http.MethodGet, base+"/routing", nil), v, nil)
			return answer{code: w.Code, body: w.Body.String()}
		}
	}
	f.t.Fatal("no route GET /routing")
	return answer{}
}

func TestRoutingPage(t *testing.T) {
	t.Parallel()
	f := newDataFixture(t)
	now := time.Date(2026, 11, 22, 15, 7, 0, 0, time.UTC)

	// Without scores or payments the page says so.
	f.clock.Set(now)
	pg := f.getRouting(f.a.viewer)
	if pg.code != http.StatusOK {
		t.Fatalf("routing: %d\n%s", pg.code, pg.body)
	}
	for _, want := range []string{`id="no-scores"`, "No answered payments in the last hour.", `id="nav-routing" aria-current="page"`} {
		if !strings.Contains(pg.body, want) {
			t.Errorf("empty routing page lacks %q", want)
		}
	}

	// An hour and a half ago: outside the chart. Then payments in two
	// buckets, and another merchant's, which never show.
	f.clock.Set(now.Add(-90 * time.Minute))
	f.pay(f.a, cardOK, "10.00", "EUR", "c", "")
	f.clock.Set(now.Add(-20 * time.Minute)) // the 14:45 bucket
	f.pay(f.a, cardOK, "10.00", "EUR", "c", "")
	f.pay(f.a, cardOK, "10.00", "EUR", "c", "")
	f.pay(f.a, cardDeclined, "10.00", "EUR", "c", "")
	f.pay(f.a, cardOK, "10.00", "USD", "c", "")
	f.clock.Set(now) // the 15:05 bucket
	f.pay(f.a, cardDeclined, "10.00", "EUR", "c", "")
	for range 5 {
		f.pay(f.b, cardDeclined, "10.00", "EUR", "c", "")
	}

	score := func(mode paygate.Mode, provider, brand string, attempts, approved int64, share float64) paygate.RoutingScore {
		return paygate.RoutingScore{Mode: mode, ProviderID: provider, Currency: "EUR", Brand: brand, Attempts: attempts, Approved: approved,
			Score: float64(approved) / float64(attempts), Share: share, Node: "n1", UpdatedAt: now.Add(-2 * time.Second)}
	}
	if err := f.st.Commit(t.Context(), paygate.Unit{Ops: []paygate.Op{paygate.RoutingScoreReplacement{Node: "n1", At: now.Add(-2 * time.Second), Scores: []paygate.RoutingScore{
		score(paygate.ModeTest, "sandbox-eu", "visa", 200, 190, 0.925),
		score(paygate.ModeTest, "sandbox-global", "visa", 40, 24, 0.075),
		score(paygate.ModeLive, "stripe-live", "visa", 80, 79, 1),
		// A group none of a's payments touched: another merchant's
		// traffic, never shown to a.
		{Mode: paygate.ModeTest, ProviderID: "sandbox-xx", Currency: "GBP", Brand: "visa", Attempts: 7, Approved: 7, Score: 1, Share: 1,
			Node: "n1", UpdatedAt: now.Add(-2 * time.Second)},
	}}}}); err != nil {
		t.Fatal(err)
	}

	pg = f.getRouting(f.a.viewer)
	if pg.code != http.StatusOK {
		t.Fatalf("routing: %d\n%s", pg.code, pg.body)
	}
	for _, want := range []string{
		`id="routing-scores"`, "sandbox-eu", "sandbox-global", "95.0%", "92.5%", "60.0%", "7.5%", "Visa",
		"<svg", "Authorization rate per provider, last hour",
		// EUR to sandbox-eu: 2 of 3 at 14:45, 0 of 1 at 15:05; USD to
		// sandbox-us: 1 of 1.
		"66.7%", "(2/3)", "(0/1)", "(1/1)", "sandbox-us",
		"sandbox-eu authorized 50.0% of 4 payments; sandbox-us authorized 100.0% of 1 payment",
		"(5 answered payments)",
	} {
		if !strings.Contains(pg.body, want) {
			t.Errorf("routing page lacks %q", want)
		}
	}
	for _, never := range []string{"stripe-live", `id="no-scores"`, "(0/6)", "(1/6)", "sandbox-xx", "n1"} {
		if strings.Contains(pg.body, never) {
			t.Errorf("routing page shows %q", never)
		}
	}
	// Twelve 5-minute rows, the last one the current bucket.
	if n := strings.Count(pg.body, `<tr><th scope="row">`); n != 12 {
		t.Errorf("%d rows in the chart's table, want 12", n)
	}

	// Live mode: no live payments, so no scores (not even live ones),
	// none of the test payments.
	live := f.getRouting(f.aLive.viewer)
	if strings.Contains(live.body, "stripe-live") || strings.Contains(live.body, "sandbox-eu") ||
		!strings.Contains(live.body, `id="no-scores"`) || !strings.Contains(live.body, "No answered payments in the last hour.") {
		t.Errorf("live routing page:\n%s", live.body)
	}

	// Scores of a node silent for longer than paygate.RoutingScoresFreshFor
	// are not shown.
	f.clock.Set(now.Add(time.Minute))
	if pg := f.getRouting(f.a.viewer); !strings.Contains(pg.body, `id="no-scores"`) {
		t.Error("stale scores shown")
	}
}

func TestRateChart(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 22, 14, 0, 0, 0, time.UTC)
	buckets, providers := rateBuckets([]paygate.ProviderStat{
		{Start: start, ProviderID: "b", Attempts: 4, Approved: 3},
		{Start: start, ProviderID: "a", Attempts: 2, Approved: 2},
		{Start: start.Add(10 * time.Minute), ProviderID: "a", Attempts: 1, Approved: 0},
		{Start: start.Add(3 * time.Hour), ProviderID: "a", Attempts: 9, Approved: 9}, // outside: ignored
	}, start, start.Add(time.Hour))
	if len(buckets) != 12 || len(providers) != 2 || providers[0] != "a" {
		t.Fatalf("%d buckets, providers %v", len(buckets), providers)
	}
	if c := buckets[0].Cells[1]; c.Attempts != 4 || c.Approved != 3 || c.Rate() != "75.0%" {
		t.Fatalf("b at 14:00: %+v", c)
	}
	if c := buckets[1].Cells[0]; c.Attempts != 0 || c.Rate() != "–" {
		t.Fatalf("a at 14:05: %+v", c)
	}
	svg := string(renderRateChart(rateChart{ID: "r", Loc: time.UTC, Providers: providers, Buckets: buckets}))
	// a's line breaks at 14:05 (no attempts): two single points, no
	// polyline; b has one point.
	if strings.Count(svg, "<polyline") != 0 || strings.Count(svg, `class="rate-point"`) != 3 {
		t.Errorf("chart:\n%s", svg)
	}
	for _, want := range []string{"a, 14:00: 100.0% of 2 payments", "a, 14:10: 0.0% of 1 payment", "b, 14:00: 75.0% of 4 payments", ">100 %</text>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	for _, never := range []string{"style=", "<script"} {
		if strings.Contains(svg, never) {
			t.Errorf("chart has %q", never)
		}
	}
}
