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

// overviewDays is how many UTC days the overview covers, today included.
const overviewDays = 30

// overviewData is the overview page.
type overviewData struct {
	// First and Last are the first and last UTC day covered.
	First, Last time.Time
	Totals      []currencyTotal // by volume, largest first
	// Selected is the currency of the chart; Chart its SVG; Days its
	// numbers for the table.
	Selected string
	Chart    template.HTML
	Days     []chartDay
}

// currencyTotal is one currency's numbers over the period.
type currencyTotal struct {
	Currency                           string
	Count, Succeeded, Declined, Failed int64
	Volume                             int64 // minor units
	// Link selects the currency for the chart.
	Link string
}

// overviewPage serves GET /: the last 30 UTC days of the viewer's mode.
func (d *Dashboard) overviewPage(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	now := d.now().UTC()
	last := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	first := last.AddDate(0, 0, -(overviewDays - 1))
	stats, err := d.store.PaymentStats(r.Context(), v.User.MerchantID, v.Mode, first, last.AddDate(0, 0, 1))
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	want := strings.ToUpper(r.URL.Query().Get("currency"))
	data := overviewFrom(stats, first, last, want)
	for i := range data.Totals {
		data.Totals[i].Link = modePath(v, "/") + "?" + url.Values{"currency": {data.Totals[i].Currency}}.Encode()
	}
	d.render(w, r, v, http.StatusOK, "overview", data)
}

// overviewFrom sums the daily statistics per currency and builds the chart
// of the wanted currency (the one with the largest volume when want is not
// among them), with a bar for every day from first to last.
func overviewFrom(stats []paygate.DailyStat, first, last time.Time, want string) overviewData {
	data := overviewData{First: first, Last: last}
	byCur := map[string]*currencyTotal{}
	for _, s := range stats {
		t := byCur[s.Currency]
		if t == nil {
			t = &currencyTotal{Currency: s.Currency}
			byCur[s.Currency] = t
		}
		t.Count += s.Count
		t.Succeeded += s.Succeeded
		t.Declined += s.Declined
		t.Failed += s.Failed
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
		if cd := days[s.Day.UTC()]; cd != nil {
			cd.Volume = satAdd(cd.Volume, s.Volume)
			cd.Declined += s.Declined
		}
	}
	data.Chart = renderChart(dailyChart{ID: "chart-" + strings.ToLower(data.Selected), Currency: data.Selected, Days: data.Days})
	return data
}
