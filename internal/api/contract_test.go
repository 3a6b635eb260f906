package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/go-chi/chi/v5"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
	"github.com/tack-dev/tack/internal/transcript"
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
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// A stream (GET /mcp) lasts as long as its reader wants: its
		// route and status are held to the contract, not its events.
		if _, _, err := c.router.FindRoute(vreq); err != nil || resp.StatusCode != http.StatusOK {
			c.t.Errorf("%s %s: a stream answered %d outside the contract (%v)", req.Method, req.URL.RequestURI(), resp.StatusCode, err)
		}
		return resp, nil
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

// contractPath is the path of api.openapi.yaml that describes a route the
// router serves: an agent's hook (/hooks/claude-code) is /hooks/{agent}, an
// agent's own list tool (/sessions/{id}/tools/TodoWrite) is
// /sessions/{id}/tools/{tool}, so that an agent's file adds routes and no
// line of the contract. Every other route is its own path.
func contractPath(route string) string {
	if name, ok := strings.CutPrefix(route, "/hooks/"); ok && transcript.Lookup(name) != nil {
		return "/hooks/{agent}"
	}
	if tool, ok := strings.CutPrefix(route, "/sessions/{id}/tools/"); ok {
		if _, dialect := projection.DialectOf(tool); dialect {
			return "/sessions/{id}/tools/{tool}"
		}
	}
	return route
}

// TestContractCoversEveryRoute walks the router: every route it serves must
// be in api.openapi.yaml, and every operation there must be served (the live
// sockets excepted: they are routed only with an Options.Live). The routes
// of each agent, its hook and its list tool, are the contract's templated
// paths (contractPath).
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
		served[method+" "+contractPath(route)] = true
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

