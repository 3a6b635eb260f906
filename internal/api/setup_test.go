package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// The tests of each handler file sit beside it (sessions_test.go beside
// sessions.go, api_test.go beside api.go); what they share is here: setup
// and the bundle it gives, whose client holds every exchange to
// api.openapi.yaml (contract_test.go), and the helpers that speak the API.

// bundle is what setup gives a test: the store behind the API and a client
// that validates every exchange against the contract.
type bundle struct {
	t      *testing.T
	store  store.Store
	server *api.Server
	url    string
	client *http.Client
	// tool is the todo tool the todo_write tests call: "" for todo_write,
	// or the name of one of projection.Dialects (TestDialects).
	tool string
}

// setup serves the real router over st on httptest.
func setup(t *testing.T, st store.Store, opts api.Options) *bundle {
	t.Helper()
	router, err := contract()
	if err != nil {
		t.Fatalf("load api.openapi.yaml: %v", err)
	}
	server := api.New(st, opts)
	srv := httptest.NewServer(server.Handler())
	t.Cleanup(srv.Close)
	return &bundle{
		t:      t,
		store:  st,
		server: server,
		url:    srv.URL,
		client: &http.Client{Transport: &contractTransport{t: t, router: router, next: srv.Client().Transport}},
	}
}

// suite is one test of the API, run once per store implementation.
type suite struct {
	name string
	cfg  projection.Config
	run  func(t *testing.T, b *bundle)
}

// runSuite runs every test once per entry of storetest.Factories, each on a
// fresh store.
func runSuite(t *testing.T, tests []suite) {
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(t, setup(t, f.Open(t, tc.cfg), api.Options{}))
				})
			}
		})
	}
}

