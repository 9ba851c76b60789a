package dashboard

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/sandbox"
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
		"The last 30 days in your time zone, UTC", `datetime="2026-10-24"`, `datetime="2026-11-22"`,
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
	if empty.code != http.StatusOK || !strings.Contains(empty.body, "No payments in these days yet.") {
		t.Errorf("live overview: %d", empty.code)
	}
}

// dayRow returns the cells of the chart table's row of the date
// (YYYY-MM-DD), "" when there is none.
func dayRow(body, date string) string {
	m := regexp.MustCompile(`<tr><th scope="row"><time datetime="` + regexp.QuoteMeta(date) + `">[^<]*</time></th>(.*?)</tr>`).
		FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// The overview counts the last 30 days of the viewer's zone, and its
// days are the zone's days. India is UTC+5:30: a payment at 18:40 UTC is
// on the next day there, one at 18:20 UTC on the same day (hourly periods
// would put both in the 18:00 hour and so on the same day).
func TestOverviewInViewerZone(t *testing.T) {
	t.Parallel()
	f := newDataFixture(t)
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	at := func(month time.Month, day, hour, minute int) time.Time {
		return time.Date(2026, month, day, hour, minute, 0, 0, time.UTC)
	}
	for _, p := range []struct {
		when   time.Time
		amount string
	}{
		{at(10, 24, 18, 20), "1.00"},  // 23:50 on 24 Oct in Kolkata: a day too early
		{at(10, 24, 18, 40), "2.00"},  // 00:10 on 25 Oct: the first day
		{at(11, 22, 18, 20), "4.00"},  // 23:50 on 22 Nov
		{at(11, 22, 18, 40), "8.00"},  // 00:10 on 23 Nov: today
		{at(11, 22, 19, 59), "16.00"}, // 01:29 on 23 Nov
	} {
		f.clock.Set(p.when)
		f.pay(f.a, cardOK, p.amount, "EUR", "c", "")
	}
	f.clock.Set(at(11, 22, 20, 0)) // 01:30 on 23 Nov in Kolkata, still 22 Nov in UTC
	v := *f.a.viewer
	v.Loc = kolkata
	pg := f.get(&v, "/")
	if pg.code != http.StatusOK {
		t.Fatalf("overview: %d\n%s", pg.code, pg.body)
	}
	for _, want := range []string{
		"The last 30 days in your time zone, Asia/Kolkata", `datetime="2026-10-25"`, `datetime="2026-11-23"`,
		"€30.00", // 2 + 4 + 8 + 16
		"Days are days in Asia/Kolkata", ">Day (Asia/Kolkata)<",
	} {
		if !strings.Contains(pg.body, want) {
			t.Errorf("overview in Kolkata does not show %q", want)
		}
	}
	for _, never := range []string{"€31.00", `datetime="2026-10-24"`} {
		if strings.Contains(pg.body, never) {
			t.Errorf("overview in Kolkata shows %q", never)
		}
	}
	for date, want := range map[string]string{
		"2026-10-25": ">€2.00<", "2026-11-22": ">€4.00<", "2026-11-23": ">€24.00<", "2026-11-01": ">€0.00<",
	} {
		if row := dayRow(pg.body, date); !strings.Contains(row, want) {
			t.Errorf("day %s in Kolkata: %q, want %s", date, row, want)
		}
	}

	// Nepal is UTC+5:45: 18:10 UTC on 22 Nov is 23:55 there, 18:20 is
	// 00:05 on 23 Nov.
	kathmandu, err := time.LoadLocation("Asia/Kathmandu")
	if err != nil {
		t.Fatal(err)
	}
	data := overviewFrom([]paygate.PaymentStat{
		{Start: at(11, 22, 18, 0), Currency: "EUR", Count: 1, Succeeded: 1, Volume: 100},
		{Start: at(11, 22, 18, 15), Currency: "EUR", Count: 1, Succeeded: 1, Volume: 200},
	}, kathmandu, time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), "")
	if n := len(data.Days); n != 30 {
		t.Fatalf("%d days, want 30", n)
	}
	if d22, d23 := data.Days[28], data.Days[29]; d22.Volume != 100 || d23.Volume != 200 {
		t.Errorf("Kathmandu: 22 Nov %d, 23 Nov %d; want 100 and 200", d22.Volume, d23.Volume)
	}
}

// The success rate counts only finished payments: captured ones out of
// captured and failed ones. Pending payments (created, waiting for 3-D
// Secure, authorized) are counted apart, voided ones are in neither, and
// the volume is what the captured payments captured.
func TestOverviewRates(t *testing.T) {
	t.Parallel()
	f := newDataFixture(t)
	f.pay(f.a, cardOK, "10.00", "EUR", "c", "")
	f.pay(f.a, cardDeclined, "5.00", "EUR", "c", "")
	// A provider's error fails the payment (502), without a decline.
	if status, data := f.call(f.a, http.MethodPost, "/v1/payments", map[string]any{
		"amount": "3.00", "currency": "EUR", "customerId": "c",
		"card": map[string]any{"number": sandbox.CardProviderError, "expiryMonth": "12", "expiryYear": "40", "cvv": "123",
			"holderName": "Ada Lovelace"},
	}); status != http.StatusBadGateway {
		t.Fatalf("payment with a provider error: %d %v", status, data)
	}
	f.pay(f.a, sandbox.Card3DS, "7.00", "EUR", "c", "")
	f.pay(f.a, sandbox.CardAuthorize, "4.00", "EUR", "c", "")
	voided := f.pay(f.a, sandbox.CardAuthorize, "6.00", "EUR", "c", "")
	if status, data := f.call(f.a, http.MethodPost, "/v1/payments/"+voided+"/void", map[string]any{}); status != http.StatusOK {
		t.Fatalf("void: %d %v", status, data)
	}
	f.pay(f.a, sandbox.Card3DS, "9.00", "GBP", "c", "")

	pg := f.get(f.a.viewer, "/")
	if pg.code != http.StatusOK {
		t.Fatalf("overview: %d\n%s", pg.code, pg.body)
	}
	for _, want := range []string{
		">€10.00<", // captured only: not the authorized €4 nor the voided €6
		"6 payments · 33.3% succeeded · 1 declined · 2 pending", // 1 of 3 finished
		// A currency with only a payment waiting for 3-D Secure has no
		// rate yet.
		"1 payment · – succeeded · 0 declined · 1 pending",
	} {
		if !strings.Contains(pg.body, want) {
			t.Errorf("overview does not show %q", want)
		}
	}
	for _, never := range []string{">€20.00<", "50.0%", "0.0%", ">€35.00<"} {
		if strings.Contains(pg.body, never) {
			t.Errorf("overview shows %q", never)
		}
	}
	// The chart's declines are CARD_DECLINED only, not the provider's
	// error.
	today := f.clock.Now().Format(time.DateOnly)
	if row := dayRow(pg.body, today); !strings.Contains(row, `>€10.00</span></td><td class="num">1</td>`) {
		t.Errorf("today's chart row: %q", row)
	}
}
