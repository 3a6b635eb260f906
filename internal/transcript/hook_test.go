package transcript_test

import (
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/transcript"
)

// TestHookEvents: what each hook adds, against the turn as it stands, and
// keyed as the transcript keys the same events.
func TestHookEvents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		payload string
		open    bool
		want    string // type[keys] …
	}{
		{`{"session_id":"s","hook_event_name":"SessionStart","source":"startup"}`, false, ""},
		{`{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt_id":"p1","prompt":"Go"}`, false, "turn/start[turn:p1] message/user[prompt:p1]"},
		{`{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt_id":"p2","prompt":"Go"}`, true, "turn/end[] turn/start[turn:p2] message/user[prompt:p2]"},
		{`{"session_id":"s","hook_event_name":"UserPromptSubmit","turn_id":"t9","prompt_id":"p2","prompt":"Go"}`, false, "turn/start[turn:t9] message/user[prompt:t9]"},
		{`{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt_id":"p3","prompt":"<task-notification>\n<task-id>a1</task-id>\n</task-notification>"}`, false, "message/user[]"},
		{`{"session_id":"s","hook_event_name":"PreToolUse","prompt_id":"p1","tool_name":"Bash","tool_use_id":"tu","tool_input":{"command":"ls"}}`, true, "message/assistant[call:tu]"},
		{`{"session_id":"s","hook_event_name":"PreToolUse","prompt_id":"p1","tool_name":"Bash","tool_use_id":"tu"}`, false, "turn/start[turn:p1] message/assistant[call:tu]"},
		{`{"session_id":"s","hook_event_name":"PostToolUse","prompt_id":"p1","tool_name":"TodoWrite","tool_use_id":"tu","tool_input":{"todos":[{"content":"a","status":"pending","activeForm":"A"}]},"tool_response":{}}`, true, "message/assistant[call:tu] todo/write[write:tu] tool/result[result:tu]"},
		{`{"session_id":"s","hook_event_name":"PostToolUse","prompt_id":"p1","tool_name":"TodoWrite","tool_use_id":"tu","tool_input":{"todos":[{"content":"","status":"pending"}]}}`, true, "message/assistant[call:tu] todo/write[write:tu] tool/result[result:tu]"}, // Tack refuses the write when it is appended
		{`{"session_id":"s","hook_event_name":"PostToolUse","prompt_id":"p1","tool_name":"TaskUpdate","tool_use_id":"tu","tool_input":{"taskId":"9","status":"completed"}}`, true, "message/assistant[call:tu] todo/write[write:tu] tool/result[result:tu]"},          // Tack makes the list where it appends it: none when no task 9 stands
		{`{"session_id":"s","hook_event_name":"PostToolUse","prompt_id":"p1","tool_name":"TaskUpdate","tool_use_id":"tu","tool_input":{"taskId":9,"status":"completed"}}`, true, "message/assistant[call:tu] tool/result[result:tu]"},
		{`{"session_id":"s","hook_event_name":"PostToolUse","prompt_id":"p1","tool_name":"Bash"}`, true, ""},
		{`{"session_id":"s","hook_event_name":"PostToolUse","prompt_id":"p1","tool_name":"ExitPlanMode","tool_use_id":"tu","tool_input":{"plan":"1. Fix it\n2. Test it"},"tool_response":{"plan":"1. Fix it\n2. Test it","isAgent":false}}`, true, "message/assistant[call:tu] todo/write[write:tu] tool/result[result:tu]"},
		{`{"session_id":"s","hook_event_name":"PostToolUse","prompt_id":"p1","tool_name":"ExitPlanMode","tool_use_id":"tu","tool_input":{},"tool_response":{"plan":"- [ ] Fix it","isAgent":false}}`, true, "message/assistant[call:tu] todo/write[write:tu] tool/result[result:tu]"},
		{`{"session_id":"s","hook_event_name":"PostToolUse","prompt_id":"p1","tool_name":"ExitPlanMode","tool_use_id":"tu","tool_input":{"plan":"Just fix it."}}`, true, "message/assistant[call:tu] tool/result[result:tu]"},
		{`{"session_id":"s","hook_event_name":"Stop","prompt_id":"p1"}`, true, "turn/end[end:p1]"},
		{`{"session_id":"s","hook_event_name":"Stop","prompt_id":"p1"}`, false, ""},
		{`{"session_id":"s","hook_event_name":"Stop","prompt_id":"p1","last_assistant_message":"Done."}`, true, "message/assistant[" + transcript.SayKey("p1", "Done.") + "] turn/end[end:p1]"},
		{`{"session_id":"s","hook_event_name":"SubagentStop","agent_id":"a1"}`, true, "turn/end[] session/end[]"},
		{`{"session_id":"s","hook_event_name":"SubagentStop"}`, true, ""},
		{`{"session_id":"s","hook_event_name":"SessionEnd","reason":"exit"}`, true, "session/end[]"},
		{`{"session_id":"s","hook_event_name":"Notification","notification_type":"permission_prompt"}`, true, ""},
	} {
		h, err := transcript.ParseHook([]byte(tc.payload))
		if err != nil {
			t.Fatalf("%s: %v", tc.payload, err)
		}
		// With the transcript sent first, a tool's call and result are
		// the transcript's alone; a list tool's write is the hook's.
		for _, sent := range []string{"synced", "unsent"} {
			var got []string
			for _, ev := range h.Events(transcript.HookState{TurnOpen: true, Transcript: sent}) {
				got = append(got, ev.Type)
			}
			want := ""
			if sent == "synced" && h.Event == "PostToolUse" && strings.Contains(tc.want, "todo/write") {
				want = "todo/write"
			}
			if (h.Event == "PreToolUse" || h.Event == "PostToolUse") && strings.Join(got, " ") != want {
				t.Errorf("%s %s: %q, want %q", tc.payload, sent, got, want)
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.payload, err)
		}
		var got []string
		for _, ev := range h.Events(transcript.HookState{TurnOpen: tc.open}) {
			got = append(got, ev.Type+"["+strings.Join(ev.Keys, ",")+"]")
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s (open %v):\n got %s\nwant %s", tc.payload, tc.open, strings.Join(got, " "), tc.want)
		}
	}
}

