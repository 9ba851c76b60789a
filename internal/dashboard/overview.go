package dashboard

import (
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// overviewDays is how many days of the viewer's time zone the overview
// covers, today included.
const overviewDays = 30

// overviewData is the overview page.
type overviewData struct {
	// Zone names the viewer's time zone, whose days the page counts.
	Zone string
	// First and Last are the first and last day covered, as dates
	// (midnight UTC of the day's date in Zone).
	First, Last time.Time
	Totals      []currencyTotal // by volume, largest first
	// Selected is the currency of the chart; Chart its SVG; Days its
	// numbers for the table.
	Selected string
	Chart    template.HTML
	Days     []chartDay
}

// currencyTotal is one currency's numbers over the period, as
// paygate.PaymentStat counts them.
type currencyTotal struct {
	Currency                                    string
	Count, Succeeded, Failed, Declined, Pending int64
	Volume                                      int64 // minor units, captured
	// Link selects the currency for the chart.
	Link string
}

// SuccessRate is the share of the finished payments (captured or failed)
// that were captured; a dash while none has finished, so that payments
// still pending never read as failures.
func (t currencyTotal) SuccessRate() string {
	return percent(t.Succeeded, t.Succeeded+t.Failed)
}

// overviewPage serves GET /: the last 30 days of the viewer's mode, in the
// viewer's time zone.
func (d *Dashboard) overviewPage(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	loc := v.Loc
	if loc == nil {
		loc = time.UTC
	}
	last := dateOf(d.now(), loc)
	first := last.AddDate(0, 0, -(overviewDays - 1))
	stats, err := d.store.PaymentStats(r.Context(), v.User.MerchantID, v.Mode,
		startOfDate(first, loc), startOfDate(last.AddDate(0, 0, 1), loc))
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	want := strings.ToUpper(r.URL.Query().Get("currency"))
	data := overviewFrom(stats, loc, first, last, want)
	for i := range data.Totals {
		data.Totals[i].Link = modePath(v, "/") + "?" + url.Values{"currency": {data.Totals[i].Currency}}.Encode()
	}
	d.render(w, r, v, http.StatusOK, "overview", data)
}

// dateOf returns the date of t in loc, as midnight UTC of that date: the
// form the overview's days take.
func dateOf(t time.Time, loc *time.Location) time.Time {
	y, m, day := t.In(loc).Date()
	return time.Date(y, m, day, 0, 0, 0, 0, time.UTC)
}

// startOfDate returns the first instant of the date (as dateOf gives it) in
// loc. A daylight-saving day is 23 or 25 hours long; where the clocks skip
// midnight, the day starts at the instant midnight would have been.
func startOfDate(date time.Time, loc *time.Location) time.Time {
	return time.Date(date.Year(), date.Month(), date.Day(), 0, 0, 0, 0, loc)
}

// overviewFrom adds the statistics' periods up per currency and per day of
// loc from first to last (dates, as dateOf gives them), and builds the chart
// of the wanted currency (the one with the largest volume when want is not
// among them), with a bar for every day. A period never straddles a
// midnight of loc (see paygate.StatPeriod), so it falls in one day whole.
func overviewFrom(stats []paygate.PaymentStat, loc *time.Location, first, last time.Time, want string) overviewData {
	data := overviewData{Zone: loc.String(), First: first, Last: last}
	byCur := map[string]*currencyTotal{}
	for _, s := range stats {
		if day := dateOf(s.Start, loc); day.Before(first) || day.After(last) {
			continue
		}
		t := byCur[s.Currency]
		if t == nil {
			t = &currencyTotal{Currency: s.Currency}
			byCur[s.Currency] = t
		}
		t.Count += s.Count
		t.Succeeded += s.Succeeded
		t.Failed += s.Failed
		t.Declined += s.Declined
		t.Pending += s.Pending
		t.Volume = satAdd(t.Volume, s.Volume)
	}
	for _, t := range byCur {
		data.Totals = append(data.Totals, *t)
	}
	sort.Slice(data.Totals, func(i, j int) bool {
		a, b := data.Totals[i], data.Totals[j]
		if a.Volume != b.Volume {
			return a.Volume > b.Volume
		}
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Currency < b.Currency
	})
	if len(data.Totals) == 0 {
		return data
	}
	data.Selected = data.Totals[0].Currency
	if _, ok := byCur[want]; ok {
		data.Selected = want
	}
	days := map[time.Time]*chartDay{}
	for day := first; !day.After(last); day = day.AddDate(0, 0, 1) {
		data.Days = append(data.Days, chartDay{Day: day})
	}
	for i := range data.Days {
		days[data.Days[i].Day] = &data.Days[i]
	}
	for _, s := range stats {
		if s.Currency != data.Selected {
			continue
		}
		if cd := days[dateOf(s.Start, loc)]; cd != nil {
			cd.Volume = satAdd(cd.Volume, s.Volume)
			cd.Declined += s.Declined
		}
	}
	data.Chart = renderChart(dailyChart{
		ID: "chart-" + strings.ToLower(data.Selected), Currency: data.Selected, Zone: data.Zone, Days: data.Days,
	})
	return data
}
