package dashboard

import (
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// The Routing page (decisions.md section 21): what the success-rate router
// knows of each provider for the currencies and card brands of this
// merchant's recent payments, and how each provider authorized this
// merchant's payments over the last hour.

// routingChartSpan is how far back the chart looks.
const routingChartSpan = time.Hour

// routingData is the Routing page.
type routingData struct {
	// Scores are the router's scores of the viewer's mode, by currency,
	// brand and provider, for the (currency, brand) groups of this
	// merchant's answered payments of the chart's hour only: the scores
	// are the installation's, and other groups would tell of other
	// merchants' traffic.
	Scores []scoreRow
	// Chart is the SVG of the authorization rate per provider; Buckets and
	// Providers its numbers for the table, Providers sorted by id. From and
	// To bound the hour it covers.
	Chart     template.HTML
	Buckets   []rateBucket
	Providers []string
	From, To  time.Time
	// Attempts counts the hour's answered payments.
	Attempts int64
}

// scoreRow is a score as the page shows it: no node name, no report time
// (the installation's internals).
type scoreRow struct {
	ProviderID, Currency, Brand string
	Attempts, Approved          int64
	Share                       float64
}

// ScoreText is the score as a percentage, a dash without attempts.
func (r scoreRow) ScoreText() string { return percent(r.Approved, r.Attempts) }

// ShareText is the share of traffic as a percentage with one decimal.
func (r scoreRow) ShareText() string {
	return strconv.FormatFloat(r.Share*100, 'f', 1, 64) + "%"
}

// rateBucket is one paygate.ProviderStatPeriod of the chart: each
// provider's numbers, in the order of routingData.Providers.
type rateBucket struct {
	Start time.Time
	Cells []rateCell
}

// rateCell is one provider's numbers in one bucket.
type rateCell struct {
	Attempts, Approved int64
}

// Rate is the cell's authorization rate, a dash without attempts.
func (c rateCell) Rate() string { return percent(c.Approved, c.Attempts) }

// routingPage serves GET /routing: a chart of this merchant's
// authorization rate per provider over the last hour, in 5-minute buckets,
// and the success-rate router's scores of the viewer's mode (the
// installation's, from every merchant's payments) for the currencies and
// card brands of this merchant's payments in that hour.
func (d *Dashboard) routingPage(w http.ResponseWriter, r *http.Request, v *viewer, _ []string) {
	now := d.now()
	var data routingData
	// Twelve whole buckets, the last one the current (partial) one.
	data.To = now.Truncate(paygate.ProviderStatPeriod).Add(paygate.ProviderStatPeriod)
	data.From = data.To.Add(-routingChartSpan)
	stats, err := d.store.ProviderStats(r.Context(), v.User.MerchantID, v.Mode, data.From, data.To)
	if err != nil {
		d.fail(w, r, v, err)
		return
	}
	type group struct{ currency, brand string }
	own := map[group]bool{}
	for _, s := range stats {
		own[group{s.Currency, s.Brand}] = true
	}
	if len(own) > 0 {
		all, err := d.store.RoutingScores(r.Context(), v.Mode, now.Add(-paygate.RoutingScoresFreshFor))
		if err != nil {
			d.fail(w, r, v, err)
			return
		}
		for _, s := range all {
			if own[group{s.Currency, s.Brand}] {
				data.Scores = append(data.Scores, scoreRow{ProviderID: s.ProviderID, Currency: s.Currency, Brand: s.Brand,
					Attempts: s.Attempts, Approved: s.Approved, Share: s.Share})
			}
		}
	}
	loc := v.Loc
	if loc == nil {
		loc = time.UTC
	}
	data.Buckets, data.Providers = rateBuckets(stats, data.From, data.To)
	for _, s := range stats {
		data.Attempts += s.Attempts
	}
	data.Chart = renderRateChart(rateChart{ID: "rate-chart", Loc: loc, Providers: data.Providers, Buckets: data.Buckets})
	d.render(w, r, v, http.StatusOK, "routing", data)
}

// rateBuckets lays the statistics out in every period from from to to,
// with a cell per provider that has any.
func rateBuckets(stats []paygate.ProviderStat, from, to time.Time) ([]rateBucket, []string) {
	index := map[string]int{}
	var providers []string
	for _, s := range stats {
		if _, ok := index[s.ProviderID]; !ok {
			index[s.ProviderID] = 0
			providers = append(providers, s.ProviderID)
		}
	}
	sort.Strings(providers)
	for i, p := range providers {
		index[p] = i
	}
	var buckets []rateBucket
	at := map[int64]int{}
	for t := from; t.Before(to); t = t.Add(paygate.ProviderStatPeriod) {
		at[t.Unix()] = len(buckets)
		buckets = append(buckets, rateBucket{Start: t, Cells: make([]rateCell, len(providers))})
	}
	for _, s := range stats {
		if b, ok := at[s.Start.Unix()]; ok {
			c := &buckets[b].Cells[index[s.ProviderID]]
			c.Attempts += s.Attempts
			c.Approved += s.Approved
		}
	}
	return buckets, providers
}

// rateChart is a chart of the authorization rate (0 to 100 %) of each
// provider per bucket: a line per provider, broken where a bucket has no
// attempts of it.
type rateChart struct {
	// ID prefixes the ids of the SVG's elements; unique on the page.
	ID        string
	Loc       *time.Location
	Providers []string
	Buckets   []rateBucket
}

// rateColors are the providers' line colours, in order; they repeat past
// the sixth provider (the legend and the table still tell them apart).
var rateColors = []string{"#3563c9", "#c2410c", "#15803d", "#7c3aed", "#b45309", "#0e7490"}

// renderRateChart returns the chart as an inline <svg> element, drawn as
// the overview's (chart.go): presentation attributes and classes only, a
// <title> and a <desc>, the same numbers in the page's table.
func renderRateChart(c rateChart) template.HTML {
	var b strings.Builder
	esc := template.HTMLEscapeString
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" class="chart rate-chart" viewBox="0 0 ` +
		itoa(chartWidth) + ` ` + itoa(chartHeight) + `" width="100%" role="img" aria-labelledby="` +
		esc(c.ID) + `-title ` + esc(c.ID) + `-desc" font-family="system-ui, sans-serif" font-size="12" fill="` + chartText + `">`)
	b.WriteString(`<title id="` + esc(c.ID) + `-title">Authorization rate per provider, last hour</title>`)
	b.WriteString(`<desc id="` + esc(c.ID) + `-desc">` + esc(rateSummary(c)) + `</desc>`)
	if len(c.Providers) == 0 || len(c.Buckets) == 0 {
		b.WriteString(`<text x="` + itoa(chartWidth/2) + `" y="` + itoa(chartHeight/2) +
			`" text-anchor="middle" class="chart-empty">No answered payments in the last hour.</text></svg>`)
		return template.HTML(b.String())
	}

	// Legend: each provider's colour and its id.
	b.WriteString(`<g class="chart-legend">`)
	x := chartLeft
	for i, p := range c.Providers {
		color := rateColors[i%len(rateColors)]
		// A dot as the points are (the dark theme recolours the
		// overview's lines by their colour, not these).
		b.WriteString(`<circle cx="` + itoa(x+6) + `" cy="19" r="5" fill="` + color + `"/>`)
		b.WriteString(`<text x="` + itoa(x+16) + `" y="24">` + esc(p) + `</text>`)
		x += 30 + 7*len(p)
	}
	b.WriteString(`</g>`)

	// Grid: 0, 25, 50, 75 and 100 %.
	b.WriteString(`<g class="chart-axes">`)
	for i := 0; i <= chartTicks; i++ {
		y := chartTop + chartPlotH - float64(chartPlotH)*float64(i)/chartTicks
		b.WriteString(`<line x1="` + itoa(chartLeft) + `" y1="` + ftoa(y) + `" x2="` + itoa(chartLeft+chartPlotW) +
			`" y2="` + ftoa(y) + `" stroke="` + chartGrid + `" stroke-width="1"/>`)
		b.WriteString(`<text x="` + itoa(chartLeft-6) + `" y="` + ftoa(y+4) + `" text-anchor="end">` +
			itoa(100*i/chartTicks) + ` %</text>`)
	}
	n := len(c.Buckets)
	band := float64(chartPlotW) / float64(n)
	every := (n + 5) / 6 // at most about six time labels
	for i, bk := range c.Buckets {
		if i%every != 0 {
			continue
		}
		b.WriteString(`<text x="` + ftoa(chartLeft+band*(float64(i)+0.5)) + `" y="` + itoa(chartTop+chartPlotH+18) +
			`" text-anchor="middle">` + esc(bk.Start.In(c.Loc).Format("15:04")) + `</text>`)
	}
	b.WriteString(`<text x="` + itoa(chartLeft+chartPlotW/2) + `" y="` + itoa(chartHeight-6) +
		`" text-anchor="middle">5 minutes from (` + esc(c.Loc.String()) + `)</text>`)
	b.WriteString(`</g>`)

	// A line per provider through the buckets where it had attempts, with
	// a marker on each.
	for pi, p := range c.Providers {
		color := rateColors[pi%len(rateColors)]
		b.WriteString(`<g class="rate-line" stroke="` + color + `" fill="` + color + `">`)
		var run []string
		flush := func() {
			if len(run) > 1 {
				b.WriteString(`<polyline fill="none" stroke-width="2" points="` + strings.Join(run, " ") + `"/>`)
			}
			run = run[:0]
		}
		for i, bk := range c.Buckets {
			cell := bk.Cells[pi]
			if cell.Attempts == 0 {
				flush()
				continue
			}
			x := chartLeft + band*(float64(i)+0.5)
			y := chartTop + chartPlotH - float64(chartPlotH)*float64(cell.Approved)/float64(cell.Attempts)
			run = append(run, ftoa(x)+","+ftoa(y))
		}
		flush()
		for i, bk := range c.Buckets {
			cell := bk.Cells[pi]
			if cell.Attempts == 0 {
				continue
			}
			x := chartLeft + band*(float64(i)+0.5)
			y := chartTop + chartPlotH - float64(chartPlotH)*float64(cell.Approved)/float64(cell.Attempts)
			b.WriteString(`<circle class="rate-point" cx="` + ftoa(x) + `" cy="` + ftoa(y) + `" r="3" stroke="none"><title>` +
				esc(p+", "+bk.Start.In(c.Loc).Format("15:04")+": "+cell.Rate()+" of "+attempts(cell.Attempts)) + `</title></circle>`)
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// rateSummary says in words what the chart shows: each provider's rate
// over the hour.
func rateSummary(c rateChart) string {
	if len(c.Providers) == 0 {
		return "No answered payments in the last hour."
	}
	parts := make([]string, len(c.Providers))
	for pi, p := range c.Providers {
		var sum rateCell
		for _, bk := range c.Buckets {
			sum.Attempts += bk.Cells[pi].Attempts
			sum.Approved += bk.Cells[pi].Approved
		}
		parts[pi] = p + " authorized " + sum.Rate() + " of " + attempts(sum.Attempts)
	}
	return "Over the last hour, in 5-minute buckets: " + strings.Join(parts, "; ") + "."
}

func attempts(n int64) string {
	if n == 1 {
		return "1 payment"
	}
	return strconv.FormatInt(n, 10) + " payments"
}
