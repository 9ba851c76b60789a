package bench

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// SVG layout: two panels stacked, each with its plot area inset by margins.
const (
	svgWidth    = 880
	panelHeight = 320
	marginLeft  = 70
	marginRight = 30
	marginTop   = 40
	marginBot   = 50
)

// distributionPoints are the percentiles of the distribution panel, on a
// log scale of 1/(1-q).
var distributionPoints = func() []float64 {
	var qs []float64
	for x := 1.0; x <= 1e5; x *= math.Pow(10, 0.05) {
		qs = append(qs, 1-1/x)
	}
	return qs
}()

// WriteSVG writes a self-contained SVG with two panels: the p50 and p99
// latency of each second of the run, and the latency distribution as a
// percentile curve (log x: 0%, 90%, 99%, ... 99.999%) from h; and a third,
// when the report has the server's memory samples: its resident memory
// over time.
func WriteSVG(w io.Writer, rep *Report, h *Histogram) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	panels := 2
	if rep.Server != nil && len(rep.Server.RSSBytes) > 0 {
		panels = 3
	}
	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, panels*panelHeight, svgWidth, panels*panelHeight)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	title := fmt.Sprintf("paygate bench: %s, %d clients, %.1f req/s", rep.Target, rep.Concurrency, rep.RequestsPerSecond)
	timeline(p, title, rep.Timeline)
	distribution(p, h)
	if panels == 3 {
		memory(p, rep.Server.RSSBytes)
	}
	p("</svg>\n")
	return bw.Flush()
}

// memory draws the server's resident memory, sampled once a second from
// its start (the warmup included).
func memory(p printer, rss []int64) {
	x0, y0, w, h := plotArea(2 * panelHeight)
	p(`<text x="%g" y="%g" text-anchor="end">server resident memory (MB) since its start</text>`+"\n", x0+w, y0-8)
	ymax := 0.0
	for _, v := range rss {
		ymax = max(ymax, float64(v)/(1<<20))
	}
	ymax = niceMax(ymax)
	axes(p, x0, y0, w, h, ymax)
	n := len(rss)
	secondsAxis(p, x0, y0, w, h, n)
	pts := make([]string, 0, n)
	for i, v := range rss {
		x := x0 + w*(float64(i)+1)/float64(n)
		y := y0 + h - h*min(float64(v)/(1<<20), ymax)/ymax
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
	}
	p(`<polyline fill="none" stroke="#1a7f37" stroke-width="1.5" points="%s"/>`+"\n", strings.Join(pts, " "))
}

type printer func(format string, args ...any)

// plotArea returns the inner rectangle of the panel at vertical offset y0.
func plotArea(y0 float64) (x0, y1, width, height float64) {
	return marginLeft, y0 + marginTop, svgWidth - marginLeft - marginRight, panelHeight - marginTop - marginBot
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*e {
			return m * e
		}
	}
	return 10 * e
}

func timeline(p printer, title string, secs []Second) {
	x0, y0, w, h := plotArea(0)
	p(`<text x="%d" y="22" font-size="14" font-weight="bold">%s</text>`+"\n", marginLeft, html.EscapeString(title))
	p(`<text x="%g" y="%g" text-anchor="end">latency per second (ms): p50 blue, p99 red</text>`+"\n", x0+w, y0-8)
	ymax := 0.0
	n := 1
	for _, s := range secs {
		ymax = max(ymax, s.P99)
		n = max(n, s.Second+1)
	}
	ymax = niceMax(ymax)
	axes(p, x0, y0, w, h, ymax)
	secondsAxis(p, x0, y0, w, h, n)
	for _, series := range []struct {
		color string
		v     func(Second) float64
	}{{"#1f6feb", func(s Second) float64 { return s.P50 }}, {"#d1242f", func(s Second) float64 { return s.P99 }}} {
		var pts []string
		for _, s := range secs {
			x := x0 + w*(float64(s.Second)+0.5)/float64(n)
			y := y0 + h - h*min(series.v(s), ymax)/ymax
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		}
		if len(pts) > 0 {
			p(`<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", series.color, strings.Join(pts, " "))
		}
	}
}

func distribution(p printer, hist *Histogram) {
	x0, y0, w, h := plotArea(panelHeight)
	p(`<text x="%g" y="%g" text-anchor="end">latency distribution (ms) by percentile</text>`+"\n", x0+w, y0-8)
	ymax := niceMax(ms(hist.Max()))
	axes(p, x0, y0, w, h, ymax)
	const decades = 5.0
	for i, label := range []string{"0%", "90%", "99%", "99.9%", "99.99%", "99.999%"} {
		x := x0 + w*float64(i)/decades
		p(`<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#ddd"/>`+"\n", x, y0, x, y0+h)
		p(`<text x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", x, y0+h+16, label)
	}
	p(`<text x="%g" y="%g" text-anchor="middle">percentile</text>`+"\n", x0+w/2, y0+h+34)
	if hist.Count() == 0 {
		return
	}
	var pts []string
	for _, q := range distributionPoints {
		x := x0 + w*math.Log10(1/(1-q))/decades
		y := y0 + h - h*min(ms(hist.Quantile(q)), ymax)/ymax
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
	}
	p(`<polyline fill="none" stroke="#1f6feb" stroke-width="1.5" points="%s"/>`+"\n", strings.Join(pts, " "))
}

// axes frames the plot area and draws its y axis from 0 to ymax: a grid
// line and a label at every fifth.
func axes(p printer, x0, y0, w, h, ymax float64) {
	p(`<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#444"/>`+"\n", x0, y0, w, h)
	for i := 0; i <= 5; i++ {
		v := ymax * float64(i) / 5
		y := y0 + h - h*float64(i)/5
		p(`<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#ddd"/>`+"\n", x0, y, x0+w, y)
		p(`<text x="%g" y="%g" text-anchor="end">%s</text>`+"\n", x0-6, y+4, fmtNum(v))
	}
}

// secondsAxis labels the x axis of a panel whose width spans n seconds,
// at about ten round steps.
func secondsAxis(p printer, x0, y0, w, h float64, n int) {
	step := max(1, int(niceMax(float64(n)/10)))
	for s := 0; s <= n; s += step {
		p(`<text x="%g" y="%g" text-anchor="middle">%d</text>`+"\n", x0+w*float64(s)/float64(n), y0+h+16, s)
	}
	p(`<text x="%g" y="%g" text-anchor="middle">seconds</text>`+"\n", x0+w/2, y0+h+34)
}

// fmtNum writes an axis value without needless digits.
func fmtNum(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "" || s == "-" {
		return "0"
	}
	return s
}
