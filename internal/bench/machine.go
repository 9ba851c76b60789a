package bench

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// Machine is what the whole machine's CPUs did during a measurement, read
// from /proc/stat: on a shared virtual machine the same run can differ by
// half between two hours, and the hypervisor's steal tells a slow run
// caused by other tenants from one caused by the code.
type Machine struct {
	// Cores is the number of CPUs the tool may run on (runtime.NumCPU),
	// which is the machine's on an unconfined one; the shares below are of
	// all the machine's CPUs.
	Cores int `json:"cores"`
	// BusyPercent is the share of all CPUs' time spent running anything
	// (user, system, interrupts): 100 means every core was busy.
	BusyPercent float64 `json:"busyPercent"`
	// StealPercent is the share of all CPUs' time the hypervisor gave to
	// other guests while this one had work to run.
	StealPercent float64 `json:"stealPercent"`
}

// MachineClock measures the machine over an interval that starts at Mark.
// Its methods may be called from different goroutines.
type MachineClock struct {
	mu     sync.Mutex
	start  cpuTimes
	marked bool
}

// Mark starts the interval. Where /proc/stat cannot be read, the interval
// stays unmarked and Since returns nil.
func (c *MachineClock) Mark() {
	t, err := readCPUTimes()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.start, c.marked = t, err == nil
}

// Since returns what the machine did since Mark, or nil when Mark was not
// called or could not read the counters.
func (c *MachineClock) Since() *Machine {
	c.mu.Lock()
	start, marked := c.start, c.marked
	c.mu.Unlock()
	if !marked {
		return nil
	}
	end, err := readCPUTimes()
	if err != nil {
		return nil
	}
	return machineSince(start, end)
}

// cpuTimes is a reading of the machine's CPU time counters.
type cpuTimes struct {
	busy, steal, total uint64
}

// readCPUTimes reads the aggregate line of /proc/stat.
func readCPUTimes() (cpuTimes, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return cpuTimes{}, fmt.Errorf("read machine CPU: %w", err)
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return cpuTimes{}, fmt.Errorf("read machine CPU: %w", err)
	}
	return parseCPUTimes(line)
}

// parseCPUTimes parses the "cpu" line of /proc/stat: user nice system idle
// iowait irq softirq steal [guest guest_nice], in clock ticks. Guest time
// is already counted in user and nice.
func parseCPUTimes(line string) (cpuTimes, error) {
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return cpuTimes{}, errors.New("read machine CPU: malformed /proc/stat")
	}
	var v [8]uint64
	for i := range v {
		n, err := strconv.ParseUint(fields[i+1], 10, 64)
		if err != nil {
			return cpuTimes{}, errors.New("read machine CPU: malformed /proc/stat")
		}
		v[i] = n
	}
	user, nice, system, idle, iowait, irq, softirq, steal := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
	busy := user + nice + system + irq + softirq
	return cpuTimes{busy: busy, steal: steal, total: busy + idle + iowait + steal}, nil
}

// machineSince returns what the machine did between start and end.
func machineSince(start, end cpuTimes) *Machine {
	m := &Machine{Cores: runtime.NumCPU()}
	if end.total <= start.total {
		return m
	}
	total := float64(end.total - start.total)
	pct := func(a, b uint64) float64 {
		if b < a {
			return 0
		}
		return math.Round(float64(b-a)/total*1000) / 10
	}
	m.BusyPercent = pct(start.busy, end.busy)
	m.StealPercent = pct(start.steal, end.steal)
	return m
}

// text is the machine's line of the report.
func (m *Machine) text() string {
	return fmt.Sprintf("%d cores, %.1f%% busy, %.1f%% stolen by the hypervisor", m.Cores, m.BusyPercent, m.StealPercent)
}
