package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestDialects runs every todo_write test of checks, texts, statuses and
// versions again through Claude Code's TodoWrite and codex's update_plan,
// with each call's arguments put in the agent's shape: the answers must be
// todo_write's, in the agent's names for its keys.
func TestDialects(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"TodoWrite", "update_plan"} {
		t.Run(tool, func(t *testing.T) {
			t.Parallel()
			in := func(run func(*testing.T, *bundle)) func(*testing.T, *bundle) {
				return func(t *testing.T, b *bundle) { b.tool = tool; run(t, b) }
			}
			runSuite(t, []suite{
				{name: "Success", run: in(testTodoWriteSuccess)},
				{name: "Errors", run: in(testTodoWriteErrors)},
				{name: "CheckOrder", run: in(testTodoWriteCheckOrder)},
				{name: "NoOpenTurn", run: in(testTodoWriteNoOpenTurn)},
				{name: "SizeLimits", run: in(testTodoWriteSizeLimits)},
				{name: "BaseVersion", run: in(testBaseVersion)},
				{name: "ParallelInProgressOff", run: in(testParallelOff)},
				{name: "ParallelInProgressOn", cfg: projection.Config{AllowParallel: true}, run: in(testParallelOn)},
				{name: "OwnKeys", run: in(testDialectOwnKeys)},
			})
		})
	}
}

// testDialectOwnKeys checks what only the agents' shapes have: the keys
// accepted and kept (activeForm) or dropped, codex's inProgress, and the other agent's keys
// rejected by name.
func testDialectOwnKeys(t *testing.T, b *bundle) {
	id := b.openSession()
	var body, other string
	switch b.tool {
	case "TodoWrite":
		body = `{"todos":[{"content":"run the tests","status":"in_progress","activeForm":"Running the tests"},{"content":"ship","status":"pending","activeForm":"Shipping"}]}`
		other = `{"plan":[{"step":"a","status":"pending"}]}`
	case "update_plan":
		body = `{"explanation":"tests first","plan":[{"step":"run the tests","status":"inProgress"},{"step":"ship","status":"pending"}]}`
		other = `{"todos":[{"content":"a","status":"pending"}]}`
	}
	var a toolAnswer
	b.want(b.do("POST", b.toolPath(id), body), http.StatusOK, &a)
	if a.Content != "Updated todo list: 1 pending, 1 in progress, 0 completed." || *a.Version != 2 {
		t.Errorf("answer %+v", a)
	}
	evs := b.events(id)
	want := `{"todos":[{"content":"run the tests","status":"in_progress"},{"content":"ship","status":"pending"}]}`
	if b.tool == "TodoWrite" {
		want = `{"todos":[{"content":"run the tests","status":"in_progress","activeForm":"Running the tests"},{"content":"ship","status":"pending","activeForm":"Shipping"}]}`
	}
	if got := string(evs[len(evs)-1].Data); got != want {
		t.Errorf("stored %s, want %s: the log keeps content, status and activeForm alone", got, want)
	}
	if b.tool == "TodoWrite" {
		if td := b.todos(id); td.Todos[0].ActiveForm != "Running the tests" || td.Todos[1].ActiveForm != "Shipping" {
			t.Errorf("todos %+v: activeForm not kept on the items", td.Todos)
		}
	}
	// Sent as is (not through inDialect): the other agent's shape is refused.
	key := map[string]string{"TodoWrite": "plan", "update_plan": "todos"}[b.tool]
	b.want(b.do("POST", b.toolPath(id), other), http.StatusUnprocessableEntity, &a)
	if want := "Error: invalid arguments: the input has an unexpected key `" + key + "`"; !a.IsError || a.Content != want {
		t.Errorf("other shape answered %+v, want %q", a, want)
	}
	if got := b.session(id).LastSeq; got != 2 {
		t.Errorf("a rejected call moved lastSeq to %d", got)
	}
}

