package procstat_test

import (
	"os"
	"runtime"
	"testing"

	"github.com/tack-dev/tack/internal/procstat"
)

// TestRead reads this test's own process: running, its parent the one the
// runtime names, a start time and some CPU.
func TestRead(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	f, err := procstat.Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st := f.Field(3); st != "R" && st != "S" {
		t.Errorf("state %q", st)
	}
	if ppid := f.Int(4); ppid != int64(os.Getppid()) {
		t.Errorf("ppid %d, want %d", ppid, os.Getppid())
	}
	if f.Int(22) <= 0 || f.Field(99) != "" {
		t.Errorf("starttime %q, field 99 %q", f.Field(22), f.Field(99))
	}
	if _, err := procstat.Read(-1); err == nil {
		t.Error("a process that cannot be read")
	}
}
