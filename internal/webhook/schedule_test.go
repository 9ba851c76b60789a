package webhook

import (
	"testing"
	"time"
)

func TestScheduleRetry(t *testing.T) {
	t.Parallel()
	s := DefaultSchedule()
	if len(s) != 10 || s.FirstWait() != 0 {
		t.Fatalf("default schedule %v", s)
	}
	identity := func(d time.Duration) time.Duration { return d }
	for _, c := range []struct {
		failed int
		wait   time.Duration
		ok     bool
	}{
		{1, 5 * time.Second, true},
		{2, 5 * time.Minute, true},
		{3, 30 * time.Minute, true},
		{4, 2 * time.Hour, true},
		{9, 24 * time.Hour, true},
		{10, 0, false}, // the tenth attempt was the last
		{11, 0, false},
		{0, 0, false},
	} {
		wait, ok := s.Retry(c.failed, identity)
		if wait != c.wait || ok != c.ok {
			t.Errorf("after attempt %d: wait %s ok %v, want %s %v", c.failed, wait, ok, c.wait, c.ok)
		}
	}
	short := Schedule{0, 200 * time.Millisecond, 200 * time.Millisecond}
	if _, ok := short.Retry(2, identity); !ok {
		t.Error("a three-entry schedule stopped after two attempts")
	}
	if _, ok := short.Retry(3, identity); ok {
		t.Error("a three-entry schedule retried after three attempts")
	}
	if (Schedule{}).FirstWait() != 0 || (Schedule{3 * time.Second}).FirstWait() != 3*time.Second {
		t.Error("FirstWait")
	}
}

func TestJitter(t *testing.T) {
	t.Parallel()
	if Jitter(0) != 0 || Jitter(-time.Second) != 0 {
		t.Fatal("a zero wait got jitter")
	}
	if Jitter(5*time.Nanosecond) != 5*time.Nanosecond {
		t.Error("a wait too short to spread changed")
	}
	for _, w := range []time.Duration{200 * time.Millisecond, 5 * time.Second, 24 * time.Hour} {
		seen := map[time.Duration]bool{}
		for range 200 {
			j := Jitter(w)
			if j < w-w/10 || j > w+w/10 {
				t.Fatalf("Jitter(%s) = %s, outside ±10%%", w, j)
			}
			seen[j] = true
		}
		if len(seen) < 50 {
			t.Errorf("Jitter(%s) took only %d values in 200 draws", w, len(seen))
		}
	}
}
