package dashboard

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// seedPayments inserts n payments of the tenant straight through the store,
// in units of a thousand, created one millisecond apart from base, and
// returns their ids oldest first. Every tenth is KWD, every hundredth has
// a reference a spreadsheet would take for a formula; customers are 100
// external ids cycled.
func seedPayments(t *testing.T, f *dataFixture, tn tenant, n int, base time.Time) []string {
	t.Helper()
	ids := make([]string, 0, n)
	const unitSize = 1000
	for start := 0; start < n; start += unitSize {
		ops := make([]paygate.Op, 0, unitSize)
		for i := start; i < min(start+unitSize, n); i++ {
			at := base.Add(time.Duration(i) * time.Millisecond)
			p := paygate.Payment{
				ID: id.New(), MerchantID: tn.merchantID, Mode: tn.mode, Status: paygate.PaymentCaptured,
				Amount: paygate.Money{Amount: 1050, Currency: "EUR"}, AmountText: "10.5", AmountCaptured: 1050,
				Method: paygate.MethodCard, MerchantRef: fmt.Sprintf("order-%d", i), ProviderID: "sandbox-eu",
				Card:           paygate.CardSummary{Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: 2034, HolderName: "Ada Lovelace"},
				Billing:        &paygate.Billing{Email: "ada@example.com"},
				Metadata:       []byte("{}"),
				IdempotencyKey: "seed-" + id.New(),
				CreatedAt:      at, UpdatedAt: at, LeaseUntil: at,
			}
			if i%10 == 0 {
				p.Amount, p.AmountText, p.AmountCaptured = paygate.Money{Amount: 10000, Currency: "KWD"}, "10", 10000
			}
			if i%100 == 0 {
				p.MerchantRef = fmt.Sprintf("=HYPERLINK(%d)", i)
			}
			ops = append(ops, paygate.NewPayment{Payment: p, CustomerExternalID: fmt.Sprintf("cus-%d", i%100), NewCustomerID: id.New()})
			ids = append(ids, p.ID)
		}
		if err := f.st.Commit(context.Background(), paygate.Unit{Ops: ops}); err != nil {
			t.Fatalf("seed payments %d: %v", start, err)
		}
	}
	return ids
}

