package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
	"github.com/tack-dev/tack/web"
)

// authBundle is a server in -auth token with the whole router of cmd/server
// (API, sockets, UI) and the credentials the tests use.
type authBundle struct {
	*bundle
	svc  *auth.Service
	hub  *live.Hub
	logs *storetest.LogBuffer
	// session is alice's.
	session string
	// Tokens: alice's write, read and revoked ones; bob's write one, and
	// the one bob made through the server for his agent; an admin's.
	write, read, revoked, other, otherAgent, admin string
	cookie                                         string
	// revokedCookie is a browser's sign-in made with a token since revoked.
	revokedCookie string
	// spare is the id of a token of alice's that DELETE /tokens/{id} revokes.
	spare string
}

// setupAuth serves st in -auth token with the write limit rate and burst;
// each tweak may change the auth and hub options first.
func setupAuth(t *testing.T, st store.Store, rate float64, burst int, tweaks ...func(*api.AuthOptions, *live.Options)) *authBundle {
	t.Helper()
	ctx := context.Background()
	logs := &storetest.LogBuffer{}
	svc := &auth.Service{Store: st}
	var liveOpts live.Options
	authOpts := api.AuthOptions{Service: svc, WriteRate: rate, WriteBurst: burst}
	for _, tweak := range tweaks {
		tweak(&authOpts, &liveOpts)
	}
	hub := live.New(st, liveOpts)
	authOpts.OnSignOut = hub.CloseCredential
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		hub.Close(ctx)
	})
	reg := prometheus.NewRegistry()
	if err := hub.Register(reg); err != nil {
		t.Fatal(err)
	}
	b := setup(t, st, api.Options{
		Logger:   slog.New(slog.NewTextHandler(logs, nil)),
		OnAppend: hub.OnAppend,
		Auth:     authOpts,
		UI:       web.Handler(), Live: hub,
		Registerer: reg, Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
	})
	a := &authBundle{bundle: b, svc: svc, hub: hub, logs: logs}
	token := func(name, scope string) (string, store.Token) {
		secret, tok, err := svc.CreateToken(ctx, name, scope)
		if err != nil {
			t.Fatal(err)
		}
		return secret, tok
	}
	a.write, _ = token("alice", auth.Write)
	a.read, _ = token("alice", auth.Read)
	var revoked store.Token
	a.revoked, revoked = token("alice", auth.Write)
	if _, err := st.RevokeToken(ctx, revoked.ID); err != nil {
		t.Fatal(err)
	}
	a.other, _ = token("bob", auth.Write)
	_, spare := token("alice", auth.Read)
	a.spare = spare.ID
	alice, _, _ := st.EnsurePrincipal(ctx, "alice")
	sess, _, err := st.CreateSession(ctx, store.NewSession{Title: "alice's", Owner: alice.ID})
	if err != nil {
		t.Fatal(err)
	}
	a.session = sess.ID
	// An open turn, so that todo_write has an agent session to land on.
	if _, err := st.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{{Type: projection.TypeTurnStart, Data: json.RawMessage(`{}`)}}}); err != nil {
		t.Fatal(err)
	}
	a.cookie = a.signIn(map[string]string{"token": a.write})
	// A browser signed in with a token that is then revoked.
	doomed, doomedTok := token("alice", auth.Write)
	a.revokedCookie = a.signIn(map[string]string{"token": doomed})
	if _, err := st.RevokeToken(ctx, doomedTok.ID); err != nil {
		t.Fatal(err)
	}
	// Bob, signed in, makes a token for his agent.
	bobs := a.signIn(map[string]string{"token": a.other})
	var made struct{ Token string }
	r := a.do("POST", "/tokens", map[string]string{"name": "bob's laptop"}, "Cookie", api.CookieName+"="+bobs)
	if err := json.Unmarshal(r.Body, &made); r.Status != http.StatusCreated || err != nil {
		t.Fatalf("bob's agent token: %d %s", r.Status, r.Body)
	}
	a.otherAgent = made.Token
	var root store.Token
	a.admin, root = token("root", auth.Write)
	if err := st.SetAdmin(ctx, root.PrincipalID, true); err != nil {
		t.Fatal(err)
	}
	return a
}

