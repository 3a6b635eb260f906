// Package procstat reads a Linux process's /proc/<pid>/stat: the one
// reader `tack watch` (is an agent's process still the one that started?),
// `tack hook` (the agent's command line, up its parents) and the benchmarks
// (CPU time) share.
package procstat

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// Fields are the fields of /proc/<pid>/stat after the command name, which
// may itself hold spaces and ") ": Fields[0] is the stat's field 3 (the
// state), Fields[n] its field n+3.
type Fields []string

// Read reads the stat of process pid; an error where there is no such
// process or no /proc.
func Read(pid int) (Fields, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:])), nil
}

// Field is field n of the stat (as proc(5) numbers them, from 1), "" when
// the stat has none.
func (f Fields) Field(n int) string {
	if i := n - 3; i >= 0 && i < len(f) {
		return f[i]
	}
	return ""
}

// Int is field n as a number, 0 when it is none.
func (f Fields) Int(n int) int64 {
	v, _ := strconv.ParseInt(f.Field(n), 10, 64)
	return v
}