// TestContractAgentPaths: the contract finds each route the router serves at
// the path contractPath names, so a tool or hook with a path of its own
// (todo_write, TaskCreate) is never read as an agent's; and a name no agent
// has, of a list tool or a hook, is answered as the templated paths say:
// 404 not_found, with or without a credential.
func TestContractAgentPaths(t *testing.T) {
	t.Parallel()
	router, err := contract()
	if err != nil {
		t.Fatal(err)
	}
	routes, _ := api.New(nil, api.Options{Metrics: http.NotFoundHandler()}).Handler().(chi.Routes)
	found := 0
	err = chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		route = strings.ReplaceAll(route, "/*/", "/")
		if len(route) > 1 {
			route = strings.TrimSuffix(route, "/")
		}
		req, _ := http.NewRequest(method, "http://tack.test"+strings.ReplaceAll(route, "{id}", "ses_1"), nil)
		r, _, err := router.FindRoute(req)
		switch {
		case err != nil:
			t.Errorf("%s %s: not found in the contract: %v", method, route, err)
		case r.Path != contractPath(route):
			t.Errorf("%s %s: the contract reads it as %s, want %s", method, route, r.Path, contractPath(route))
		case r.Path != route:
			found++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(transcript.Agents()) + len(projection.Dialects()); found != want {
		t.Errorf("%d routes found at a templated path, want %d: each agent's hook and list tool", found, want)
	}

	a := setupAuth(t, storetest.Factories[sqliteFactory(t)].Open(t, projection.Config{}), 0, 0)
	for _, path := range []string{"/sessions/" + a.session + "/tools/no_such_tool", "/hooks/no-such-agent"} {
		for _, cred := range [][]string{{"Authorization", "Bearer " + a.write}, nil} {
			var e struct {
				Error struct{ Code, Message string }
			}
			a.want(a.do("POST", path, map[string]any{}, cred...), http.StatusNotFound, &e)
			if e.Error.Code != "not_found" || e.Error.Message != "no route for POST "+path {
				t.Errorf("POST %s (credential %v): %+v", path, cred != nil, e.Error)
			}
		}
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
	runSuite(t, []suite{{name: "Answered", run: testContractToolTextsAnswered}})
}

// quoted finds the texts in double quotes of a description, its line breaks
// and indents read as the one space they stand for.
var quoted = regexp.MustCompile(`"([^"]+)"`)

// testContractToolTextsAnswered holds every text a tool route's contract
// quotes to what the server answers that route: each route is called with
// 1 pending, 2 in progress and 3 completed items (todo_read after them), and
// once with a blank content, which every route refuses. A quote with the
// placeholders <p>, <i>, <c> filled in must be a whole answer or its first
// line; one ending in "…" must begin an answer. A quote that matches no
// answer, a tool route that quotes none, or one with an example this test
// cannot check, fails:
// the contract says nothing to the model that the server does not.
func testContractToolTextsAnswered(t *testing.T, b *bundle) {
	doc, err := openapi3.NewLoader().LoadFromFile("../../api.openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var s store.Session
	b.want(b.do("POST", "/sessions", map[string]any{"title": "texts", "parallelInProgress": true}), http.StatusCreated, &s)
	b.appendOK(s.ID, turnStart())
	list, _ := json.Marshal(map[string]any{"todos": []map[string]any{todo("a", "pending"),
		todo("b", "in_progress"), todo("c", "in_progress"), todo("d", "completed"), todo("e", "completed"), todo("f", "completed")}})
	blank, _ := json.Marshal(map[string]any{"todos": []map[string]any{todo(" ", "pending")}})
	fill := strings.NewReplacer("<p>", "1", "<i>", "2", "<c>", "3")

	// The writes go first, so that todo_read reads the list they wrote.
	paths := slices.Sorted(maps.Keys(doc.Paths.Map()))
	read := func(p string) int {
		if strings.HasSuffix(p, "/todo_read") {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(paths, func(x, y string) int { return read(x) - read(y) })
	routes := 0
	var taskRoutes []string
	// The agents' own list tools share one path, each tool a route of it:
	// its texts hold for every one.
	type route struct{ path, tool string }
	var tools []route
	for _, path := range paths {
		tool, ok := strings.CutPrefix(path, "/sessions/{id}/tools/")
		if !ok || doc.Paths.Value(path).Post == nil {
			continue
		}
		if tool != "{tool}" {
			tools = append(tools, route{path, tool})
			continue
		}
		for _, d := range projection.Dialects() {
			tools = append(tools, route{path, d.Tool})
		}
	}
	for _, r := range tools {
		path, tool := r.path, r.tool
		op := doc.Paths.Value(path).Post
		routes++
		if strings.HasPrefix(tool, "Task") {
			taskRoutes = append(taskRoutes, path)
			continue
		}
		url := strings.Replace(strings.Replace(path, "{id}", s.ID, 1), "{tool}", tool, 1)
		var ok1, rejected toolAnswer
		if tool == "todo_read" {
			b.want(b.do("POST", url, map[string]any{}), http.StatusOK, &ok1)
			b.want(b.do("POST", url, map[string]any{"todos": []any{}}), http.StatusUnprocessableEntity, &rejected)
		} else {
			b.tool = tool
			if tool == "todo_write" {
				b.tool = ""
			}
			b.want(b.do("POST", url, b.inDialect(string(list))), http.StatusOK, &ok1)
			b.want(b.do("POST", url, b.inDialect(string(blank))), http.StatusUnprocessableEntity, &rejected)
		}
		answers := []string{ok1.Content, rejected.Content}

		texts := []string{op.Summary, op.Description}
		for _, r := range op.Responses.Map() {
			if r.Value == nil {
				continue
			}
			if r.Value.Description != nil {
				texts = append(texts, *r.Value.Description)
			}
			for _, mt := range r.Value.Content {
				if mt.Example != nil || len(mt.Examples) > 0 {
					t.Errorf("%s: a response example this test does not check; add its input here", path)
				}
			}
		}
		quotes := 0
		for _, text := range texts {
			for _, m := range quoted.FindAllStringSubmatch(strings.Join(strings.Fields(text), " "), -1) {
				quotes++
				want := fill.Replace(m[1])
				found := false
				for _, got := range answers {
					first, _, _ := strings.Cut(got, "\n")
					if prefix, ok := strings.CutSuffix(want, "…"); ok {
						found = found || strings.HasPrefix(got, prefix)
					} else {
						found = found || got == want || first == want
					}
				}
				if !found {
					t.Errorf("%s (%s): the contract quotes %q, the server answers %q", path, tool, m[1], answers)
				}
			}
		}
		if quotes == 0 {
			t.Errorf("%s: the contract quotes no model-facing text", path)
		}
	}
	if want := 6 + len(projection.Dialects()); routes != want {
		t.Errorf("%d tool routes, want %d: todo_write, todo_read, the four task tools and each agent's list tool", routes, want)
	}
	checkTaskTexts(t, b, doc, taskRoutes)
}

// checkTaskTexts holds the texts the task tools' contract quotes to what a
// short script of calls answers: every quote, its placeholders filled with
// the script's ids, subjects and fields and cut at any "…", must be part
// of one of the answers.
func checkTaskTexts(t *testing.T, b *bundle, doc *openapi3.T, routes []string) {
	if len(routes) != 4 {
		t.Errorf("task tool routes %v, want TaskCreate, TaskUpdate, TaskGet and TaskList", routes)
	}
	id := b.openSession()
	var answers []string
	call := func(tool string, args map[string]any, status int) {
		t.Helper()
		var a toolAnswer
		b.want(b.do("POST", "/sessions/"+id+"/tools/"+tool, args), status, &a)
		answers = append(answers, a.Content)
	}
	call("TaskList", map[string]any{}, http.StatusOK)
	call("TaskCreate", map[string]any{"subject": "a", "description": "d"}, http.StatusOK)
	call("TaskCreate", map[string]any{"subject": "b", "description": "d"}, http.StatusOK)
	call("TaskUpdate", map[string]any{"taskId": "2", "addBlockedBy": []string{"1"}, "owner": "me"}, http.StatusOK)
	call("TaskGet", map[string]any{"taskId": "2"}, http.StatusOK)
	call("TaskGet", map[string]any{"taskId": "1"}, http.StatusOK)
	call("TaskList", map[string]any{}, http.StatusOK)
	call("TaskCreate", map[string]any{"subject": "c", "description": "d"}, http.StatusOK)
	call("TaskUpdate", map[string]any{"taskId": "3", "status": "deleted"}, http.StatusOK)
	call("TaskGet", map[string]any{"taskId": "99"}, http.StatusNotFound)
	call("TaskCreate", map[string]any{"subject": " ", "description": "d"}, http.StatusUnprocessableEntity)

	fills := map[string][]string{"<id>": {"1", "2", "3"}, "<taskId>": {"1", "2", "3"}, "<subject>": {"a", "b", "c"},
		"<status>": {"pending"}, "<description>": {"d"}, "<owner>": {"me"}}
	// candidates is want with each placeholder replaced by each of its values.
	var candidates func(want string) []string
	candidates = func(want string) []string {
		for ph, vals := range fills {
			if strings.Contains(want, ph) {
				var out []string
				for _, v := range vals {
					out = append(out, candidates(strings.Replace(want, ph, v, 1))...)
				}
				return out
			}
		}
		return []string{want}
	}
	for _, path := range routes {
		op := doc.Paths.Value(path).Post
		quotes := 0
		for _, text := range []string{op.Summary, op.Description} {
			for _, m := range quoted.FindAllStringSubmatch(strings.Join(strings.Fields(text), " "), -1) {
				quotes++
				want, _, _ := strings.Cut(m[1], "…") // a list goes on: its first entry stands for it
				want = strings.TrimSuffix(want, ", ")
				found := false
				for _, c := range candidates(want) {
					for _, got := range answers {
						found = found || strings.Contains(got, c)
					}
				}
				if !found {
					t.Errorf("%s: the contract quotes %q, the server answers %q", path, m[1], answers)
				}
			}
		}
		if quotes == 0 {
			t.Errorf("%s: the contract quotes no model-facing text", path)
		}
	}
}