// signIn posts body to /login and returns the sign-in cookie's value.
func (a *authBundle) signIn(body any) string {
	a.t.Helper()
	r := a.do("POST", "/login", body)
	if r.Status != http.StatusOK {
		a.t.Fatalf("POST /login: %d %s", r.Status, r.Body)
	}
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == api.CookieName {
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.MaxAge <= 0 || c.Path != "/" {
				a.t.Fatalf("sign-in cookie %+v: want HttpOnly, SameSite=Strict, an expiry, Path=/", c)
			}
			return c.Value
		}
	}
	a.t.Fatalf("POST /login set no %s cookie: %v", api.CookieName, r.Header)
	return ""
}

// credential is one way a request may come.
type credential struct {
	name string
	hdr  func(a *authBundle) []string
}

var credentials = []credential{
	{"none", func(*authBundle) []string { return nil }},
	{"bad token", func(*authBundle) []string {
		return []string{"Authorization", "Bearer tack_notatokenthisservereverissued0000000000"}
	}},
	{"revoked token", func(a *authBundle) []string { return []string{"Authorization", "Bearer " + a.revoked} }},
	{"read token", func(a *authBundle) []string { return []string{"Authorization", "Bearer " + a.read} }},
	{"write token", func(a *authBundle) []string { return []string{"Authorization", "Bearer " + a.write} }},
	{"another principal", func(a *authBundle) []string { return []string{"Authorization", "Bearer " + a.other} }},
	{"another person's agent token", func(a *authBundle) []string { return []string{"Authorization", "Bearer " + a.otherAgent} }},
	{"revoked token's sign-in", func(a *authBundle) []string { return []string{"Cookie", api.CookieName + "=" + a.revokedCookie} }},
	{"admin", func(a *authBundle) []string { return []string{"Authorization", "Bearer " + a.admin} }},
	{"signed-in cookie", func(a *authBundle) []string { return []string{"Cookie", api.CookieName + "=" + a.cookie} }},
	{"cookie, foreign origin", func(a *authBundle) []string {
		return []string{"Cookie", api.CookieName + "=" + a.cookie, "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"}
	}},
}

// public are the routes anyone may use; every other route needs a credential.
var public = map[string]bool{
	"GET /healthz": true, "GET /readyz": true, "POST /login": true, "POST /logout": true,
	"GET /login": true, "GET /static/*": true,
}

// bodies are valid bodies of the write routes, so that an authorized
// request succeeds rather than fails validation.
var bodies = map[string]any{
	"POST /sessions":                        map[string]string{"title": "t"},
	"PATCH /sessions/{id}":                  map[string]string{"title": "renamed"},
	"PUT /sessions/{id}/agent-status":       map[string]string{"status": "busy"},
	"POST /mcp":                             map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]string{"name": "t", "version": "1"}}},
	"POST /hooks/claude-code":               map[string]string{"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": "hi"},
	"POST /hooks/codex":                     map[string]string{"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": "hi"},
	"POST /sessions/{id}/events":            map[string]any{"events": []any{map[string]any{"type": projection.TypeMessageUser, "data": map[string]string{"text": "hi"}}}},
	"POST /sessions/{id}/tools/todo_write":  map[string]any{"todos": []any{map[string]string{"content": "a", "status": "pending"}}},
	"POST /sessions/{id}/tools/TodoWrite":   map[string]any{"todos": []any{map[string]string{"content": "a", "status": "pending", "activeForm": "Doing a"}}},
	"POST /sessions/{id}/tools/update_plan": map[string]any{"plan": []any{map[string]string{"step": "a", "status": "pending"}}},
	"POST /sessions/{id}/tools/todo_read":   map[string]any{},
	"POST /sessions/{id}/tools/TaskCreate":  map[string]string{"subject": "a task", "description": "d"},
	"POST /sessions/{id}/tools/TaskUpdate":  map[string]string{"taskId": "1", "owner": "someone else"},
	"POST /sessions/{id}/tools/TaskGet":     map[string]string{"taskId": "1"},
	"POST /login":                           map[string]string{"token": "tack_wrong"},
}

