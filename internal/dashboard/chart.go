package dashboard

import (
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/money"
)

// The overview's chart is inline SVG rendered here from numbers: no script,
// no external resource and no style attribute (the Content-Security-Policy
// forbids them), only SVG presentation attributes and classes. It carries a
// <title> and a <desc> for screen readers; the page shows the same numbers
// as a table too.

// chartDay is one day of a chart, in the chart's zone.
type chartDay struct {
	// Day is the date, as midnight UTC of it.
	Day time.Time
	// Volume is the day's captured volume in minor units of the chart's
	// currency.
	Volume int64
	// Declined counts the day's declined payments (failed with
	// CARD_DECLINED).
	Declined int64
}

// dailyChart is a chart of daily volume (bars, left axis) and declines (a
// line, right axis) in one currency.
type dailyChart struct {
	// ID prefixes the ids of the SVG's elements; unique on the page.
	ID       string
	Currency string
	// Zone names the time zone of the days; "" is UTC.
	Zone string
	Days []chartDay
}

// zone returns the name of the chart's time zone.
func (c dailyChart) zone() string {
	if c.Zone == "" {
		return "UTC"
	}
	return c.Zone
}

// The chart's geometry, in SVG user units.
const (
	chartWidth   = 720
	chartHeight  = 266
	chartLeft    = 78 // room for the volume labels
	chartRight   = 52 // room for the declines labels
	chartTop     = 40 // room for the legend
	chartBottom  = 44 // room for the dates
	chartTicks   = 4  // grid lines above zero
	chartPlotW   = chartWidth - chartLeft - chartRight
	chartPlotH   = chartHeight - chartTop - chartBottom
	chartBarFill = "#3563c9"
	chartLine    = "#c2410c"
	chartGrid    = "#d5d9e0"
	chartText    = "#1f2933"
)

// renderChart returns the chart as an inline <svg> element.
func renderChart(c dailyChart) template.HTML {
	var b strings.Builder
	esc := template.HTMLEscapeString
	title := "Daily volume and declines in " + c.Currency
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 ` +
		itoa(chartWidth) + ` ` + itoa(chartHeight) + `" width="100%" role="img" aria-labelledby="` +
		esc(c.ID) + `-title ` + esc(c.ID) + `-desc" font-family="system-ui, sans-serif" font-size="12" fill="` + chartText + `">`)
	b.WriteString(`<title id="` + esc(c.ID) + `-title">` + esc(title) + `</title>`)
	b.WriteString(`<desc id="` + esc(c.ID) + `-desc">` + esc(chartSummary(c)) + `</desc>`)

	if len(c.Days) == 0 {
		b.WriteString(`<text x="` + itoa(chartWidth/2) + `" y="` + itoa(chartHeight/2) +
			`" text-anchor="middle" class="chart-empty">No payments in this period.</text></svg>`)
		return template.HTML(b.String())
	}

	var maxVol, maxDecl int64
	for _, d := range c.Days {
		maxVol = max(maxVol, d.Volume)
		maxDecl = max(maxDecl, d.Declined)
	}
	volStep := axisStep(maxVol)
	declStep := axisStep(maxDecl)
	volTop := scaleTop(volStep, maxVol)
	declTop := scaleTop(declStep, maxDecl)

	// Legend.
	b.WriteString(`<g class="chart-legend">`)
	b.WriteString(`<rect x="` + itoa(chartLeft) + `" y="12" width="14" height="14" fill="` + chartBarFill + `"/>`)
	b.WriteString(`<text x="` + itoa(chartLeft+20) + `" y="24">Volume, ` + esc(c.Currency) + ` (left axis)</text>`)
	b.WriteString(`<line x1="` + itoa(chartLeft+230) + `" y1="19" x2="` + itoa(chartLeft+250) + `" y2="19" stroke="` +
		chartLine + `" stroke-width="2"/>`)
	b.WriteString(`<text x="` + itoa(chartLeft+256) + `" y="24">Declines (right axis)</text>`)
	b.WriteString(`</g>`)

	// Grid and axis labels.
	b.WriteString(`<g class="chart-axes">`)
	for i := 0; i <= chartTicks; i++ {
		y := chartTop + chartPlotH - float64(chartPlotH)*float64(i)/chartTicks
		b.WriteString(`<line x1="` + itoa(chartLeft) + `" y1="` + ftoa(y) + `" x2="` + itoa(chartLeft+chartPlotW) +
			`" y2="` + ftoa(y) + `" stroke="` + chartGrid + `" stroke-width="1"/>`)
		b.WriteString(`<text x="` + itoa(chartLeft-6) + `" y="` + ftoa(y+4) + `" text-anchor="end">` +
			esc(compactMinor(tickValue(volStep, i, volTop), c.Currency)) + `</text>`)
		b.WriteString(`<text x="` + itoa(chartLeft+chartPlotW+6) + `" y="` + ftoa(y+4) + `" text-anchor="start">` +
			itoa64(tickValue(declStep, i, declTop)) + `</text>`)
	}
	n := len(c.Days)
	band := float64(chartPlotW) / float64(n)
	every := (n + 7) / 8 // at most about eight date labels
	for i, d := range c.Days {
		if i%every != 0 {
			continue
		}
		x := chartLeft + band*(float64(i)+0.5)
		b.WriteString(`<text x="` + ftoa(x) + `" y="` + itoa(chartTop+chartPlotH+18) + `" text-anchor="middle">` +
			esc(d.Day.UTC().Format("2 Jan")) + `</text>`)
	}
	b.WriteString(`<text x="` + itoa(chartLeft+chartPlotW/2) + `" y="` + itoa(chartHeight-6) +
		`" text-anchor="middle">Day (` + esc(c.zone()) + `)</text>`)
	b.WriteString(`</g>`)

	// Bars.
	b.WriteString(`<g class="chart-bars" fill="` + chartBarFill + `">`)
	for i, d := range c.Days {
		h := scaled(d.Volume, volTop)
		x := chartLeft + band*(float64(i)+0.15)
		b.WriteString(`<rect class="chart-bar" x="` + ftoa(x) + `" y="` + ftoa(chartTop+chartPlotH-h) +
			`" width="` + ftoa(band*0.7) + `" height="` + ftoa(h) + `"><title>` +
			esc(d.Day.UTC().Format("2 Jan 2006")+": "+formatMinor(d.Volume, c.Currency)) + `</title></rect>`)
	}
	b.WriteString(`</g>`)

	// Declines: a line through the days, with a marker on each.
	b.WriteString(`<g class="chart-declines" stroke="` + chartLine + `">`)
	points := make([]string, 0, n)
	for i, d := range c.Days {
		x := chartLeft + band*(float64(i)+0.5)
		y := chartTop + chartPlotH - scaled(d.Declined, declTop)
		points = append(points, ftoa(x)+","+ftoa(y))
	}
	if n > 1 {
		b.WriteString(`<polyline fill="none" stroke-width="2" points="` + strings.Join(points, " ") + `"/>`)
	}
	for i, d := range c.Days {
		xy := strings.SplitN(points[i], ",", 2)
		b.WriteString(`<circle class="chart-point" cx="` + xy[0] + `" cy="` + xy[1] + `" r="3" fill="` + chartLine +
			`"><title>` + esc(d.Day.UTC().Format("2 Jan 2006")+": "+declines(d.Declined)) + `</title></circle>`)
	}
	b.WriteString(`</g></svg>`)
	return template.HTML(b.String())
}

