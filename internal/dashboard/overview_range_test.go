package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The overview shows net volume (captured minus refunded), takes a date
// range or a preset, refuses a bad range with the default shown, and warns
// in live mode when no provider serves live payments.
func TestOverviewRangeAndNetVolume(t *testing.T) {
	t.Parallel()
	f := newDataFixture(t)
	f.clock.Set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	pid := f.pay(f.a, cardOK, "10.00", "EUR", "c", "")
	pg := f.get(f.a.viewer, "/payments/"+pid)
	key := formValue(t, pg.body, "idempotency_key")
	if a := f.post(f.a.viewer, "/payments/"+pid+"/refund", url.Values{"amount": {"4.00"}, "idempotency_key": {key}}); a.code != http.StatusSeeOther {
		t.Fatalf("refund: %d", a.code)
	}
	f.clock.Set(time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC))

	o := f.get(f.a.viewer, "/")
	for _, want := range []string{"€6.00", `€10.00</span> captured − <span class="money" title="EUR">€4.00</span> refunded`, "The last 30 days in your time zone"} {
		if !strings.Contains(o.body, want) {
			t.Errorf("overview does not show %q", want)
		}
	}
	if strings.Contains(o.body, `id="no-live-provider"`) {
		t.Errorf("test mode warns about live providers")
	}

	old := f.get(f.a.viewer, "/?from=2026-10-01&to=2026-10-31")
	if old.code != http.StatusOK || !strings.Contains(old.body, "From 1 Oct 2026 to 31 Oct 2026") || strings.Contains(old.body, "€6.00") {
		t.Errorf("October: %d, or it counts November's payment", old.code)
	}
	week := f.get(f.a.viewer, "/?days=7")
	if !strings.Contains(week.body, "The last 7 days") || !strings.Contains(week.body, "€6.00") ||
		!strings.Contains(week.body, `<strong aria-current="true">Last 7 days</strong>`) {
		t.Errorf("the last 7 days preset")
	}
	for _, bad := range []string{"?from=2026-11-22&to=2026-11-01", "?from=nope", "?days=0", "?from=2020-01-01&to=2026-01-01"} {
		b := f.get(f.a.viewer, "/"+bad)
		if b.code != http.StatusOK || !strings.Contains(b.body, "The range could not be used") || !strings.Contains(b.body, "The last 30 days") {
			t.Errorf("%s: %d, no message or not the default range", bad, b.code)
		}
	}

	f.d.cfg.LiveProviders = func() int { return 0 }
	if live := f.get(f.aLive.viewer, "/"); !strings.Contains(live.body, `id="no-live-provider"`) {
		t.Errorf("live overview does not warn without a live provider")
	}
	f.d.cfg.LiveProviders = func() int { return 1 }
	if live := f.get(f.aLive.viewer, "/"); strings.Contains(live.body, `id="no-live-provider"`) {
		t.Errorf("live overview warns with a live provider")
	}
}
