package bench

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestScraper(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "# HELP a_total A.\n# TYPE a_total counter\na_total 1\nb{x=\"y\"} 2\n")
	}))
	defer srv.Close()
	s := StartScraper(srv.URL, 10*time.Millisecond)
	for n.Load() < 4 {
		time.Sleep(5 * time.Millisecond)
	}
	got := s.Stop()
	if again := s.Stop(); again.Scrapes != got.Scrapes {
		t.Errorf("a second Stop saw %d scrapes, the first %d", again.Scrapes, got.Scrapes)
	}
	if got.Scrapes < 4 || got.Failures != 1 || got.Error == "" || got.Series != 2 || got.Bytes != 62 || got.IntervalSeconds != 0.01 {
		t.Errorf("scrapes %+v", got)
	}
}
