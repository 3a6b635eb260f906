package migrations

import (
	"io/fs"
	"strconv"
	"strings"
	"testing"
)

// versions are the migration numbers of a dialect's directory.
func versions(t *testing.T, fsys fs.FS) map[int]string {
	t.Helper()
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, name := range names {
		n, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil {
			t.Fatalf("%s: no version number: %v", name, err)
		}
		out[n] = name
	}
	return out
}

// TestSameNumbersFromNowOn holds every migration from SharedFrom on to one
// number in both dialects: a feature's migration is added to both at once.
func TestSameNumbersFromNowOn(t *testing.T) {
	pg, lite := versions(t, Postgres), versions(t, SQLite)
	for _, c := range []struct {
		name        string
		have, other map[int]string
	}{{"postgres", pg, lite}, {"sqlite", lite, pg}} {
		for n, name := range c.have {
			if n >= SharedFrom && c.other[n] == "" {
				t.Errorf("%s/%s has no migration of the same number in the other dialect", c.name, name)
			}
		}
	}
	if len(pg) < SharedFrom || len(lite) == 0 {
		t.Fatalf("found %d Postgres and %d SQLite migrations", len(pg), len(lite))
	}
}
