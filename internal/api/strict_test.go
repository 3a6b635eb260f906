package api_test

import (
	"net/http"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestStrictBodies checks the one decoding rule of every request body:
// keys exactly as the contract spells them, never twice, at any depth, and
// text that is valid UTF-8 in every field, rejected the same way whether it
// is a message's text, a tool call's args or a todo's content.
func TestStrictBodies(t *testing.T) {
	t.Parallel()
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, f.Open(t, projection.Config{}), api.Options{})
			id := b.openSession()
			b.writeOK(id, todo("keep me", "pending"))
			evs := "/sessions/" + id + "/events"
			for _, c := range []struct{ name, path, body, msg string }{
				{"key in another case", evs, `{"Events":[{"type":"message/user","data":{"text":"a"}}]}`, `unknown field "Events"`},
				{"nested key in another case", evs, `{"events":[{"Type":"message/user","data":{"text":"a"}}]}`, `unknown field "Type"`},
				{"expectedSeq in another case", evs, `{"events":[{"type":"message/user","data":{"text":"a"}}],"ExpectedSeq":0}`, `unknown field "ExpectedSeq"`},
				{"key twice", evs, `{"events":[{"type":"message/user","data":{"text":"a"}}],"events":[]}`, "key `events` is given twice"},
				{"nested key twice", evs, `{"events":[{"type":"message/user","type":"turn/start","data":{}}]}`, "key `type` is given twice at /events/0"},
				{"data key twice", evs, `{"events":[{"type":"message/user","data":{"text":"a","text":"b"}}]}`, "key `text` is given twice at /events/0/data"},
				{"lone surrogate in text", evs, `{"events":[{"type":"message/user","data":{"text":"\ud800"}}]}`, "text must be valid UTF-8, without lone surrogate escapes at /events/0/data/text"},
				{"invalid bytes in text", evs, "{\"events\":[{\"type\":\"message/user\",\"data\":{\"text\":\"a\xffb\"}}]}", "text must be valid UTF-8, without lone surrogate escapes at /events/0/data/text"},
				{"lone surrogate in args", evs, `{"events":[{"type":"message/assistant","data":{"text":"x","toolCalls":[{"id":"a","name":"b","args":"\udc00"}]}}]}`, "text must be valid UTF-8, without lone surrogate escapes at /events/0/data/toolCalls/0/args"},
				{"invalid bytes in args", evs, "{\"events\":[{\"type\":\"message/assistant\",\"data\":{\"text\":\"x\",\"toolCalls\":[{\"id\":\"a\",\"name\":\"b\",\"args\":{\"k\":\"\xff\"}}]}}]}", "text must be valid UTF-8, without lone surrogate escapes at /events/0/data/toolCalls/0/args/k"},
				{"invalid bytes in a key", evs, "{\"events\":[{\"type\":\"message/user\",\"data\":{\"te\xffxt\":\"a\"}}]}", "text must be valid UTF-8, without lone surrogate escapes at /events/0/data"},
				{"title in another case", "/sessions", `{"Title":"x"}`, `unknown field "Title"`},
				{"title twice", "/sessions", `{"title":"x","title":"y"}`, "key `title` is given twice"},
				{"lone surrogate in title", "/sessions", `{"title":"\udfff"}`, "text must be valid UTF-8, without lone surrogate escapes at /title"},
			} {
				t.Run(c.name, func(t *testing.T) {
					if msg := b.wantError(b.do("POST", c.path, []byte(c.body)), http.StatusBadRequest, "invalid"); msg != c.msg {
						t.Errorf("message %q, want %q", msg, c.msg)
					}
				})
			}
			b.checkRejected(id, []toolCase{
				{"todos twice", `{"todos":[{"content":"a","status":"pending"}],"todos":[]}`, 422, "Error: invalid arguments: the input has the key `todos` twice"},
				{"baseVersion twice", `{"todos":[],"baseVersion":1,"baseVersion":2}`, 422, "Error: invalid arguments: the input has the key `baseVersion` twice"},
				{"item key twice", `{"todos":[{"content":"a","content":"b","status":"pending"}]}`, 422, "Error: invalid arguments: the input has the key `content` twice at /todos/0"},
				{"todos in another case", `{"Todos":[]}`, 422, "Error: invalid arguments: the input has an unexpected key `Todos`"},
				{"item key in another case", `{"todos":[{"Content":"a","status":"pending"}]}`, 422, "Error: invalid todo: unexpected key `Content`; a todo has exactly the keys `content` and `status`"},
				{"lone surrogate in content", `{"todos":[{"content":"\udc00","status":"pending"}]}`, 422, "Error: invalid arguments: the input must be valid UTF-8, without lone surrogate escapes at /todos/0/content"},
				{"invalid bytes in content", "{\"todos\":[{\"content\":\"a\xffb\",\"status\":\"pending\"}]}", 422, "Error: invalid arguments: the input must be valid UTF-8, without lone surrogate escapes at /todos/0/content"},
			})
			var a toolAnswer
			b.want(b.do("POST", "/sessions/"+id+"/tools/todo_read", `{"x":1,"x":2}`), 422, &a)
			if a.Content != "Error: invalid arguments: the input has the key `x` twice" {
				t.Errorf("todo_read: %q", a.Content)
			}
			// A valid surrogate pair and escaped backslashes are text.
			b.appendOK(id, ev("message/user", map[string]any{"text": "\U0001F600 \\ud800"}))
		})
	}
}
