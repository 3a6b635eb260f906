package bench

import "testing"

func TestActivityString(t *testing.T) {
	t.Parallel()
	a := activity{samples: 4, backends: 18, active: 7, maxActive: 3, inTx: 2,
		waits: map[string]int{"running": 4, "IO/WALSync": 2, "LWLock/WALWrite": 1}}
	want := "1.8 of 18 active on average (max 3), 0.5 idle in transaction; active ones: running 57%, IO/WALSync 29%, LWLock/WALWrite 14%"
	if got := a.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := (activity{backends: 18}).String(); got != "not sampled" {
		t.Errorf("no samples: got %q", got)
	}
}
