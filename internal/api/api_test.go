package api_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestAPI holds what every route shares (api.go): how a body is decoded and
// bounded, the errors bad input gets, and the OnAppend hook.
func TestAPI(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{
		{name: "BadInput", run: testBadInput},
		{name: "NULCharacters", run: testNULCharacters},
		{name: "OnAppend", run: testOnAppend},
	})
}

func testBadInput(t *testing.T, b *bundle) {
	id := b.openSession()
	ev := "/sessions/" + id + "/events"
	huge := `{"events":[{"type":"message/user","data":{"text":"` + strings.Repeat("x", api.MaxBodyBytes) + `"}}]}`
	cases := []struct {
		method, path, body string
		status             int
		code, msg          string
	}{
		{"POST", ev, `{"events":[`, 400, "invalid", "malformed JSON: unexpected end of input"},
		{"POST", ev, `{"events":[}`, 400, "invalid", "malformed JSON at byte 11: invalid character '}' at start of value"},
		{"POST", ev, ``, 400, "invalid", "request body must be a JSON object"},
		{"POST", ev, `[]`, 400, "invalid", "request body must be a JSON object"},
		{"POST", ev, `"events"`, 400, "invalid", "request body must be a JSON object"},
		{"POST", ev, `{"events":{}}`, 400, "invalid", "`events` must be an array"},
		{"POST", ev, `{"events":[],"expectedSeq":"1"}`, 400, "invalid", "`expectedSeq` must be an integer"},
		{"POST", ev, `{"events":[],"expectedSeq":1.5}`, 400, "invalid", "`expectedSeq` must be an integer"},
		{"POST", ev, `{"events":[{"type":1}]}`, 400, "invalid", "`events.type` must be a string"},
		{"POST", ev, `{"events":[],"extra":1}`, 400, "invalid", `unknown field "extra"`},
		{"POST", ev, `{"events":[{"type":"turn/end","data":{"reason":"completed"},"seq":9}]}`, 400, "invalid", `unknown field "seq"`},
		{"POST", ev, `{"events":[{"type":"message/user","data":{"text":"a"}}]} {}`, 400, "invalid", "request body must hold exactly one JSON object"},
		{"POST", ev, `{"events":[{"type":"message/user","data":{"text":"a"}}]}x`, 400, "invalid", "request body must hold exactly one JSON object"},
		{"POST", ev, `{"events":[]}`, 422, "invalid", "`events` must hold at least one event"},
		{"POST", ev, `{"events":null}`, 422, "invalid", "`events` must hold at least one event"},
		{"POST", ev, `{"events":[` + strings.Repeat(`{"type":"message/user","data":{"text":""}},`, 1000) + `{"type":"message/user","data":{"text":""}}]}`, 413, "too_large", "at most 1000 events per batch, got 1001"},
		{"POST", ev, huge, 413, "too_large", "request body is larger than the limit of 4194304 bytes"},
		{"POST", "/sessions/" + id + "/tools/todo_write", huge, 413, "too_large", "request body is larger than the limit of 4194304 bytes"},
		{"POST", "/sessions", huge, 413, "too_large", "request body is larger than the limit of 4194304 bytes"},
		{"POST", "/sessions", `{"title":5}`, 400, "invalid", "`title` must be a string"},
		{"POST", "/sessions", `{"name":"x"}`, 400, "invalid", `unknown field "name"`},
		{"POST", "/sessions", `{"title":"a"}{}`, 400, "invalid", "request body must hold exactly one JSON object"},
		{"GET", ev + "?after=-1", "", 400, "invalid", "`after` must be an integer from 0 to 9223372036854775807"},
		{"GET", ev + "?after=x", "", 400, "invalid", "`after` must be an integer from 0 to 9223372036854775807"},
		{"GET", ev + "?after=99999999999999999999", "", 400, "invalid", "`after` must be an integer from 0 to 9223372036854775807"},
		{"GET", ev + "?limit=0", "", 400, "invalid", "`limit` must be an integer from 1 to 1000"},
		{"GET", ev + "?limit=1001", "", 400, "invalid", "`limit` must be an integer from 1 to 1000"},
		{"GET", "/sessions/" + id + "/history?before=0", "", 400, "invalid", "`before` must be an integer from 1 to 9223372036854775807"},
		{"GET", "/sessions/" + id + "/history?before=-5", "", 400, "invalid", "`before` must be an integer from 1 to 9223372036854775807"},
		{"GET", "/sessions/" + id + "/history?limit=abc", "", 400, "invalid", "`limit` must be an integer from 1 to 1000"},
		{"DELETE", "/sessions/" + id + "/todos", "", 405, "method_not_allowed", "DELETE is not allowed on /sessions/" + id + "/todos"},
		{"GET", "/nowhere", "", 404, "not_found", "no route for GET /nowhere"},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path+" "+trunc(c.body), func(t *testing.T) {
			var body any
			if c.body != "" {
				body = c.body
			}
			msg := b.wantError(b.do(c.method, c.path, body), c.status, c.code)
			if msg != c.msg {
				t.Errorf("message %q, want %q", msg, c.msg)
			}
		})
	}
	if s := b.session(id); s.LastSeq != 1 {
		t.Errorf("bad requests wrote: lastSeq %d", s.LastSeq)
	}
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}

