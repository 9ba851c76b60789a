package dashboard

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

// svgElements parses the chart as XML (it must be well-formed) and counts
// its elements by name, with the text of its <title> elements.
func svgElements(t *testing.T, svg string) (map[string]int, []string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	counts := map[string]int{}
	var titles []string
	var inTitle bool
	var depth int
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v\n%s", err, svg)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			depth++
			counts[e.Name.Local]++
			if depth == 1 && (e.Name.Local != "svg" || e.Name.Space != "http://www.w3.org/2000/svg") {
				t.Fatalf("root is %v, want svg in the SVG namespace", e.Name)
			}
			for _, a := range e.Attr {
				if a.Name.Local == "style" {
					t.Fatalf("style attribute (refused by the CSP) on %s", e.Name.Local)
				}
			}
			inTitle = e.Name.Local == "title"
		case xml.EndElement:
			depth--
			inTitle = false
		case xml.CharData:
			if inTitle {
				titles = append(titles, string(e))
			}
		}
	}
	if depth != 0 {
		t.Fatalf("unbalanced elements")
	}
	return counts, titles
}

func chartDays(n int, f func(i int) chartDay) []chartDay {
	start := time.Date(2026, 10, 24, 0, 0, 0, 0, time.UTC)
	out := make([]chartDay, n)
	for i := range out {
		out[i] = f(i)
		out[i].Day = start.AddDate(0, 0, i)
	}
	return out
}

func TestRenderChart(t *testing.T) {
	t.Parallel()
	t.Run("Empty", func(t *testing.T) {
		svg := string(renderChart(dailyChart{ID: "c", Currency: "EUR"}))
		counts, titles := svgElements(t, svg)
		if counts["rect"] != 0 || counts["polyline"] != 0 {
			t.Errorf("empty chart draws data: %v", counts)
		}
		if len(titles) != 1 || !strings.Contains(svg, "No payments in this period.") {
			t.Errorf("empty chart does not say so: %s", svg)
		}
	})
	t.Run("OneDay", func(t *testing.T) {
		days := chartDays(1, func(int) chartDay { return chartDay{Volume: 1050, Declined: 2} })
		svg := string(renderChart(dailyChart{ID: "c", Currency: "EUR", Days: days}))
		counts, titles := svgElements(t, svg)
		// One legend swatch and one bar; no line through a single point,
		// but its marker.
		if counts["rect"] != 2 || counts["circle"] != 1 || counts["polyline"] != 0 {
			t.Errorf("counts %v", counts)
		}
		if !contains(titles, "24 Oct 2026: €10.50") || !contains(titles, "24 Oct 2026: 2 declines") {
			t.Errorf("titles %q", titles)
		}
		if !strings.Contains(svg, `aria-labelledby="c-title c-desc"`) || !strings.Contains(svg, `role="img"`) {
			t.Errorf("not labelled: %s", svg)
		}
	})
	t.Run("ThirtyDays", func(t *testing.T) {
		days := chartDays(30, func(i int) chartDay { return chartDay{Volume: int64(i) * 1000, Declined: int64(i % 3)} })
		svg := string(renderChart(dailyChart{ID: "eur", Currency: "EUR", Days: days}))
		counts, titles := svgElements(t, svg)
		if counts["rect"] != 31 || counts["circle"] != 30 || counts["polyline"] != 1 {
			t.Errorf("counts %v", counts)
		}
		// The largest day is €290: the axis goes to €400 in steps of €100.
		for _, label := range []string{">€0<", ">€100<", ">€400<", ">Day (UTC)<", ">24 Oct<"} {
			if !strings.Contains(svg, label) {
				t.Errorf("no axis label %s", label)
			}
		}
		if !contains(titles, "Daily volume and declines in EUR") {
			t.Errorf("titles %q", titles)
		}
		if !strings.Contains(svg, "volume €4,350.00 in total, highest on 22 Nov with €290.00; 30 declines in total.") {
			t.Errorf("summary: %s", svg)
		}
	})
	t.Run("LargeNumbers", func(t *testing.T) {
		days := chartDays(3, func(i int) chartDay {
			return chartDay{Volume: []int64{math.MaxInt64 - 10, 123_456_789_012_345, 0}[i], Declined: 1 << 40}
		})
		svg := string(renderChart(dailyChart{ID: "big", Currency: "JPY", Days: days}))
		counts, _ := svgElements(t, svg)
		if counts["rect"] != 4 {
			t.Errorf("counts %v", counts)
		}
		if strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf") || strings.Contains(svg, `height="-`) {
			t.Errorf("bad geometry: %s", svg)
		}
		if !strings.Contains(svg, "B<") {
			t.Errorf("large axis labels are not compact: %s", svg)
		}
	})
	t.Run("EscapesText", func(t *testing.T) {
		days := chartDays(2, func(int) chartDay { return chartDay{Volume: 1} })
		svg := string(renderChart(dailyChart{ID: `x"y`, Currency: "<&>", Days: days}))
		svgElements(t, svg)
	})
}

func TestAxisStep(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ max, want int64 }{
		{0, 1}, {1, 1}, {4, 1}, {5, 2}, {29000, 10000}, {30000, 10000}, {40001, 20000}, {2, 1},
	} {
		if got := axisStep(tc.max); got != tc.want {
			t.Errorf("axisStep(%d) = %d, want %d", tc.max, got, tc.want)
		}
	}
	if s := axisStep(math.MaxInt64); s <= 0 || scaleTop(s, math.MaxInt64) < math.MaxInt64/2 {
		t.Errorf("axisStep(MaxInt64) = %d", s)
	}
}

func TestCompactMinor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		minor int64
		code  string
		want  string
	}{
		{0, "EUR", "€0"}, {250, "EUR", "€2.50"}, {2000, "EUR", "€20"}, {1_200_000, "EUR", "€12k"},
		{150_000_000, "EUR", "€1.5M"}, {300_000_000_000, "EUR", "€3B"}, {50_000, "JPY", "¥50k"},
	} {
		if got := compactMinor(tc.minor, tc.code); got != tc.want {
			t.Errorf("compactMinor(%d, %s) = %q, want %q", tc.minor, tc.code, got, tc.want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