// routes walks the router the server serves.
func routes(t *testing.T, h http.Handler) [][2]string {
	t.Helper()
	var list [][2]string
	err := chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		route = strings.ReplaceAll(route, "/*/", "/")
		if len(route) > 1 && route != "/static/*" {
			route = strings.TrimSuffix(route, "/")
		}
		list = append(list, [2]string{method, route})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// want is the status class a route must answer a credential with: one
// status, or 0 for "served" (2xx, 3xx, or 426 for a socket route asked
// without an upgrade).
func want(route, method, cred string) int {
	unsafe := method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
	if unsafe && cred == "cookie, foreign origin" {
		return http.StatusForbidden // the guard's cross-site rule, on every route
	}
	if public[method+" "+route] {
		return 0
	}
	switch cred {
	case "none", "bad token", "revoked token", "revoked token's sign-in":
		return http.StatusUnauthorized
	case "read token":
		if unsafe && route != "/mcp" { // /mcp refuses a read token's write calls, not its POSTs
			return http.StatusForbidden
		}
	case "another principal", "another person's agent token":
		if strings.Contains(route, "{id}") && route != "/s/{id}" {
			return http.StatusNotFound
		}
	case "admin":
		// An admin reads (and renames) every session and writes only its
		// own; another's token or sign-in is still not found.
		switch {
		case strings.HasPrefix(route, "/sessions/{id}") && unsafe && method != http.MethodPatch:
			return http.StatusForbidden
		case strings.HasPrefix(route, "/tokens/") || strings.HasPrefix(route, "/me/sign-ins/"):
			return http.StatusNotFound
		}
		return 0
	case "cookie, foreign origin":
		return http.StatusForbidden
	}
	if route == "/principals" {
		return http.StatusForbidden // admins only
	}
	return 0
}

// TestEveryRouteAuthorized sends every route of the router, as walked, each
// credential, and holds the answer to the one rule: a route added later
// without passing through authenticate fails here.
func TestEveryRouteAuthorized(t *testing.T) {
	t.Parallel()
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			a := setupAuth(t, f.Open(t, projection.Config{}), 0, 0)
			list := routes(t, api.New(nil, api.Options{UI: web.Handler(), Live: live.New(nil, live.Options{}), Metrics: http.NotFoundHandler()}).Handler())
			if !slices.Contains(list, [2]string{http.MethodGet, "/metrics"}) {
				t.Errorf("GET /metrics is not among the routes walked: %v", list)
			}
			if len(list) < 18 {
				t.Fatalf("walked only %d routes: %v", len(list), list)
			}
			for _, rt := range list {
				method, route := rt[0], rt[1]
				path := strings.ReplaceAll(route, "{id}", a.session)
				if strings.HasPrefix(route, "/tokens/") {
					path = strings.ReplaceAll(route, "{id}", a.spare)
				}
				signInRoute := strings.HasPrefix(route, "/me/sign-ins/")
				path = strings.ReplaceAll(path, "/static/*", "/static/v/app.js")
				for _, c := range credentials {
					hdr := c.hdr(a)
					if signInRoute {
						// A sign-in of alice's to end, new for each credential.
						path = "/me/sign-ins/" + a.newSignIn()
					}
					if route == "/mcp" {
						hdr = append(hdr, "Accept", "application/json, text/event-stream")
					}
					body := bodies[method+" "+route]
					if method+" "+route == "POST /login" {
						body = map[string]string{"token": a.write}
					}
					if strings.Contains(route, "/tools/") {
						// The model has seen the list (a person's edit above
						// would otherwise have the write told of it).
						if _, err := a.store.TodoRead(context.Background(), a.session); err != nil {
							t.Fatal(err)
						}
					}
					if strings.Contains(route, "/tools/Task") {
						// Task #1 to update and read, whatever came before.
						task := projection.TaskWrite([]projection.TodoInput{{Content: "a task", Status: "pending", AgentFields: projection.AgentFields{TaskID: "1"}}})
						if _, err := a.store.Append(context.Background(), a.session, store.AppendRequest{Events: []projection.NewEvent{task}}); err != nil {
							t.Fatal(err)
						}
					}
					if method+" "+route == "PUT /sessions/{id}/todos" {
						// An edit on the version the list is at, so that an
						// authorized one is served.
						todos, err := a.store.Todos(context.Background(), a.session)
						if err != nil {
							t.Fatal(err)
						}
						body = map[string]any{"todos": []any{map[string]string{"content": "edited", "status": "pending"}}, "baseVersion": todos.Version}
					}
					if body == nil && method == http.MethodPost {
						body = map[string]any{}
					}
					r := a.send(inContract(route) || method == http.MethodPost && route == "/login", method, path, body, hdr...)
					if route == "/logout" && c.name == "signed-in cookie" {
						a.cookie = a.signIn(map[string]string{"token": a.write}) // that one just ended
					}
					w := want(route, method, c.name)
					switch {
					case w == 0 && public[method+" "+route]:
						if r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden {
							t.Errorf("%s %s with %s: %d, but the route is public", method, route, c.name, r.Status)
						}
					case w == 0:
						// GET and DELETE /mcp past authenticate are the MCP
						// transport's 400: they name no MCP session.
						mcpServed := route == "/mcp" && method != http.MethodPost && r.Status == http.StatusBadRequest
						if r.Status >= 400 && r.Status != http.StatusUpgradeRequired && !mcpServed {
							t.Errorf("%s %s with %s: %d %s, want it served", method, route, c.name, r.Status, r.Body)
						}
					case r.Status != w:
						t.Errorf("%s %s with %s: %d %s, want %d", method, route, c.name, r.Status, r.Body, w)
					}
					if r.Status == http.StatusUnauthorized && !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
						t.Errorf("%s %s with %s: 401 without WWW-Authenticate: Bearer", method, route, c.name)
					}
				}
			}
			// Logs name the principal of each request, never a secret.
			logs := a.logs.String()
			for _, secret := range []string{a.write, a.read, a.revoked, a.other, a.cookie} {
				if strings.Contains(logs, secret) {
					t.Errorf("a token or cookie is in the log")
				}
			}
			if !strings.Contains(logs, "name=alice") || !strings.Contains(logs, "name=bob") {
				t.Errorf("the request log does not name the principals:\n%.2000s", logs)
			}
		})
	}
}

