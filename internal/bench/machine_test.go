package bench

import (
	"testing"
	"time"
)

func TestParseCPUTimes(t *testing.T) {
	start, err := parseCPUTimes("cpu  100 0 50 800 10 5 5 30 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	// 400 more ticks: 200 busy (120+20+40+10+10), 100 idle, 20 iowait, 80 steal.
	end, err := parseCPUTimes("cpu  220 20 90 900 30 15 15 110 7 0")
	if err != nil {
		t.Fatal(err)
	}
	m := machineSince(start, end)
	if m.BusyPercent != 50 || m.StealPercent != 20 {
		t.Errorf("busy %v%% steal %v%%, want 50%% and 20%%", m.BusyPercent, m.StealPercent)
	}
	if m.Cores < 1 {
		t.Errorf("cores %d", m.Cores)
	}
	if m := machineSince(end, end); m.BusyPercent != 0 || m.StealPercent != 0 {
		t.Errorf("an empty interval: %+v", m)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 3", "cpu 1 2 3 4 5 6 7 x"} {
		if _, err := parseCPUTimes(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestMachineClock(t *testing.T) {
	var c MachineClock
	if m := c.Since(); m != nil {
		t.Errorf("unmarked clock measured %+v", m)
	}
	if _, err := readCPUTimes(); err != nil {
		t.Skipf("no /proc/stat here: %v", err)
	}
	c.Mark()
	// Keep one core busy for ten clock ticks or more: the machine cannot
	// have been idle all that time.
	var sink uint64
	for start := time.Now(); time.Since(start) < 150*time.Millisecond; {
		for i := range uint64(1e5) {
			sink += i * i
		}
	}
	m := c.Since()
	if m == nil || m.Cores < 1 || m.BusyPercent <= 0 || m.BusyPercent > 100 || m.StealPercent < 0 || m.StealPercent > 100 {
		t.Errorf("implausible measurement %+v after 150 ms of work (%d)", m, sink)
	}
}
