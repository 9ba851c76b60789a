package dashboard

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestOverview(t *testing.T) {
	t.Parallel()
	f := newDataFixture(t)
	today := time.Date(2026, 11, 22, 15, 0, 0, 0, time.UTC)
	// 31 days ago: outside the 30 days.
	f.clock.Set(today.AddDate(0, 0, -30))
	f.pay(f.a, cardOK, "999.00", "EUR", "c", "")
	f.clock.Set(today.AddDate(0, 0, -29).Add(-14 * time.Hour)) // the first day, 01:00 UTC
	f.pay(f.a, cardOK, "10.00", "EUR", "c", "")
	f.clock.Set(today.AddDate(0, 0, -2))
	f.pay(f.a, cardOK, "20.00", "EUR", "c", "")
	f.pay(f.a, cardDeclined, "5.00", "EUR", "c", "")
	f.pay(f.a, cardOK, "1000", "JPY", "c", "")
	f.clock.Set(today)
	f.pay(f.a, cardOK, "2.50", "EUR", "c", "")
	f.pay(f.b, cardOK, "5000.00", "EUR", "c", "") // another merchant's

	pg := f.get(f.a.viewer, "/")
	if pg.code != http.StatusOK {
		t.Fatalf("overview: %d\n%s", pg.code, pg.body)
	}
	for _, want := range []string{
		"UTC days", `datetime="2026-10-24"`, `datetime="2026-11-22"`,
		"€32.50", // 10 + 20 + 2.50: succeeded volume in the 30 days
		"¥1,000", // JPY's own line
		"75.0%",  // 3 of the 4 EUR payments succeeded
		"<svg", "Daily volume and declines in EUR", `href="/dashboard/test/?currency=JPY"`,
		"The chart's numbers as a table",
	} {
		if !strings.Contains(pg.body, want) {
			t.Errorf("overview does not show %q", want)
		}
	}
	for _, never := range []string{"€999.00", "€1,031.50", "€5,000.00"} {
		if strings.Contains(pg.body, never) {
			t.Errorf("overview counts %q", never)
		}
	}
	jpy := f.get(f.a.viewer, "/?currency=JPY")
	if !strings.Contains(jpy.body, "Daily volume and declines in JPY") {
		t.Errorf("the JPY chart is not selected")
	}
	empty := f.get(f.aLive.viewer, "/")
	if empty.code != http.StatusOK || !strings.Contains(empty.body, "No payments in these 30 days yet.") {
		t.Errorf("live overview: %d", empty.code)
	}
}