// testNULCharacters sends what Postgres cannot hold (NUL, bytes that are not
// UTF-8, lone surrogates, numbers beyond numeric). They are refused as
// invalid input, never a 500.
func testNULCharacters(t *testing.T, b *bundle) {
	id := b.openSession()
	b.wantError(b.do("POST", "/sessions", `{"title":"a\u0000b"}`), 422, "invalid")
	for _, body := range []string{
		`{"events":[{"type":"message/user","data":{"text":"a\u0000b"}}]}`,
		`{"events":[{"type":"message/assistant","data":{"text":"ok","toolCalls":[{"id":"c\u0000","name":"n"}]}}]}`,
		`{"events":[{"type":"message/assistant","data":{"text":"ok","toolCalls":[{"id":"c","name":"n","args":{"k":"\u0000"}}]}}]}`,
		`{"events":[{"type":"tool/result","data":{"callId":"c","name":"n","isError":false,"content":"\u0000"}}]}`,
		`{"events":[{"type":"todo/write","data":{"todos":[{"content":"a\u0000","status":"pending"}]}}]}`,
	} {
		b.wantError(b.do("POST", "/sessions/"+id+"/events", body), 422, "invalid")
	}
	// Bytes that are not UTF-8 and lone surrogate escapes are refused in
	// tool call args as in every other string (TestStrictBodies).
	msg := b.wantError(b.do("POST", "/sessions/"+id+"/events", []byte("{\"events\":[{\"type\":\"message/assistant\",\"data\":{\"text\":\"x\",\"toolCalls\":[{\"id\":\"a\",\"name\":\"b\",\"args\":{\"k\":\"\xff\"}}]}}]}")), 400, "invalid")
	if msg != "text must be valid UTF-8, without lone surrogate escapes at /events/0/data/toolCalls/0/args/k" {
		t.Errorf("message %q", msg)
	}
	b.wantError(b.do("POST", "/sessions/"+id+"/events", `{"events":[{"type":"message/assistant","data":{"text":"x","toolCalls":[{"id":"a","name":"b","args":"\ud800"}]}}]}`, "Idempotency-Key", "s"), 400, "invalid")
	// A number Postgres numeric cannot hold, likewise.
	b.wantError(b.do("POST", "/sessions/"+id+"/events", `{"events":[{"type":"message/assistant","data":{"text":"x","toolCalls":[{"id":"a","name":"b","args":{"n":1e200000}}]}}]}`, "Idempotency-Key", "n"), 422, "invalid")
	var a toolAnswer
	b.want(b.do("POST", "/sessions/"+id+"/tools/todo_write", `{"todos":[{"content":"a\u0000b","status":"pending"}]}`), 422, &a)
	if a.Content != "Error: invalid todo: `content` must not contain NUL characters" {
		t.Errorf("answer %q", a.Content)
	}
	// The same strings with the escape itself escaped are ordinary text, as
	// is a surrogate pair.
	b.appendOK(id, ev("message/user", map[string]any{"text": `a\u0000b`}))
	b.want(b.do("POST", "/sessions/"+id+"/events", `{"events":[{"type":"message/assistant","data":{"text":"\\ud800","toolCalls":[{"id":"a","name":"b","args":"\\ud800\ud83d\ude00"}]}}]}`, "Idempotency-Key", "t"), http.StatusCreated, nil)
	b.want(b.do("POST", "/sessions/"+id+"/tools/todo_write", `{"todos":[{"content":"\\udc00","status":"pending"}]}`, "Idempotency-Key", "u"), http.StatusOK, nil)
	if s := b.session(id); s.LastSeq != 4 {
		t.Errorf("lastSeq %d, want 4", s.LastSeq)
	}
}

