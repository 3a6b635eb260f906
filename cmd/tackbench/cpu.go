package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc CPU times on Linux.
const clockTicks = 100

// cpuSample is CPU time consumed so far, in clock ticks, by the parts of a run.
type cpuSample struct {
	at       time.Time
	machine  int64 // busy time of all cores
	self     int64 // this process: the load clients
	server   int64 // the Tack server child
	postgres int64 // every postgres process, with the backends that already exited
}

func sampleCPU(serverPID int) cpuSample {
	s := cpuSample{at: time.Now(), machine: machineBusy(), self: processTicks("self", false)}
	if serverPID > 0 {
		s.server = processTicks(strconv.Itoa(serverPID), false)
	}
	s.postgres = postgresTicks()
	return s
}

// cpuUsage is the CPU time the parts of a run consumed over span.
type cpuUsage struct {
	span                                     time.Duration
	machine, self, server, postgres, pgbench int64
}

func (s cpuSample) sub(o cpuSample) cpuUsage {
	return cpuUsage{
		span:     s.at.Sub(o.at),
		machine:  s.machine - o.machine,
		self:     s.self - o.self,
		server:   s.server - o.server,
		postgres: s.postgres - o.postgres,
	}
}

// cores turns ticks into cores busy on average over the span.
func (u cpuUsage) cores(ticks int64) float64 {
	return float64(ticks) / clockTicks / u.span.Seconds()
}

type part struct {
	name  string
	ticks int64
}

func (u cpuUsage) split(parts ...part) string {
	var b strings.Builder
	known := int64(0)
	for _, p := range parts {
		known += p.ticks
		fmt.Fprintf(&b, "%s %.2f, ", p.name, u.cores(p.ticks))
	}
	fmt.Fprintf(&b, "other %.2f (machine busy %.2f of %d)", u.cores(u.machine-known), u.cores(u.machine), numCPU())
	return b.String()
}

func (u cpuUsage) tackSplit() string {
	return u.split(part{"server", u.server}, part{"clients", u.self}, part{"postgres", u.postgres})
}

func (u cpuUsage) pgbenchSplit() string {
	return u.split(part{"pgbench", u.pgbench}, part{"postgres", u.postgres})
}

// machineBusy reads the busy ticks of all cores from /proc/stat: everything
// but idle and iowait.
func machineBusy() int64 {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	var total, idle int64
	for i, f := range strings.Fields(line)[1:] {
		v, _ := strconv.ParseInt(f, 10, 64)
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
		if i < 8 { // user … steal; guest time is already in user
			total += v
		}
	}
	return total - idle
}

func numCPU() int {
	raw, _ := os.ReadFile("/proc/stat")
	n := 0
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "cpu") && !strings.HasPrefix(line, "cpu ") {
			n++
		}
	}
	return n
}

// processTicks reads a process's user+system ticks from /proc/<pid>/stat,
// with those of its reaped children when children is set.
func processTicks(pid string, children bool) int64 {
	raw, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return 0
	}
	// Fields after the command name, which may hold spaces, in parentheses.
	_, rest, ok := strings.Cut(string(raw), ") ")
	if !ok {
		return 0
	}
	f := strings.Fields(rest)
	// f[0] is field 3 (state): utime is field 14, stime 15, cutime 16, cstime 17.
	var sum int64
	last := 13
	if children {
		last = 15
	}
	for i := 11; i <= last && i < len(f); i++ {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		sum += v
	}
	return sum
}

// postgresTicks sums every postgres process. The postmaster's reaped-children
// times hold the backends that have exited, such as pgbench's at its end.
func postgresTicks() int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var sum int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			continue
		}
		sum += processTicks(e.Name(), true)
	}
	return sum
}

// loadAverage is the 1, 5 and 15 minute load averages.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	return strings.Join(f[:3], " ")
}
