package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// The contract is loaded once; every test's client checks against it.
var contract = sync.OnceValues(func() (routers.Router, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile("../../api.openapi.yaml")
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	return legacy.NewRouter(doc)
})

// contractTransport checks every request a test makes and every response it
// gets against api.openapi.yaml. A request the contract forbids must be
// answered with a 4xx; every response must match the contract exactly,
// status included. It is the only transport tests get, so none can skip it.
type contractTransport struct {
	t      testing.TB
	router routers.Router
	next   http.RoundTripper
}

func (c *contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.t.Helper()
	var reqBody []byte
	if req.Body != nil {
		var err error
		if reqBody, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	ctx := context.Background()
	vreq := req.Clone(ctx)
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))

	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	what := req.Method + " " + req.URL.RequestURI()

	if req.Method == http.MethodHead {
		// HEAD is GET without the body, which leaves nothing to validate
		// but the status.
		if resp.StatusCode >= 500 {
			c.t.Errorf("%s: answered %d", what, resp.StatusCode)
		}
		return resp, nil
	}
	route, params, err := c.router.FindRoute(vreq)
	if err != nil {
		// Outside the contract: only "no such route" answers may come
		// back, or the guard's refusal of a Host it does not serve.
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusForbidden {
			c.t.Errorf("%s: not in the contract (%v), yet answered %d", what, err, resp.StatusCode)
		}
		return resp, nil
	}
	in := &openapi3filter.RequestValidationInput{
		Request: vreq, PathParams: params, Route: route,
		Options: &openapi3filter.Options{MultiError: false, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	}
	if reqErr := openapi3filter.ValidateRequest(ctx, in); reqErr != nil && resp.StatusCode < 400 {
		c.t.Errorf("%s: the contract forbids this request (%v), yet it was answered %d", what, short(reqErr), resp.StatusCode)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(respBody)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		c.t.Errorf("%s: response %d breaks the contract: %v\nbody: %.500s", what, resp.StatusCode, short(err), respBody)
	}
	if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
		c.t.Errorf("%s: answered %d: %s", what, resp.StatusCode, respBody)
	}
	return resp, nil
}

func short(err error) string {
	s := err.Error()
	if len(s) > 1500 {
		s = s[:1500] + "…"
	}
	return s
}

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

// TestContractCoversEveryRoute walks the router: every route it serves must
// be in api.openapi.yaml, and every operation there must be served (the live
// sockets excepted: they are routed only with an Options.Live).
func TestContractCoversEveryRoute(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromFile("../../api.openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	inContract := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			inContract[method+" "+path] = true
		}
	}
	served := map[string]bool{}
	routes, ok := api.New(nil, api.Options{Metrics: http.NotFoundHandler()}).Handler().(chi.Routes)
	if !ok {
		t.Fatal("the handler is not a chi router")
	}
	err = chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		route = strings.ReplaceAll(route, "/*/", "/")
		if len(route) > 1 {
			route = strings.TrimSuffix(route, "/")
		}
		served[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for r := range served {
		if !inContract[r] {
			t.Errorf("%s is served but not in api.openapi.yaml", r)
		}
	}
	for r := range inContract {
		if !served[r] && !strings.HasSuffix(r, "/live") {
			t.Errorf("%s is in api.openapi.yaml but not served", r)
		}
	}
	if len(served) < 12 {
		t.Errorf("walked only %d routes: %v", len(served), served)
	}
}

// TestContractToolTexts checks that the model-facing texts the contract
// quotes are the ones the server writes.
func TestContractToolTexts(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../api.openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := projection.WriteText(projection.Counts{Pending: 1, InProgress: 2, Completed: 3})
	template := strings.NewReplacer("1", "<p>", "2", "<i>", "3", "<c>").Replace(text)
	if !strings.Contains(string(raw), `"`+template+`"`) {
		t.Errorf("api.openapi.yaml does not quote the todo_write text %q", template)
	}
}