// testOnAppend checks the hook the live hub hangs on: called once for every
// committed write, with what it stored, again for an idempotent replay (its
// first answer may have been lost before anyone was told of the commit),
// and never for a rejected request.
func testOnAppend(t *testing.T, b *bundle) {
	type call struct {
		id  string
		res store.AppendResult
	}
	var (
		mu    sync.Mutex
		calls []call
	)
	b = setup(t, b.store, api.Options{OnAppend: func(id string, res store.AppendResult) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, call{id, res})
	}})
	take := func() []call {
		mu.Lock()
		defer mu.Unlock()
		out := calls
		calls = nil
		return out
	}
	id := b.newSession()
	if c := take(); len(c) != 1 || c[0].id != id || c[0].res.Session.ID != id || len(c[0].res.Events) != 0 {
		t.Fatalf("on create: %+v", c)
	}
	b.want(b.do("POST", "/sessions/"+id+"/events", `{"events":[{"type":"turn/start"},{"type":"message/user","data":{"text":"hi"}}]}`, "Idempotency-Key", "a"), http.StatusCreated, nil)
	c := take()
	if len(c) != 1 || len(c[0].res.Events) != 2 || c[0].res.Session.LastSeq != 2 || c[0].res.TodosChanged {
		t.Fatalf("on append: %+v", c)
	}
	b.want(b.do("POST", "/sessions/"+id+"/events", `{"events":[{"type":"turn/start"},{"type":"message/user","data":{"text":"hi"}}]}`, "Idempotency-Key", "a"), http.StatusCreated, nil)
	if c := take(); len(c) != 1 || !c[0].res.Replayed || len(c[0].res.Events) != 2 || c[0].res.Session.LastSeq != 2 {
		t.Fatalf("on replay: %+v", c)
	}
	b.wantError(b.do("POST", "/sessions/"+id+"/events", `{"events":[{"type":"turn/start"}]}`), 409, "conflict")
	b.want(b.do("POST", "/sessions/"+id+"/tools/todo_write", `{"todos":[{"content":"a","status":"pending"},{"content":"a","status":"pending"}]}`), 422, nil)
	if c := take(); len(c) != 0 {
		t.Fatalf("called for a rejection: %+v", c)
	}
	w := b.writeOK(id, todo("a", "pending"))
	c = take()
	if len(c) != 1 || !c[0].res.TodosChanged || c[0].res.Todos == nil || c[0].res.Todos.Version != *w.Version || c[0].res.Session.TodoCounts.Pending != 1 {
		t.Fatalf("on todo_write: %+v", c)
	}
	b.appendOK(id, turnEnd(), turnStart())
	c = take()
	if len(c) != 1 || !c[0].res.TodosChanged || c[0].res.Todos == nil || c[0].res.Todos.Standing {
		t.Fatalf("on a turn/start that ends the plan: %+v", c)
	}
	if !reflect.DeepEqual(*c[0].res.Todos, b.todos(id)) {
		t.Errorf("hook saw %+v, GET todos %+v", *c[0].res.Todos, b.todos(id))
	}
}

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

// TestUnreachableDatabase serves the API over a pool that points at a closed
// port: readiness and every request fail fast with 503 and the JSON error.
func TestUnreachableDatabase(t *testing.T) {
	t.Parallel()
	pc, err := postgres.PoolConfig("postgres://postgres@127.0.0.1:1/test?sslmode=disable", 4)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	st := fast.New(postgres.New(pool, projection.Config{})) // as the server runs it
	t.Cleanup(st.Close)
	b := setup(t, st, api.Options{})
	b.want(b.do("GET", "/healthz", nil), http.StatusOK, nil)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/readyz", ""},
		{"POST", "/sessions", `{}`},
		{"GET", "/sessions", ""},
		{"GET", "/sessions/ses_x", ""},
		{"POST", "/sessions/ses_x/events", `{"events":[{"type":"turn/start"}]}`},
		{"GET", "/sessions/ses_x/events", ""},
		{"GET", "/sessions/ses_x/history", ""},
		{"GET", "/sessions/ses_x/messages", ""},
		{"GET", "/sessions/ses_x/todos", ""},
		{"POST", "/sessions/ses_x/tools/todo_write", `{"todos":[]}`},
		{"POST", "/sessions/ses_x/tools/todo_read", `{}`},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		r := b.do(c.method, c.path, body)
		b.wantError(r, http.StatusServiceUnavailable, "unavailable")
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s: no Retry-After", c.method, c.path)
		}
	}
}