// The export writes every row of exportTestRows (100,000 without -race), newest first, with the agreed
// columns, while the heap stays within a bound far below what holding the
// rows (or the file) would take: it is streamed page by page.
func TestExportPaymentsStreamsEveryRow(t *testing.T) {
	if testing.Short() {
		t.Skip("inserts exportTestRows payments")
	}
	f := newDataFixture(t)
	const n = exportTestRows
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	seeded := time.Now()
	ids := seedPayments(t, f, f.a, n, base)
	t.Logf("seeded %d payments in %v", n, time.Since(seeded))
	// Merchant b's payment must not appear in a's export.
	other := seedPayments(t, f, f.b, 1, base)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.d.exportPayments(w, r, f.a.viewer, nil)
	}))
	defer srv.Close()

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	resp, err := http.Get(srv.URL + "/dashboard/test/payments.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, `attachment; filename="payments-test-`) {
		t.Errorf("Content-Disposition %q", cd)
	}
	rd := csv.NewReader(resp.Body)
	head, err := rd.Read()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(head, ","); got != strings.Join(exportHeader, ",") {
		t.Fatalf("header %q", got)
	}
	rows := 0
	for {
		rec, err := rd.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("row %d: %v", rows, err)
		}
		i := n - 1 - rows // newest first
		if i < 0 {
			t.Fatalf("more rows than payments: %q", rec)
		}
		if rec[0] != ids[i] {
			t.Fatalf("row %d: id %s, want %s", rows, rec[0], ids[i])
		}
		if want := base.Add(time.Duration(i) * time.Millisecond).Truncate(time.Second).Format(time.RFC3339); rec[1] != want {
			t.Fatalf("row %d: created_at %s, want %s", rows, rec[1], want)
		}
		want := []string{"captured", "10.50", "EUR", "10.50", "0.00", fmt.Sprintf("cus-%d", i%100), "ada@example.com", "visa", "4242", fmt.Sprintf("order-%d", i), "sandbox-eu", ""}
		if i%10 == 0 {
			want[1], want[2], want[3], want[4] = "10.000", "KWD", "10.000", "0.000"
		}
		if i%100 == 0 {
			want[9] = fmt.Sprintf("'=HYPERLINK(%d)", i)
		}
		if got := strings.Join(rec[2:], "|"); got != strings.Join(want, "|") {
			t.Fatalf("row %d:\n got %s\nwant %s", rows, got, strings.Join(want, "|"))
		}
		if rec[0] == other[0] {
			t.Fatalf("row %d is another merchant's payment", rows)
		}
		rows++
	}
	close(stop)
	wg.Wait()
	if rows != n {
		t.Fatalf("%d rows, want %d", rows, n)
	}
	growth := int64(peak.Load()) - int64(before.HeapAlloc)
	t.Logf("exported %d rows; heap before %.1f MiB, peak %.1f MiB, peak growth %.1f MiB",
		rows, mib(before.HeapAlloc), mib(peak.Load()), float64(growth)/(1<<20))
	const bound = 64 << 20
	if growth > bound {
		t.Errorf("peak heap grew by %d bytes while exporting, more than %d", growth, bound)
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// Cells a spreadsheet would run as formulas are defused.
func TestCSVSafe(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"": "", "order-1": "order-1", "=1+2": "'=1+2", "+1": "'+1", "-1": "'-1", "@SUM(A1)": "'@SUM(A1)",
		"\tx": "'\tx", "\rx": "'\rx", "a=b": "a=b",
	} {
		if got := csvSafe(in); got != want {
			t.Errorf("csvSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// Amounts are written in the currency's exponent, without grouping.
func TestDecimalMinor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		minor int64
		cur   string
		want  string
	}{
		{1050, "EUR", "10.50"}, {100, "JPY", "100"}, {1230, "KWD", "1.230"}, {5, "KWD", "0.005"},
		{123456789, "EUR", "1234567.89"}, {0, "EUR", "0.00"}, {-50, "EUR", "-0.50"},
	} {
		if got := decimalMinor(tc.minor, tc.cur); got != tc.want {
			t.Errorf("decimalMinor(%d, %s) = %q, want %q", tc.minor, tc.cur, got, tc.want)
		}
	}
}

// The export answers under each mode and at /dashboard/payments.csv (mode
// from ?mode=, test by default), with the list's filters, only to a
// signed-in user, and only the merchant's own payments of that mode.
func TestExportPaymentsRoutes(t *testing.T) {
	t.Parallel()
	s, b := signedInSite(t)
	f := &dataFixture{t: t, st: s.st}
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	testIDs := seedPayments(t, f, tenant{merchantID: s.a.id, mode: paygate.ModeTest}, 3, base)
	liveIDs := seedPayments(t, f, tenant{merchantID: s.a.id, mode: paygate.ModeLive}, 2, base)
	otherIDs := seedPayments(t, f, tenant{merchantID: s.b.id, mode: paygate.ModeTest}, 2, base)
	idsOf := func(body string) []string {
		t.Helper()
		recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
		if err != nil {
			t.Fatalf("not CSV: %v\n%s", err, body)
		}
		var out []string
		for _, r := range recs[1:] {
			out = append(out, r[0])
		}
		return out
	}
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"OK_TestMode", "/dashboard/test/payments.csv", []string{testIDs[2], testIDs[1], testIDs[0]}},
		{"OK_LiveMode", "/dashboard/live/payments.csv", []string{liveIDs[1], liveIDs[0]}},
		{"OK_NoModeIsTest", "/dashboard/payments.csv", []string{testIDs[2], testIDs[1], testIDs[0]}},
		{"OK_ModeParameter", "/dashboard/payments.csv?mode=live", []string{liveIDs[1], liveIDs[0]}},
		{"OK_Filtered", "/dashboard/payments.csv?ref=order-1", []string{testIDs[1]}},
		{"OK_PageCursorIgnored", "/dashboard/test/payments.csv?after=" + url.QueryEscape(formatCursor(base.Add(time.Millisecond), testIDs[1])), []string{testIDs[2], testIDs[1], testIDs[0]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := b.get(tc.path)
			if rep.code != http.StatusOK {
				t.Fatalf("status %d: %s", rep.code, rep.body)
			}
			if !strings.HasPrefix(rep.header.Get("Content-Disposition"), "attachment;") {
				t.Errorf("Content-Disposition %q", rep.header.Get("Content-Disposition"))
			}
			got := idsOf(rep.body)
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("rows %v, want %v", got, tc.want)
			}
			for _, o := range otherIDs {
				if strings.Contains(rep.body, o) {
					t.Errorf("another merchant's payment %s in the export", o)
				}
			}
		})
	}
	t.Run("ErrBadFilter", func(t *testing.T) {
		rep := b.get("/dashboard/payments.csv?currency=XYZ1")
		if rep.code != http.StatusBadRequest || !strings.Contains(rep.body, "is not a currency code") {
			t.Errorf("status %d, body %.200s", rep.code, rep.body)
		}
	})
	t.Run("ErrSignedOut", func(t *testing.T) {
		rep := s.browser().get("/dashboard/payments.csv")
		if rep.code != http.StatusSeeOther || !strings.HasPrefix(rep.location, "/dashboard/login") {
			t.Errorf("status %d, location %q", rep.code, rep.location)
		}
	})
	t.Run("ErrPost", func(t *testing.T) {
		rep := b.do(http.MethodPost, "/dashboard/payments.csv", url.Values{"csrf": {csrfOf(t, b.get("/dashboard/test/payments"))}})
		if rep.code != http.StatusMethodNotAllowed {
			t.Errorf("status %d", rep.code)
		}
	})
}