// response is an answer, its body read.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends a request. body is sent as is when it is a string or []byte, and
// as JSON otherwise; nil sends no body. hdr is name, value pairs.
func (b *bundle) do(method, path string, body any, hdr ...string) response {
	b.t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	case []byte:
		rd = bytes.NewReader(v)
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			b.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, b.url+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	if rd != nil || method != http.MethodGet && method != http.MethodHead {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return b.send(req)
}

// doRaw sends a body without a Content-Type.
func (b *bundle) doRaw(method, path, body string) response {
	b.t.Helper()
	req, err := http.NewRequest(method, b.url+path, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	return b.send(req)
}

func (b *bundle) send(req *http.Request) response {
	b.t.Helper()
	method, path := req.Method, req.URL.Path
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

// want checks the status and decodes the body into v (when not nil).
func (b *bundle) want(r response, status int, v any) {
	b.t.Helper()
	if r.Status != status {
		b.t.Fatalf("status %d, want %d; body: %s", r.Status, status, r.Body)
	}
	if v != nil {
		if err := json.Unmarshal(r.Body, v); err != nil {
			b.t.Fatalf("decode %s: %v", r.Body, err)
		}
	}
}

// apiError is the JSON error body.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// wantError checks a JSON error's status and code, and returns its message.
func (b *bundle) wantError(r response, status int, code string) string {
	b.t.Helper()
	var e apiError
	b.want(r, status, &e)
	if e.Error.Code != code {
		b.t.Fatalf("error code %q, want %q (%s)", e.Error.Code, code, e.Error.Message)
	}
	return e.Error.Message
}

type toolAnswer struct {
	IsError bool   `json:"isError"`
	Content string `json:"content"`
	Result  *struct {
		Todos  []projection.Item `json:"todos"`
		Counts projection.Counts `json:"counts"`
	} `json:"result"`
	Version *int64 `json:"version"`
}

func (a toolAnswer) versionOr(t *testing.T) int64 {
	t.Helper()
	if a.Version == nil {
		t.Fatal("no version")
	}
	return *a.Version
}

// newSession creates a session and returns its id.
func (b *bundle) newSession() string {
	b.t.Helper()
	var s store.Session
	b.want(b.do("POST", "/sessions", map[string]any{"title": "test"}), http.StatusCreated, &s)
	return s.ID
}

func ev(typ string, data any) map[string]any {
	return map[string]any{"type": typ, "data": data}
}

func turnStart() map[string]any { return ev("turn/start", map[string]any{}) }
func turnEnd() map[string]any   { return ev("turn/end", map[string]any{"reason": "completed"}) }
func userMsg(s string) map[string]any {
	return ev("message/user", map[string]any{"text": s})
}

// appendOK appends events and returns them as stored.
func (b *bundle) appendOK(id string, events ...map[string]any) []projection.Event {
	b.t.Helper()
	var out struct{ Events []projection.Event }
	b.want(b.do("POST", "/sessions/"+id+"/events", map[string]any{"events": events}), http.StatusCreated, &out)
	return out.Events
}

// openSession creates a session with an open turn.
func (b *bundle) openSession() string {
	b.t.Helper()
	id := b.newSession()
	b.appendOK(id, turnStart())
	return id
}

func todo(content, status string) map[string]any {
	return map[string]any{"content": content, "status": status}
}

// writeOK calls todo_write and returns its answer, failing unless it is 200.
func (b *bundle) writeOK(id string, todos ...map[string]any) toolAnswer {
	b.t.Helper()
	if todos == nil {
		todos = []map[string]any{}
	}
	var a toolAnswer
	body, _ := json.Marshal(map[string]any{"todos": todos})
	b.want(b.do("POST", b.toolPath(id), b.inDialect(string(body))), http.StatusOK, &a)
	return a
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

func (b *bundle) session(id string) store.Session {
	b.t.Helper()
	var s store.Session
	b.want(b.do("GET", "/sessions/"+id, nil), http.StatusOK, &s)
	return s
}

func (b *bundle) todos(id string) projection.Todos {
	b.t.Helper()
	var td projection.Todos
	b.want(b.do("GET", "/sessions/"+id+"/todos", nil), http.StatusOK, &td)
	return td
}

// events reads the whole log, page after page.
func (b *bundle) events(id string) []projection.Event {
	b.t.Helper()
	all := []projection.Event{}
	for after := int64(0); ; {
		var out struct {
			Events  []projection.Event
			HasMore bool
		}
		b.want(b.do("GET", fmt.Sprintf("/sessions/%s/events?after=%d&limit=1000", id, after), nil), http.StatusOK, &out)
		all = append(all, out.Events...)
		if !out.HasMore || len(out.Events) == 0 {
			return all
		}
		after = out.Events[len(out.Events)-1].Seq
	}
}

// editOK edits the list against base and returns the view it left.
func (b *bundle) editOK(id string, base int64, todos ...map[string]any) projection.Todos {
	b.t.Helper()
	if todos == nil {
		todos = []map[string]any{}
	}
	var td projection.Todos
	b.want(b.do("PUT", "/sessions/"+id+"/todos", map[string]any{"todos": todos, "baseVersion": base}), http.StatusOK, &td)
	return td
}

func (b *bundle) edit(id string, base int64, todos ...map[string]any) response {
	b.t.Helper()
	if todos == nil {
		todos = []map[string]any{}
	}
	return b.do("PUT", "/sessions/"+id+"/todos", map[string]any{"todos": todos, "baseVersion": base})
}

func (b *bundle) read(id string) toolAnswer {
	b.t.Helper()
	var a toolAnswer
	b.want(b.do("POST", "/sessions/"+id+"/tools/todo_read", map[string]any{}), http.StatusOK, &a)
	return a
}

// toolCase is a todo_write call and the answer it must get.
type toolCase struct {
	name   string
	body   string
	status int
	text   string
}

// checkRejected runs each case, in b.tool's shape, on session id and checks
// that nothing was written by any of them.
func (b *bundle) checkRejected(id string, cases []toolCase) {
	b.t.Helper()
	var inShape []toolCase
	for _, tc := range cases {
		if b.tool == "TodoWrite" && strings.Contains(tc.body, "activeForm") {
			continue // TodoWrite's own key, accepted there (TestDialects)
		}
		tc.body, tc.text = b.inDialect(tc.body), b.textInDialect(tc.text)
		inShape = append(inShape, tc)
	}
	b.checkRejectedAsIs(id, inShape)
}

// checkRejectedAsIs is checkRejected with each case's body sent as it is,
// already in b.tool's shape.
func (b *bundle) checkRejectedAsIs(id string, cases []toolCase) {
	b.t.Helper()
	before, beforeTodos := b.session(id), b.todos(id)
	for _, tc := range cases {
		b.t.Run(tc.name, func(t *testing.T) {
			var a toolAnswer
			r := b.do("POST", b.toolPath(id), tc.body)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			_ = json.Unmarshal(r.Body, &a)
			if !a.IsError || a.Content != tc.text || a.Result != nil || a.Version != nil {
				t.Errorf("answer %s\nwant content %q", r.Body, tc.text)
			}
		})
	}
	if after := b.session(id); after.LastSeq != before.LastSeq {
		b.t.Errorf("rejected calls moved lastSeq %d -> %d", before.LastSeq, after.LastSeq)
	}
	if after := b.todos(id); !reflect.DeepEqual(after, beforeTodos) {
		b.t.Errorf("rejected calls changed the todos: %+v -> %+v", beforeTodos, after)
	}
}
