package dashboard

import (
	"strings"
	"testing"
	"time"
)

func TestFormatMinor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		minor int64
		code  string
		want  string
	}{
		{1050, "EUR", "€10.50"},
		{5, "EUR", "€0.05"},
		{0, "EUR", "€0.00"},
		{100, "JPY", "¥100"},
		{1230, "KWD", "KWD\u00a01.230"},
		{123456789, "USD", "$1,234,567.89"},
		{100000, "GBP", "£1,000.00"},
		{-550, "EUR", "-€5.50"},
		{12345, "CHF", "CHF\u00a0123.45"},
		{9223372036854775807, "EUR", "€92,233,720,368,547,758.07"},
	} {
		if got := formatMinor(tc.minor, tc.code); got != tc.want {
			t.Errorf("formatMinor(%d, %s) = %q, want %q", tc.minor, tc.code, got, tc.want)
		}
	}
}

func TestFormatSubmitted(t *testing.T) {
	t.Parallel()
	if got := formatSubmitted("10.5", "EUR"); got != "€10.50" {
		t.Errorf("got %q", got)
	}
	if got := formatSubmitted("1.23", "KWD"); got != "KWD\u00a01.230" {
		t.Errorf("got %q", got)
	}
	if got := formatSubmitted("1200", "JPY"); got != "¥1,200" {
		t.Errorf("got %q", got)
	}
	if got := formatSubmitted("1234567.5", "USD"); got != "$1,234,567.50" {
		t.Errorf("got %q", got)
	}
	// One formatter: a submitted KWD amount reads as a computed one.
	if a, b := formatSubmitted("10", "KWD"), formatMinor(10000, "KWD"); a != b || a != "KWD\u00a010.000" {
		t.Errorf("submitted %q, computed %q, want both KWD 10.000", a, b)
	}
}

func TestMoneyHTML(t *testing.T) {
	t.Parallel()
	got := string(moneyHTML(1050, "EUR"))
	if got != `<span class="money" title="EUR">€10.50</span>` {
		t.Errorf("got %s", got)
	}
	// A currency code never reaches the page unescaped.
	if got := string(submittedHTML("1", `<b>`)); strings.Contains(got, "<b>") {
		t.Errorf("unescaped: %s", got)
	}
}

func TestTimeHTML(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no time zone data:", err)
	}
	at := time.Date(2026, 11, 22, 13, 3, 7, 0, time.UTC)
	got := string(timeHTML(berlin, at))
	want := `<time datetime="2026-11-22T13:03:07Z" title="2026-11-22 14:03:07 CET">22 Nov 2026, 14:03:07 CET</time>`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := string(timeHTML(nil, at)); !strings.Contains(got, "22 Nov 2026, 13:03:07 UTC") {
		t.Errorf("nil zone: %s", got)
	}
	if got := string(timePtrHTML(berlin, nil)); !strings.Contains(got, "–") {
		t.Errorf("nil time: %s", got)
	}
}

func TestBadgeHTML(t *testing.T) {
	t.Parallel()
	if got := string(badgeHTML("pending_3ds")); got != `<span class="badge badge-pending-3ds">pending 3ds</span>` {
		t.Errorf("got %s", got)
	}
	if got := string(badgeHTML(`x"><script>`)); strings.Contains(got, "<script>") || strings.Contains(got, `x"`) {
		t.Errorf("unescaped: %s", got)
	}
}

func TestPercent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		part, whole int64
		want        string
	}{
		{0, 0, "–"}, {0, 5, "0.0%"}, {5, 5, "100.0%"}, {39, 40, "97.5%"}, {1, 3, "33.3%"}, {2, 3, "66.7%"},
		{999_999_999_999, 1_000_000_000_000, "100.0%"},
	} {
		if got := percent(tc.part, tc.whole); got != tc.want {
			t.Errorf("percent(%d, %d) = %q, want %q", tc.part, tc.whole, got, tc.want)
		}
	}
}

func TestCardBrand(t *testing.T) {
	t.Parallel()
	if cardBrand("amex") != "American Express" || cardBrand("visa") != "Visa" || cardBrand("unknown") != "Card" {
		t.Error("brand names")
	}
}

func TestCardExpiry(t *testing.T) {
	t.Parallel()
	if got := cardExpiry(4, 2028); got != "04/28" {
		t.Errorf("got %q", got)
	}
	if got := cardExpiry(0, 0); got != "–" {
		t.Errorf("got %q", got)
	}
}