// newSignIn signs a browser in with alice's write token and returns the
// sign-in's id.
func (a *authBundle) newSignIn() string {
	a.t.Helper()
	a.signIn(map[string]string{"token": a.write})
	alice, _, _ := a.store.EnsurePrincipal(context.Background(), "alice")
	list, err := a.store.SignIns(context.Background(), alice.ID)
	if err != nil || len(list) == 0 {
		a.t.Fatalf("alice's sign-ins: %v %v", list, err)
	}
	return list[0].ID
}

// inContract reports whether api.openapi.yaml describes the route's plain
// HTTP answers: the UI's pages are HTML, and the sockets' refusals of a
// request that is no upgrade are the websocket library's.
func inContract(route string) bool {
	return route != "/" && route != "/s/{id}" && route != "/settings" && route != "/static/*" && route != "/login" &&
		!strings.HasSuffix(route, "live")
}

// send is do, through the contract's transport or, for what the contract
// does not describe, a plain client.
func (a *authBundle) send(checked bool, method, path string, body any, hdr ...string) response {
	a.t.Helper()
	if checked {
		return a.do(method, path, body, hdr...)
	}
	var rd *bytes.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, a.url+path, nil)
	if rd != nil {
		req, err = http.NewRequest(method, a.url+path, rd)
		req.Header.Set("Content-Type", "application/json")
	}
	if err != nil {
		a.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: buf.Bytes()}
}

