package projection_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/projection"
)

// encodingJSON is what encoding/json writes for v, HTML escaped as
// json.Marshal or not as the API's Encoder.
func encodingJSON(t testing.TB, v any, escapeHTML bool) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// checkEncoders compares the hand-written encoders with encoding/json on
// items and changes made of s and tm.
func checkEncoders(t testing.TB, s string, tm time.Time) {
	t.Helper()
	pt := projection.Time{Time: tm}
	// encoding/json writes times with MarshalJSON, which is hand-written
	// too: it is held to time's own formatting of the layout.
	if got, _ := pt.MarshalJSON(); string(got) != `"`+tm.UTC().Format(projection.TimeFormat)+`"` {
		t.Fatalf("time %v: %s, want %q", tm, got, tm.UTC().Format(projection.TimeFormat))
	}
	items := []projection.Item{
		{ID: s, Content: s, Status: "pending", UpdatedAt: pt, CreatedAt: projection.Time{}},
		{ID: "x", Content: "plain", Status: s, UpdatedAt: pt, CreatedAt: pt, StartedAt: &pt, CompletedAt: &pt},
		{ID: "t", Content: "task", Status: "in_progress", AgentFields: projection.AgentFields{ActiveForm: s, BlockedBy: []string{s, "x"}, Owner: s,
			TaskID: s, Description: s}, UpdatedAt: pt, CreatedAt: pt},
		{ID: "u", Content: "task", Status: "pending", AgentFields: projection.AgentFields{BlockedBy: []string{}, Owner: "o"}, UpdatedAt: pt, CreatedAt: pt},
	}
	changes := []projection.Change{{ID: s, Content: s, From: &s}, {ID: "y", Content: "z", To: &s}}
	for _, esc := range []bool{true, false} {
		for _, c := range []struct {
			got string
			v   any
		}{
			{string(projection.AppendItems(nil, items, esc)), items},
			{string(projection.AppendItems(nil, nil, esc)), []projection.Item(nil)},
			{string(projection.AppendItems(nil, []projection.Item{}, esc)), []projection.Item{}},
			{string(projection.AppendChanges(nil, changes, esc)), changes},
			{string(projection.AppendChanges(nil, nil, esc)), []projection.Change(nil)},
			{string(projection.AppendString(nil, s, esc)), s},
			{string(projection.AppendCounts(nil, projection.Counts{Pending: len(s), InProgress: -1, Completed: 1 << 40})),
				projection.Counts{Pending: len(s), InProgress: -1, Completed: 1 << 40}},
		} {
			if want := encodingJSON(t, c.v, esc); c.got != want {
				t.Fatalf("escapeHTML %v, %q at %v:\n got %s\nwant %s", esc, s, tm, c.got, want)
			}
		}
	}
}

// TestEncodersMatchEncodingJSON checks AppendItems, AppendChanges,
// AppendString and AppendCounts against encoding/json on random strings
// (ASCII, HTML's specials, quotes, controls, U+2028, other scripts,
// invalid UTF-8) and random times of years 0–9999 in any zone, their
// edges and beyond.
func TestEncodersMatchEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "Z", " ", "0", "<", ">", "&", `"`, `\`, "\n", "\t", "\b", "\f", "\r", "\x00", "\x1f", "\x7f", "é", "日本",
		"\u2028", "\u2029", "\xff", "\xe2\x80", "🙂", "\ufffd", "/"}
	zone := time.FixedZone("", -7*3600-30*60)
	lo := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	hi := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).UnixMicro()
	for _, tm := range []time.Time{{}, time.Unix(0, 0), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2026, 12, 1, 9, 5, 7, 8_900_000, zone)} {
		checkEncoders(t, "edge", tm)
	}
	for range 20_000 {
		var s []byte
		for range rng.IntN(8) {
			s = append(s, pieces[rng.IntN(len(pieces))]...)
		}
		tm := time.UnixMicro(lo + rng.Int64N(hi-lo)).Add(time.Duration(rng.IntN(1000))).In(zone)
		checkEncoders(t, string(s), tm)
	}
}

func FuzzEncoders(f *testing.F) {
	f.Add("ship <it> & \"go\"\u2028", int64(1764579907008))
	f.Add("\xff\x00日本", int64(-62135596800001))
	f.Fuzz(func(t *testing.T, s string, ms int64) {
		checkEncoders(t, s, time.UnixMilli(ms))
	})
}
