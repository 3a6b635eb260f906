package bench

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tack-dev/tack/internal/procstat"
)

// clockTicks is USER_HZ, the unit of /proc CPU times on Linux.
const clockTicks = 100

// group is a named set of processes whose CPU time is measured together.
type group struct {
	name string
	pids []int
}

// cpuSample is the CPU time consumed so far, in clock ticks, by the whole
// machine and by each group.
type cpuSample struct {
	at      time.Time
	machine int64 // busy time of all cores
	groups  []group
	ticks   []int64
}

func sampleCPU(groups ...group) cpuSample {
	s := cpuSample{at: time.Now(), machine: machineBusy(), groups: groups, ticks: make([]int64, len(groups))}
	for i, g := range groups {
		for _, pid := range g.pids {
			ticks, _ := processUsage(pid)
			s.ticks[i] += ticks
		}
	}
	return s
}

// cpuUsage is the CPU time each group consumed between two samples.
type cpuUsage struct {
	span    time.Duration
	machine int64
	groups  []group
	ticks   []int64
}

func (s cpuSample) sub(o cpuSample) cpuUsage {
	u := cpuUsage{span: s.at.Sub(o.at), machine: s.machine - o.machine, groups: s.groups, ticks: make([]int64, len(s.ticks))}
	for i := range s.ticks {
		u.ticks[i] = s.ticks[i] - o.ticks[i]
	}
	return u
}

// cores turns ticks into cores busy on average over the span.
func (u cpuUsage) cores(ticks int64) float64 {
	return float64(ticks) / clockTicks / u.span.Seconds()
}

// String is the cores each group kept busy, and the rest of the machine:
// other processes, Postgres's own background work, other users.
func (u cpuUsage) String() string {
	var b strings.Builder
	known := int64(0)
	for i, g := range u.groups {
		known += u.ticks[i]
		fmt.Fprintf(&b, "%s %.2f, ", g.name, u.cores(u.ticks[i]))
	}
	fmt.Fprintf(&b, "other %.2f (machine busy %.2f of %d)", u.cores(u.machine-known), u.cores(u.machine), numCPU())
	return b.String()
}

// perOp is the CPU time each group spent per operation at rate operations
// per second, and their total, in µs. Unlike a rate, it hardly depends on
// what else runs on the machine.
func (u cpuUsage) perOp(rate float64) (string, float64) {
	var b strings.Builder
	total := 0.0
	for i, g := range u.groups {
		us := u.cores(u.ticks[i]) / rate * 1e6
		total += us
		fmt.Fprintf(&b, "%s %.0f + ", g.name, us)
	}
	fmt.Fprintf(&b, "= %.0f µs", total)
	return strings.Replace(b.String(), "+ =", "=", 1), total
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

// processUsage is a process's CPU time in clock ticks (user and system,
// all its threads) and its minor page faults so far, from /proc/<pid>/stat.
func processUsage(pid int) (ticks, minflt int64) {
	f, err := procstat.Read(pid)
	if err != nil {
		return 0, 0
	}
	// minflt is field 10, utime 14, stime 15.
	return f.Int(14) + f.Int(15), f.Int(10)
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

// raiseFileLimit raises this process's descriptor limit to its hard limit:
// 10,000 sockets need 10,000 descriptors on each side, and a child (the
// server of idle, the clients of latency) inherits the limit.
func raiseFileLimit() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

// cpuTime is the user and system CPU time this process has used: server and
// clients together, since latency runs both in process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssKB reads VmRSS of a process from /proc.
func rssKB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		}
	}
	return 0, errors.New("no VmRSS in /proc/" + strconv.Itoa(pid) + "/status")
}