// TestPageRedirectsToLogin: a browser without a sign-in asking for a page
// is sent to /login rather than shown JSON.
func TestPageRedirectsToLogin(t *testing.T) {
	t.Parallel()
	a := setupAuth(t, storetest.Factories[0].Open(t, projection.Config{}), 0, 0)
	for _, path := range []string{"/", "/s/" + a.session} {
		req, _ := http.NewRequest("GET", a.url+path, nil)
		req.Header.Set("Accept", "text/html,application/xhtml+xml")
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
			t.Errorf("GET %s as a browser: %d to %q, want 303 to /login", path, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
}

func (a *authBundle) wsURL(path string) string {
	return "ws" + strings.TrimPrefix(a.url, "http") + path
}

func (a *authBundle) dial(path string, hdr []string) (*websocket.Conn, int, error) {
	h := http.Header{}
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Set(hdr[i], hdr[i+1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, a.wsURL(path), &websocket.DialOptions{HTTPHeader: h})
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	return c, status, err
}

// socketCap is the sockets per principal TestSocketsAuthorized allows.
const socketCap = 8

// TestSocketsAuthorized holds both sockets to the same credentials as the
// routes, and shows that the feed carries only one's own sessions.
func TestSocketsAuthorized(t *testing.T) {
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			a := setupAuth(t, f.Open(t, projection.Config{}), 0, 0, func(_ *api.AuthOptions, o *live.Options) {
				o.MaxSocketsPerPrincipal = socketCap
			})
			for _, path := range []string{"/sessions/" + a.session + "/live", "/live"} {
				for _, c := range credentials {
					w := want(strings.Replace(path, a.session, "{id}", 1), "GET", c.name)
					conn, status, err := a.dial(path, c.hdr(a))
					if w == 0 {
						if err != nil {
							t.Errorf("%s with %s: %v (%d), want a socket", path, c.name, err, status)
							continue
						}
						conn.CloseNow()
						continue
					}
					if err == nil {
						conn.CloseNow()
						t.Errorf("%s with %s: opened, want %d", path, c.name, w)
					} else if status != w {
						t.Errorf("%s with %s: %d (%v), want %d", path, c.name, status, err, w)
					}
				}
			}

			// The socket cap: the agent's token's sockets count with bob's.
			// The sockets closed above give their places back as their
			// handlers end, soon after (Connections may read zero before a
			// socket whose handshake answered is counted: the places are
			// what the cap reads).
			sockets := func() bool { return a.hub.Sockets() == 0 }
			eventually.True(t, 5*time.Second, "closed sockets uncounted", sockets)
			var held []*websocket.Conn
			for len(held) < socketCap {
				conn, status, err := a.dial("/live", []string{"Authorization", "Bearer " + a.otherAgent})
				if err != nil {
					t.Fatalf("bob's socket %d: %d %v", len(held), status, err)
				}
				held = append(held, conn)
			}
			for _, path := range []string{"/live", "/sessions/" + a.session + "/live"} {
				for _, tok := range []string{a.other, a.otherAgent} {
					if conn, status, err := a.dial(path, []string{"Authorization", "Bearer " + tok}); err == nil {
						conn.CloseNow()
						t.Errorf("%s past bob's cap: opened", path)
					} else if status != http.StatusTooManyRequests && !(status == http.StatusNotFound && path != "/live") {
						t.Errorf("%s past bob's cap: %d, want 429", path, status)
					}
				}
			}
			for _, conn := range held {
				conn.CloseNow()
			}
			eventually.True(t, 5*time.Second, "bob's sockets uncounted", sockets)

			// bob's feed never hears of alice's session; alice's does.
			bob, _, err := a.dial("/live", []string{"Authorization", "Bearer " + a.other})
			if err != nil {
				t.Fatal(err)
			}
			defer bob.CloseNow()
			alice, _, err := a.dial("/live", []string{"Authorization", "Bearer " + a.write})
			if err != nil {
				t.Fatal(err)
			}
			defer alice.CloseNow()
			a.do("POST", "/sessions/"+a.session+"/events", bodies["POST /sessions/{id}/events"], "Authorization", "Bearer "+a.write)
			bobs := a.do("POST", "/sessions", map[string]string{"title": "bob's"}, "Authorization", "Bearer "+a.other)
			var bobSession struct{ ID string }
			_ = json.Unmarshal(bobs.Body, &bobSession)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			for _, feed := range []struct {
				c    *websocket.Conn
				want string
			}{{alice, a.session}, {bob, bobSession.ID}} {
				_, msg, err := feed.c.Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var m struct{ Session struct{ ID string } }
				_ = json.Unmarshal(msg, &m)
				if m.Session.ID != feed.want {
					t.Errorf("feed's first session is %s, want %s (only one's own)", m.Session.ID, feed.want)
				}
			}
		})
	}
}

// TestRevocationClosesSockets: a revoked token fails on its next request
// and its open socket is closed; signing out does the same to a cookie's.
func TestRevocationClosesSockets(t *testing.T) {
	t.Parallel()
	st := storetest.Factories[0].Open(t, projection.Config{})
	a := setupAuth(t, st, 0, 0)
	ctx := context.Background()
	secret, tok, err := a.svc.CreateToken(ctx, "alice", auth.Read)
	if err != nil {
		t.Fatal(err)
	}
	hdr := []string{"Authorization", "Bearer " + secret}
	conn, _, err := a.dial("/sessions/"+a.session+"/live", hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if r := a.do("GET", "/sessions", nil, hdr...); r.Status != http.StatusOK {
		t.Fatalf("before revoking: %d", r.Status)
	}
	// Revoked by another process (tack token revoke): the store only.
	if _, err := st.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if r := a.do("GET", "/sessions", nil, hdr...); r.Status != http.StatusUnauthorized {
		t.Errorf("the request after revoking: %d, want 401", r.Status)
	}
	a.svc.CloseStale(ctx, a.hub)
	if code := closeCode(t, conn); code != live.CodeRevoked {
		t.Errorf("socket of the revoked token closed with %d, want %d", code, live.CodeRevoked)
	}

	// Signing out closes the cookie's socket at once.
	cookie := a.signIn(map[string]string{"token": a.read})
	chdr := []string{"Cookie", api.CookieName + "=" + cookie}
	feed, _, err := a.dial("/live", chdr)
	if err != nil {
		t.Fatal(err)
	}
	defer feed.CloseNow()
	if r := a.do("POST", "/logout", nil, chdr...); r.Status != http.StatusNoContent {
		t.Fatalf("POST /logout: %d %s", r.Status, r.Body)
	}
	if code := closeCode(t, feed); code != live.CodeRevoked {
		t.Errorf("socket of the signed-out browser closed with %d, want %d", code, live.CodeRevoked)
	}
	if r := a.do("GET", "/me", nil, chdr...); r.Status != http.StatusUnauthorized {
		t.Errorf("GET /me after signing out: %d, want 401", r.Status)
	}
}

func closeCode(t *testing.T, c *websocket.Conn) websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code
			}
			t.Fatalf("socket ended without a close frame: %v", err)
		}
	}
}