// chartSummary says in words what the chart shows.
func chartSummary(c dailyChart) string {
	if len(c.Days) == 0 {
		return "No payments in this period."
	}
	var total, decl int64
	best := c.Days[0]
	for _, d := range c.Days {
		total = satAdd(total, d.Volume)
		decl += d.Declined
		if d.Volume > best.Volume {
			best = d
		}
	}
	first, last := c.Days[0].Day.UTC(), c.Days[len(c.Days)-1].Day.UTC()
	return "From " + first.Format("2 Jan 2006") + " to " + last.Format("2 Jan 2006") + " (days in " + c.zone() + "): volume " +
		formatMinor(total, c.Currency) + " in total, highest on " + best.Day.UTC().Format("2 Jan") + " with " +
		formatMinor(best.Volume, c.Currency) + "; " + declines(decl) + " in total."
}

func declines(n int64) string {
	if n == 1 {
		return "1 decline"
	}
	return itoa64(n) + " declines"
}

// axisStep returns the value between two grid lines for a largest value
// of maxV: the smallest 1, 2 or 5 × 10^k that fits maxV in chartTicks
// steps (1 when maxV is 0).
func axisStep(maxV int64) int64 {
	need := (maxV + chartTicks - 1) / chartTicks
	if maxV > math.MaxInt64-chartTicks {
		need = maxV/chartTicks + 1
	}
	if need <= 1 {
		return 1
	}
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if p <= math.MaxInt64/m && p*m >= need {
				return p * m
			}
		}
		if p > math.MaxInt64/10 {
			return need
		}
	}
}

// scaleTop is the value at the top of the axis: chartTicks steps, or maxV
// itself when that would not fit in an int64.
func scaleTop(step, maxV int64) int64 {
	if step > math.MaxInt64/chartTicks {
		return max(maxV, 1)
	}
	return step * chartTicks
}

// tickValue is the value of grid line i, never past top.
func tickValue(step int64, i int, top int64) int64 {
	if i == chartTicks {
		return top
	}
	return min(step*int64(i), top)
}

// scaled is the height of v on an axis whose top is top.
func scaled(v, top int64) float64 {
	if v <= 0 || top <= 0 {
		return 0
	}
	return float64(chartPlotH) * min(float64(v)/float64(top), 1)
}

// compactMinor writes an axis value short: "€0", "€2.50", "€12k", "€1.5M",
// "€3B". Values below ten thousand units are exact.
func compactMinor(minor int64, code string) string {
	digits, ok := money.Digits(code)
	if !ok {
		digits = 2
	}
	unit := int64(1)
	for range digits {
		unit *= 10
	}
	major := minor / unit
	var num string
	switch {
	case major >= 1_000_000_000:
		num = tenths(minor/unit/100_000_000) + "B"
	case major >= 1_000_000:
		num = tenths(minor/unit/100_000) + "M"
	case major >= 10_000:
		num = tenths(minor/unit/100) + "k"
	default:
		s := formatMinor(minor, code)
		// Whole amounts lose their zero decimals: "€20", not "€20.00".
		if digits > 0 && minor%unit == 0 {
			s = strings.TrimSuffix(s, "."+strings.Repeat("0", digits))
		}
		return s
	}
	return withSymbol(num, code, false)
}

// tenths writes n tenths as a decimal with at most one decimal: 15 is
// "1.5", 20 is "2".
func tenths(n int64) string {
	if n%10 == 0 {
		return groupThousands(itoa64(n / 10))
	}
	return groupThousands(itoa64(n/10)) + "." + itoa64(n%10)
}

// satAdd adds without wrapping around: a sum past the int64 range stays at
// its largest value.
func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func itoa(n int) string     { return strconv.Itoa(n) }
func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// ftoa writes a coordinate with at most two decimals.
func ftoa(f float64) string { return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64) }