func (b *bundle) toolPath(id string) string {
	if b.tool == "" {
		return "/sessions/" + id + "/tools/todo_write"
	}
	return "/sessions/" + id + "/tools/" + b.tool
}

// inDialect rewrites todo_write arguments into b.tool's shape: codex names
// the list `plan` and an item's text `step`; Claude Code adds activeForm to
// every item. Bodies that are not a JSON object go as they are.
func (b *bundle) inDialect(body string) string {
	if b.tool == "" {
		return body
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil || dec.More() || m == nil {
		return body
	}
	list, hasList := m["todos"]
	if items, ok := list.([]any); ok {
		for _, it := range items {
			o, ok := it.(map[string]any)
			if !ok {
				continue
			}
			switch b.tool {
			case "TodoWrite":
				o["activeForm"] = "Working on it"
			case "update_plan":
				if c, ok := o["content"]; ok {
					delete(o, "content")
					o["step"] = c
				}
			}
		}
	}
	if b.tool == "update_plan" && hasList {
		delete(m, "todos")
		m["plan"] = list
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(m)
	return out.String()
}

// textInDialect is todo_write's answer text in b.tool's names.
func (b *bundle) textInDialect(text string) string {
	const keys = "a todo has exactly the keys `content` and `status`"
	switch b.tool {
	case "TodoWrite":
		if strings.Contains(text, "unexpected key") {
			text = strings.ReplaceAll(text, keys, "a todo has exactly the keys `content`, `status` and `activeForm`")
		}
	case "update_plan":
		text = strings.ReplaceAll(text, "`todos`", "`plan`")
		text = strings.ReplaceAll(text, "`content`", "`step`")
	}
	return text
}

func TestSessionPolicy(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{
		{name: "ServerDefaultOff", run: testPolicy(false)},
		{name: "ServerDefaultOn", cfg: projection.Config{AllowParallel: true}, run: testPolicy(true)},
		{name: "ExternalKey", run: testExternalKey},
		{name: "ACP", run: testACP},
	})
}

// testPolicy checks that a session's own parallelInProgress decides check 5
// and is shown wherever the session is, and that without one the server's
// default applies.
func testPolicy(serverDefault bool) func(*testing.T, *bundle) {
	return func(t *testing.T, b *bundle) {
		two := `{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}`
		for _, own := range []*bool{nil, new(true), new(false)} {
			body := map[string]any{"title": "policy"}
			want := serverDefault
			if own != nil {
				body["parallelInProgress"] = *own
				want = *own
			}
			var s struct {
				ID                 string
				ParallelInProgress *bool
			}
			b.want(b.do("POST", "/sessions", body), http.StatusCreated, &s)
			if s.ParallelInProgress == nil || *s.ParallelInProgress != want {
				t.Fatalf("own %v: created with parallelInProgress %v, want %v", own, s.ParallelInProgress, want)
			}
			if got := b.session(s.ID).ParallelInProgress; got != want {
				t.Errorf("own %v: GET shows %v, want %v", own, got, want)
			}
			var list struct {
				Sessions []struct {
					ID                 string
					ParallelInProgress bool
				}
			}
			b.want(b.do("GET", "/sessions?limit=200", nil), http.StatusOK, &list)
			for _, l := range list.Sessions {
				if l.ID == s.ID && l.ParallelInProgress != want {
					t.Errorf("own %v: the list shows %v, want %v", own, l.ParallelInProgress, want)
				}
			}
			b.appendOK(s.ID, turnStart())
			r := b.do("POST", "/sessions/"+s.ID+"/tools/todo_write", two)
			if wantStatus := map[bool]int{true: 200, false: 422}[want]; r.Status != wantStatus {
				t.Errorf("own %v: two in progress answered %d, want %d: %s", own, r.Status, wantStatus, r.Body)
			}
		}
		msg := b.wantError(b.do("POST", "/sessions", `{"parallelInProgress":"yes"}`), http.StatusBadRequest, "invalid")
		if msg != "`parallelInProgress` must be a boolean" {
			t.Errorf("message %q", msg)
		}
	}
}

func testExternalKey(t *testing.T, b *bundle) {
	var first, again, other struct {
		ID, Title, ExternalKey string
	}
	b.want(b.do("POST", "/sessions", map[string]any{"title": "imported", "externalKey": "claude-code:abc"}), http.StatusCreated, &first)
	if first.ExternalKey != "claude-code:abc" {
		t.Errorf("externalKey %q", first.ExternalKey)
	}
	b.appendOK(first.ID, turnStart())
	r := b.do("POST", "/sessions", map[string]any{"title": "another title", "externalKey": "claude-code:abc"})
	b.want(r, http.StatusOK, &again)
	if again.ID != first.ID || again.Title != "imported" || r.Header.Get("Location") != "/sessions/"+first.ID {
		t.Errorf("again %+v, want the first session %+v unchanged", again, first)
	}
	if got := b.session(first.ID).LastSeq; got != 1 {
		t.Errorf("the found session's lastSeq %d, want 1", got)
	}
	b.want(b.do("POST", "/sessions", map[string]any{"externalKey": "codex:abc"}), http.StatusCreated, &other)
	if other.ID == first.ID {
		t.Error("another key found the same session")
	}
	for _, bad := range []string{`{"externalKey":""}`, `{"externalKey":"` + strings.Repeat("k", 257) + `"}`, `{"externalKey":"a\u0000b"}`} {
		b.wantError(b.do("POST", "/sessions", bad), http.StatusUnprocessableEntity, "invalid")
	}
}

func testACP(t *testing.T, b *bundle) {
	id := b.openSession()
	r := b.do("GET", "/sessions/"+id+"/todos?format=acp", nil)
	b.want(r, http.StatusOK, nil)
	if got, want := string(r.Body), `{"sessionUpdate":"plan","entries":[]}`+"\n"; got != want {
		t.Errorf("empty plan %s, want %s", got, want)
	}
	b.writeOK(id, todo("read <the> code", "completed"), todo("fix it", "in_progress"), todo("ship", "pending"))
	r = b.do("GET", "/sessions/"+id+"/todos?format=acp", nil)
	b.want(r, http.StatusOK, nil)
	want := `{"sessionUpdate":"plan","entries":[{"content":"read <the> code","priority":"medium","status":"completed"},{"content":"fix it","priority":"medium","status":"in_progress"},{"content":"ship","priority":"medium","status":"pending"}]}` + "\n"
	if string(r.Body) != want {
		t.Errorf("plan %s\nwant %s", r.Body, want)
	}
	etag := r.Header.Get("ETag")
	if plain := b.do("GET", "/sessions/"+id+"/todos", nil).Header.Get("ETag"); etag == "" || etag == plain {
		t.Errorf("ACP ETag %q must differ from the view's %q", etag, plain)
	}
	b.want(b.do("GET", "/sessions/"+id+"/todos?format=acp", nil, "If-None-Match", etag), http.StatusNotModified, nil)
	b.wantError(b.do("GET", "/sessions/"+id+"/todos?format=xml", nil), http.StatusBadRequest, "invalid")
}

// TestDialectStrictBodies holds the agents' shapes to todo_write's decoding
// rule inside their items too: a key given twice in an item, or text that
// is not valid UTF-8 (invalid bytes, a lone surrogate escape) anywhere in
// the body, dropped keys included, is rejected with todo_write's text and
// writes nothing. The translation decodes and re-encodes every item, which
// would keep one of two keys and turn bad text into U+FFFD, so the bodies
// are sent as they are, not through inDialect (whose encoding/json would do
// the same).
func TestDialectStrictBodies(t *testing.T) {
	t.Parallel()
	const (
		badText = "Error: invalid arguments: the input must be valid UTF-8, without lone surrogate escapes at "
		twice   = "Error: invalid arguments: the input has the key "
	)
	cases := map[string][]toolCase{
		"TodoWrite": {
			{"content twice", `{"todos":[{"content":"a","content":"b","status":"pending","activeForm":"A"}]}`, 422, twice + "`content` twice at /todos/0"},
			{"status twice", `{"todos":[{"content":"a","status":"completed","status":"pending","activeForm":"A"}]}`, 422, twice + "`status` twice at /todos/0"},
			{"activeForm twice", `{"todos":[{"content":"a","status":"pending","activeForm":"A","activeForm":"B"}]}`, 422, twice + "`activeForm` twice at /todos/0"},
			{"key twice in the second item", `{"todos":[{"content":"a","status":"pending","activeForm":"A"},{"content":"b","status":"pending","status":"pending","activeForm":"B"}]}`, 422, twice + "`status` twice at /todos/1"},
			{"lone surrogate in content", `{"todos":[{"content":"\ud800","status":"pending","activeForm":"A"}]}`, 422, badText + "/todos/0/content"},
			{"invalid bytes in content", "{\"todos\":[{\"content\":\"a\xffb\",\"status\":\"pending\",\"activeForm\":\"A\"}]}", 422, badText + "/todos/0/content"},
			{"lone surrogate in activeForm", `{"todos":[{"content":"a","status":"pending","activeForm":"\udc00"}]}`, 422, badText + "/todos/0/activeForm"},
			{"invalid bytes in an item key", "{\"todos\":[{\"content\":\"a\",\"status\":\"pending\",\"active\xffForm\":\"A\"}]}", 422, badText + "/todos/0"},
		},
		"update_plan": {
			{"step twice", `{"plan":[{"step":"a","step":"b","status":"pending"}]}`, 422, twice + "`step` twice at /plan/0"},
			{"status twice", `{"plan":[{"step":"a","status":"inProgress","status":"pending"}]}`, 422, twice + "`status` twice at /plan/0"},
			{"key twice in the second item", `{"plan":[{"step":"a","status":"pending"},{"step":"b","step":"c","status":"pending"}]}`, 422, twice + "`step` twice at /plan/1"},
			{"explanation twice", `{"explanation":"x","explanation":"y","plan":[]}`, 422, twice + "`explanation` twice"},
			{"lone surrogate in step", `{"plan":[{"step":"\udfff","status":"pending"}]}`, 422, badText + "/plan/0/step"},
			{"invalid bytes in step", "{\"plan\":[{\"step\":\"a\xffb\",\"status\":\"pending\"}]}", 422, badText + "/plan/0/step"},
			{"lone surrogate in explanation", `{"explanation":"\ud800","plan":[]}`, 422, badText + "/explanation"},
			{"invalid bytes in status", "{\"plan\":[{\"step\":\"a\",\"status\":\"in\xffProgress\"}]}", 422, badText + "/plan/0/status"},
		},
	}
	valid := map[string]string{
		"TodoWrite":   `{"todos":[{"content":"ship \ud83d\ude00","status":"in_progress","activeForm":"Shipping"}]}`,
		"update_plan": `{"explanation":"\ud83d\ude00","plan":[{"step":"ship \ud83d\ude00","status":"inProgress"}]}`,
	}
	for _, f := range storetest.Factories {
		for _, tool := range []string{"TodoWrite", "update_plan"} {
			t.Run(f.Name+"/"+tool, func(t *testing.T) {
				t.Parallel()
				b := setup(t, f.Open(t, projection.Config{}), api.Options{})
				b.tool = tool
				id := b.openSession()
				b.writeOK(id, todo("keep me", "pending"))
				b.checkRejectedAsIs(id, cases[tool])
				// A surrogate pair is text: the shape still takes it.
				var a toolAnswer
				b.want(b.do("POST", b.toolPath(id), []byte(valid[tool])), http.StatusOK, &a)
				if got := b.todos(id).Todos; len(got) != 1 || got[0].Content != "ship \U0001F600" {
					t.Errorf("valid body stored %+v", got)
				}
			})
		}
	}
}