// TestSignInLink: a one-time link signs in once, then never again.
func TestSignInLink(t *testing.T) {
	t.Parallel()
	a := setupAuth(t, storetest.Factories[0].Open(t, projection.Config{}), 0, 0)
	code, _, err := a.svc.NewLink(context.Background(), "carol", auth.Write)
	if err != nil {
		t.Fatal(err)
	}
	cookie := a.signIn(map[string]string{"code": code})
	r := a.do("GET", "/me", nil, "Cookie", api.CookieName+"="+cookie)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"name":"carol"`) {
		t.Fatalf("GET /me signed in by link: %d %s", r.Status, r.Body)
	}
	if r := a.do("POST", "/login", map[string]string{"code": code}); r.Status != http.StatusUnauthorized {
		t.Errorf("the link a second time: %d, want 401", r.Status)
	}
}

// TestWriteRateLimit: writes past the burst answer 429 with Retry-After
// and the error shape; reads never do, and other principals are unaffected.
func TestWriteRateLimit(t *testing.T) {
	t.Parallel()
	a := setupAuth(t, storetest.Factories[0].Open(t, projection.Config{}), 0.5, 2)
	hdr := []string{"Authorization", "Bearer " + a.write}
	for i := range 2 {
		if r := a.do("POST", "/sessions", map[string]string{}, hdr...); r.Status != http.StatusCreated {
			t.Fatalf("write %d: %d %s", i, r.Status, r.Body)
		}
	}
	r := a.do("POST", "/sessions", map[string]string{}, hdr...)
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Body), `"code":"rate_limited"`) {
		t.Fatalf("third write: %d %v %s, want 429 with Retry-After", r.Status, r.Header, r.Body)
	}
	for range 5 {
		if r := a.do("GET", "/sessions", nil, hdr...); r.Status != http.StatusOK {
			t.Fatalf("a read after the limit: %d", r.Status)
		}
	}
	if r := a.do("POST", "/sessions", map[string]string{}, "Authorization", "Bearer "+a.other); r.Status != http.StatusCreated {
		t.Fatalf("another principal's write: %d", r.Status)
	}
}

// TestLocalMode: without -auth token every route is served as the built-in
// principal, with nothing to send.
func TestLocalMode(t *testing.T) {
	t.Parallel()
	st := storetest.Factories[0].Open(t, projection.Config{})
	b := setup(t, st, api.Options{})
	r := b.do("GET", "/me", nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"auth":"local"`) {
		t.Fatalf("GET /me in local mode: %d %s", r.Status, r.Body)
	}
	// The built-in principal was made when the store was: not in year 1.
	var who struct{ Principal store.Principal }
	b.want(b.do("GET", "/me", nil), http.StatusOK, &who)
	if age := time.Since(who.Principal.CreatedAt.Time); age < 0 || age > time.Hour {
		t.Fatalf("the local principal's createdAt %v", who.Principal.CreatedAt)
	}
	if r := b.do("POST", "/sessions", map[string]string{}); r.Status != http.StatusCreated {
		t.Fatalf("POST /sessions in local mode: %d", r.Status)
	}
	if r := b.do("POST", "/login", map[string]string{"token": "tack_x"}); r.Status != http.StatusNotFound {
		t.Fatalf("POST /login in local mode: %d, want 404", r.Status)
	}
	// A session another principal made is not the local principal's.
	bob, _, _ := st.EnsurePrincipal(context.Background(), "bob")
	sess, _, _ := st.CreateSession(context.Background(), store.NewSession{Title: "bob's", Owner: bob.ID})
	if r := b.do("GET", "/sessions/"+sess.ID, nil); r.Status != http.StatusNotFound {
		t.Fatalf("bob's session in local mode: %d, want 404", r.Status)
	}
}
