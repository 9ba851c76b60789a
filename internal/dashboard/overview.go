package dashboard

import (
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strconv"
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
	// Range is the date range form as submitted; Errors why it could not
	// be used (the default range is shown instead); Presets links to the
	// usual ranges. Label says which range is shown.
	Range   overviewRange
	Errors  []string
	Presets []rangePreset
	Label   string
	// NoLiveProvider is set in live mode when no provider serves live
	// payments: every live payment would fail.
	NoLiveProvider bool
}

// overviewRange is the overview's date range form: days in the viewer's
// zone, both included.
type overviewRange struct {
	From, To string
}

// rangePreset is a link to the last N days.
type rangePreset struct {
	Label, Link string
	Current     bool
}

// maxOverviewDays bounds a chosen range, so that a page reads at most a
// year of statistics.
const maxOverviewDays = 366

// currencyTotal is one currency's numbers over the period, as
// paygate.PaymentStat counts them.
type currencyTotal struct {
	Currency                                    string
	Count, Succeeded, Failed, Declined, Pending int64
	Volume                                      int64 // minor units, captured
	Refunded                                    int64 // of those, refunded
	// Link selects the currency for the chart.
	Link string
}

// SuccessRate is the share of the finished payments (captured or failed)
// that were captured; a dash while none has finished, so that payments
// still pending never read as failures.
func (t currencyTotal) SuccessRate() string {
	return percent(t.Succeeded, t.Succeeded+t.Failed)
}

// Net is the net volume: captured minus refunded.
func (t currencyTotal) Net() int64 { return t.Volume - t.Refunded }

// overviewPage serves GET /: the last 30 days of the viewer's mode, in the
// viewer's time zone, or the days from ?from= to ?to= (or the last ?days=).
func (d *Dashboard) overviewPage(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	loc := v.Loc
	if loc == nil {
		loc = time.UTC
	}
	q := r.URL.Query()
	today := dateOf(d.now(), loc)
	first, last, rng, label, errs := readOverviewRange(q, today)
	stats, err := d.store.PaymentStats(r.Context(), v.User.MerchantID, v.Mode,
		startOfDate(first, loc), startOfDate(last.AddDate(0, 0, 1), loc))
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	want := strings.ToUpper(r.URL.Query().Get("currency"))
	data := overviewFrom(stats, loc, first, last, want)
	data.Range, data.Errors, data.Label = rng, errs, label
	keep := url.Values{}
	if rng.From != "" || rng.To != "" {
		keep.Set("from", first.Format(time.DateOnly))
		keep.Set("to", last.Format(time.DateOnly))
	} else if n := q.Get("days"); n != "" && len(errs) == 0 {
		keep.Set("days", n)
	}
	for i := range data.Totals {
		link := url.Values{"currency": {data.Totals[i].Currency}}
		for k, vs := range keep {
			link[k] = vs
		}
		data.Totals[i].Link = modePath(v, "/") + "?" + link.Encode()
	}
	for _, n := range []int{7, 30, 90, 365} {
		data.Presets = append(data.Presets, rangePreset{
			Label: "Last " + strconv.Itoa(n) + " days", Link: modePath(v, "/") + "?days=" + strconv.Itoa(n),
			Current: rng.From == "" && rng.To == "" && last.Equal(today) && first.Equal(today.AddDate(0, 0, -(n-1))),
		})
	}
	if v.Mode == paygate.ModeLive && d.cfg.LiveProviders != nil && d.cfg.LiveProviders() == 0 {
		data.NoLiveProvider = true
	}
	d.render(w, r, v, http.StatusOK, "overview", data)
}

// readOverviewRange reads the overview's range: from and to (dates,
// inclusive, the missing end being today or 29 days before to), or the last
// days days, or the last overviewDays days. An invalid range yields
// messages and the default range.
func readOverviewRange(q url.Values, today time.Time) (first, last time.Time, rng overviewRange, label string, errs []string) {
	rng = overviewRange{From: strings.TrimSpace(q.Get("from")), To: strings.TrimSpace(q.Get("to"))}
	first, last = today.AddDate(0, 0, -(overviewDays-1)), today
	label = "The last 30 days"
	if rng.From == "" && rng.To == "" {
		if s := q.Get("days"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > maxOverviewDays {
				return first, last, rng, label, []string{"The number of days must be 1 to " + strconv.Itoa(maxOverviewDays) + "."}
			}
			return today.AddDate(0, 0, -(n - 1)), today, rng, "The last " + strconv.Itoa(n) + " days", nil
		}
		return first, last, rng, label, nil
	}
	parse := func(s, what string) (time.Time, bool) {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			errs = append(errs, "The "+what+" date must be a date like 2026-11-22.")
			return time.Time{}, false
		}
		return d, true
	}
	f, t := today, today
	okF, okT := true, true
	if rng.To != "" {
		t, okT = parse(rng.To, "end")
	}
	if rng.From != "" {
		f, okF = parse(rng.From, "start")
	} else {
		f = t.AddDate(0, 0, -(overviewDays - 1))
	}
	switch {
	case !okF || !okT:
	case t.Before(f):
		errs = append(errs, "The end date must not be before the start date.")
	case t.Sub(f) >= maxOverviewDays*24*time.Hour:
		errs = append(errs, "A range has at most "+strconv.Itoa(maxOverviewDays)+" days.")
	default:
		return f, t, rng, "From " + f.Format("2 Jan 2006") + " to " + t.Format("2 Jan 2006"), nil
	}
	return first, last, rng, label, errs
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
		t.Refunded = satAdd(t.Refunded, s.Refunded)
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
