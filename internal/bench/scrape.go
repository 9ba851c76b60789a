package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Scrapes is what bench --metrics saw of the server's /metrics: scraped
// every interval during the run, as Prometheus would (more often than its
// usual 15 s, so that the cost shows).
type Scrapes struct {
	IntervalSeconds float64 `json:"intervalSeconds"`
	Scrapes         int64   `json:"scrapes"`
	// Failures counts scrapes not answered 200 in time; Error is the
	// first one's reason.
	Failures int64  `json:"failures"`
	Error    string `json:"error,omitempty"`
	// Series and Bytes are those of the last scrape (the text format);
	// MeanMs and MaxMs the time scrapes took.
	Series int     `json:"series"`
	Bytes  int64   `json:"bytes"`
	MeanMs float64 `json:"meanMs"`
	MaxMs  float64 `json:"maxMs"`
}

// Scraper GETs a metrics URL every interval until Stop.
type Scraper struct {
	url      string
	interval time.Duration
	client   *http.Client
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	mu    sync.Mutex
	got   Scrapes
	total time.Duration
}

// StartScraper starts scraping u every interval, the first time at once.
func StartScraper(u string, interval time.Duration) *Scraper {
	s := &Scraper{
		url: u, interval: interval, client: &http.Client{Timeout: 10 * time.Second},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	s.got.IntervalSeconds = interval.Seconds()
	go s.loop()
	return s
}

func (s *Scraper) loop() {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		s.scrape()
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

func (s *Scraper) scrape() {
	ctx, cancel := context.WithTimeout(context.Background(), s.client.Timeout)
	defer cancel()
	start := time.Now()
	series, n, err := s.get(ctx)
	took := time.Since(start)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got.Scrapes++
	if err != nil {
		s.got.Failures++
		if s.got.Error == "" {
			s.got.Error = err.Error()
		}
		return
	}
	s.got.Series, s.got.Bytes = series, n
	s.total += took
	s.got.MaxMs = max(s.got.MaxMs, ms(took))
}

// get reads one scrape and counts its series (the lines that are not
// comments).
func (s *Scraper) get(ctx context.Context) (series int, n int64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return 0, 0, err
	}
	res, err := s.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, res.Body)
		return 0, 0, fmt.Errorf("%s answered %s", s.url, res.Status)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		n += int64(len(line)) + 1
		if len(line) > 0 && line[0] != '#' {
			series++
		}
	}
	return series, n, sc.Err()
}

// Stop ends the scraping (a scrape in progress finishes first) and
// returns what was seen. It may be called more than once.
func (s *Scraper) Stop() *Scrapes {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	got := s.got
	if ok := got.Scrapes - got.Failures; ok > 0 {
		got.MeanMs = ms(s.total / time.Duration(ok))
	}
	return &got
}