// TestResponseText: a hook's tool_response read as the text the model was
// shown, for the shapes Claude Code gives.
func TestResponseText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ raw, want string }{
		{`"Plan updated"`, "Plan updated"},
		{`{"stdout":"hello","stderr":"","interrupted":false,"isImage":false}`, "hello"},
		{`{"stdout":"out","stderr":"warn","interrupted":false,"isImage":false}`, "out\nwarn"},
		{`{"type":"text","file":{"filePath":"/a.go","content":"package a","numLines":1,"startLine":1,"totalLines":1}}`, "package a"},
		{`{"filePath":"/a.go","oldString":"a","newString":"b","originalFile":"a\n","structuredPatch":[{"oldStart":1,"oldLines":1,"newStart":1,"newLines":1,"lines":["-a","+b"]}]}`,
			"--- /a.go\n+++ /a.go\n@@ -1,1 +1,1 @@\n-a\n+b"},
		{`{"type":"create","filePath":"/n.txt","content":"x\ny\n","structuredPatch":[]}`, "--- /n.txt\n+++ /n.txt\n@@ -0,0 +1,2 @@\n+x\n+y"},
		{`[{"type":"text","text":"from MCP"}]`, "from MCP"},
		{`{"content":[{"type":"text","text":"a"},{"type":"image"}]}`, "a\n[image]"},
		{`{"other": 1}`, `{"other":1}`},
	} {
		if got := transcript.ResponseText([]byte(tc.raw)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.raw, got, tc.want)
		}
	}
}

// TestHookListWrites: a todo tool's PostToolUse sends its list write as the
// call, for Tack to make the list of where it appends it; a TaskCreate's
// carries the id Claude Code gave the task, from its tool_response (the
// task it made) or the text the model saw.
func TestHookListWrites(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ response, want string }{
		{`{"task":{"id":"3","subject":"Ship"}}`, `{"tool":"TaskCreate","args":{"subject":"Ship","description":"d"},"taskId":"3"}`},
		{`{"task":{"id":12}}`, `{"tool":"TaskCreate","args":{"subject":"Ship","description":"d"},"taskId":"12"}`},
		{`"Task #4 created successfully: Ship"`, `{"tool":"TaskCreate","args":{"subject":"Ship","description":"d"},"taskId":"4"}`},
		{`"Task #4 was made"`, `{"tool":"TaskCreate","args":{"subject":"Ship","description":"d"}}`},
		{`{"task":{"id":"a\nb"}}`, `{"tool":"TaskCreate","args":{"subject":"Ship","description":"d"}}`},
		{`{}`, `{"tool":"TaskCreate","args":{"subject":"Ship","description":"d"}}`},
	} {
		payload := `{"session_id":"s","hook_event_name":"PostToolUse","prompt_id":"p1","tool_name":"TaskCreate","tool_use_id":"tu","tool_input":{"subject":"Ship","description":"d"},"tool_response":` + tc.response + `}`
		h, err := transcript.ParseHook([]byte(payload))
		if err != nil {
			t.Fatalf("%s: %v", payload, err)
		}
		var got string
		for _, ev := range h.Events(transcript.HookState{TurnOpen: true}) {
			if ev.Type == "todo/write" {
				got = string(ev.Data)
			}
		}
		if got != tc.want {
			t.Errorf("tool_response %s:\n got %s\nwant %s", tc.response, got, tc.want)
		}
	}
}