// TestSilentDatabase serves the API over a Postgres whose connections go
// silent (storetest.Proxy.Stall, as in a network partition): a request on a
// pooled connection that never answers gives up at Options.RequestTimeout
// with 503, where without the deadline it would wait as long as the client.
func TestSilentDatabase(t *testing.T) {
	t.Parallel()
	url, proxy := storetest.ProxiedSchemaURL(t)
	pc, err := postgres.PoolConfig(url, 1) // one connection: every request gets the stalled one
	if err != nil {
		t.Fatal(err)
	}
	pg, err := postgres.Open(context.Background(), pc, projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	st := fast.New(pg) // as the server runs it
	t.Cleanup(st.Close)
	// The deadline leaves room for the first request after the stall, which
	// dials a new connection and prepares its statements afresh: on a
	// loaded machine that took more than half a second.
	b := setup(t, st, api.Options{RequestTimeout: 2 * time.Second})
	b.client.Timeout = 10 * time.Second // a hang fails the test rather than stalling it
	var s store.Session
	b.want(b.do("POST", "/sessions", `{}`), http.StatusCreated, &s)

	proxy.Stall()
	b.wantError(b.do("GET", "/sessions/"+s.ID+"/todos", nil), http.StatusServiceUnavailable, "unavailable")
	b.wantError(b.do("POST", "/sessions/"+s.ID+"/events", `{"events":[{"type":"turn/start"}]}`), http.StatusServiceUnavailable, "unavailable")
	proxy.Restore()
	b.want(b.do("POST", "/sessions/"+s.ID+"/events", `{"events":[{"type":"turn/start"}]}`), http.StatusCreated, nil)
}

// TestSlowUpload sends bodies slowly over a raw connection. The store
// deadline starts once the body is in, so an upload slower than it but
// within the body time-out is served; one past the body time-out is 408.
// Neither is ever "the database is unavailable".
func TestSlowUpload(t *testing.T) {
	t.Parallel()
	st := storetest.SQLite(t, projection.Config{})
	srv := httptest.NewServer(api.New(st, api.Options{RequestTimeout: 300 * time.Millisecond, BodyTimeout: 1500 * time.Millisecond}).Handler())
	t.Cleanup(srv.Close)
	// pacer's body time-out is srv's store deadline, so its 408 to a body
	// that never completes says, by the server's own clock, that a store
	// deadline has run out: the upload waits for it instead of sleeping.
	pacer := httptest.NewServer(api.New(st, api.Options{BodyTimeout: 300 * time.Millisecond}).Handler())
	t.Cleanup(pacer.Close)

	body := `{"title":"a slow upload"}`
	// Half the body, a store deadline's wait, the rest.
	c := openUpload(t, srv.URL, len(body))
	_, _ = c.Write([]byte(body[:10]))
	if status, resp := answer(t, openUpload(t, pacer.URL, len(body))); status != http.StatusRequestTimeout {
		t.Fatalf("the pacer's stalled body: %d %s, want 408", status, resp)
	}
	_, _ = c.Write([]byte(body[10:]))
	if status, resp := answer(t, c); status != http.StatusCreated {
		t.Errorf("slow upload within the body time-out: %d %s", status, resp)
	}
	// A body that never completes.
	start := time.Now()
	c = openUpload(t, srv.URL, len(body))
	_, _ = c.Write([]byte(body[:5]))
	status, resp := answer(t, c)
	if status != http.StatusRequestTimeout || !strings.Contains(resp, `"request_timeout"`) {
		t.Errorf("stalled upload: %d %s", status, resp)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("stalled upload answered after %v", d)
	}
}

// openUpload opens a raw connection to the server at base and sends the
// head of a POST /sessions whose body is declared bytes long; the caller
// writes the body, as slowly as it likes, and reads the answer.
func openUpload(t *testing.T, base string, declared int) net.Conn {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "POST /sessions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", addr, declared)
	return c
}

// answer reads the response on c: its status and body.
func answer(t *testing.T, c net.Conn) (int, string) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	return resp.StatusCode, b.String()
}

// TestWriteTimeout has a client that never reads: the response write gives
// up after the write time-out instead of holding the handler.
func TestWriteTimeout(t *testing.T) {
	t.Parallel()
	done := make(chan error, 1)
	// A handler that writes 256 MiB, routed as the router routes any
	// handler it is given: as the metrics.
	big := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 1<<20)
		for range 256 {
			if _, err := w.Write(chunk); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	})
	h := api.New(nil, api.Options{WriteTimeout: 300 * time.Millisecond, Metrics: big}).Handler()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("256 MiB written to a client that reads nothing")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler was still writing after 5 s")
	}
}
