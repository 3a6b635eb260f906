package transcript_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/transcript"
)

// FuzzLines reads a fuzzed line after a prompt, in each agent's format:
// the reader never panics, and every message and tool result it makes of
// it is one the log takes (a hostile transcript fails no batch). List
// writes are the model's calls, which Tack may refuse as the tool would.
func FuzzLines(f *testing.F) {
	for _, line := range []string{
		`{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"On it."}]}}`,
		`{"type":"assistant","message":{"id":"\u0000","role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}}`,
		`{"type":"assistant","message":{"id":"   ","role":"assistant","content":[{"type":"text","text":"x"}]}}`,
		`{"type":"assistant","message":{"id":"` + string(make([]byte, 300)) + `","role":"assistant","content":"x"}}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}}`,
		`{"timestamp":"2026-01-12T09:00:00Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"c"}}`,
		`{"timestamp":"2026-01-12T09:00:00Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}}`,
	} {
		f.Add(line)
	}
	prompts := map[transcript.Format]string{
		transcript.ClaudeCode: `{"type":"user","promptId":"p1","message":{"role":"user","content":"go"}}`,
		transcript.Codex:      `{"timestamp":"2026-01-12T09:00:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}`,
	}
	received := projection.NewTime(time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC))
	f.Fuzz(func(t *testing.T, line string) {
		for format, prompt := range prompts {
			p := transcript.New(format, "/x/s.jsonl")
			var st projection.State
			for _, l := range []string{prompt, line} {
				for _, ev := range p.Line([]byte(l)) {
					if ev.Session != "" {
						continue // a subagent's
					}
					_, err := st.Apply(projection.NewEvent{Type: ev.Type, Data: ev.Data, Keys: ev.Keys}, received, projection.Config{}, nil)
					var perr *projection.Error
					if err != nil && !projection.ListWrite(ev.Type) && errors.As(err, &perr) && perr.Code == projection.CodeInvalid {
						raw, _ := json.Marshal(ev)
						t.Fatalf("%s: %q made %s, which the log refuses: %v", format, line, raw, err)
					}
				}
			}
		}
	})
}
