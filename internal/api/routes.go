package api

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/transcript"
)

// Handler returns the router with every route a request can take. Every
// request, routed or not, first passes observe (observe.go: request id,
// log line, latency), then guard (guard.go: Host, CSRF and
// content type); every route but health, readiness, signing in and out and
// the UI's assets then passes authenticate (auth.go).
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	s.routes = r
	r.Use(middleware.Recoverer)
	r.Use(s.connDeadlines)
	r.Use(s.guard)
	r.Use(headAsGet)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errorf(http.StatusNotFound, "not_found", "no route for %s %s", r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(s.methodNotAllowed)

	// The API's routes read their body within Options.BodyTimeout, then do
	// their store work within Options.RequestTimeout, in that order: a slow
	// upload is the client's 408, never the database's 503. (A session
	// route's owner, which sessionID reads before them, is bounded on its
	// own.)
	bounded := []func(http.Handler) http.Handler{s.readBody, s.deadline}

	// Open to anyone: health, readiness, signing in and out, and the
	// sign-in page with the UI's assets.
	r.Get("/healthz", s.healthz)
	r.Group(func(r chi.Router) {
		r.Use(bounded...)
		r.Get("/readyz", s.readyz)
		r.Post("/login", s.login)
		r.Post("/logout", s.logout)
	})
	ui := s.opts.UI
	if ui != nil {
		r.Get("/login", ui.ServeHTTP)
		r.Get("/static/*", ui.ServeHTTP)
	}

	// Everything else acts as the request's principal: it needs a
	// credential in -auth token, and every write passes the per-principal
	// limiter.
	r.Group(func(r chi.Router) {
		r.Use(s.authenticate, s.limitWrites)
		// The Prometheus metrics, when they share the API's address.
		if s.opts.Metrics != nil {
			r.Get("/metrics", s.opts.Metrics.ServeHTTP)
		}
		r.Group(func(r chi.Router) {
			r.Use(bounded...)
			r.Get("/me", s.me)
			r.Get("/me/sign-ins", s.listSignIns)
			r.Delete("/me/sign-ins/{id}", s.endSignIn)
			r.Get("/principals", s.listPrincipals)
			r.Get("/tokens", s.listTokens)
			r.Post("/tokens", s.createToken)
			r.Delete("/tokens/{id}", s.revokeToken)
			r.Post("/sessions", s.createSession)
			r.Get("/sessions", s.listSessions)
			// The agents' hooks, one route per agent: each finds its
			// session by the agent's own id (hooks.go).
			for _, a := range transcript.Agents() {
				r.Post("/hooks/"+string(a.Name), s.hook(a.Name))
			}
		})

		// A session's routes, its socket among them: its {id} must name a
		// session of the principal's (sessionID) before anything reads it.
		r.Group(func(r chi.Router) {
			r.Use(s.sessionID)
			r.Group(func(r chi.Router) {
				r.Use(bounded...)
				r.Get("/sessions/{id}", s.getSession)
				r.Patch("/sessions/{id}", s.renameSession)
				r.Put("/sessions/{id}/agent-status", s.setAgentStatus)
				r.Post("/sessions/{id}/events", s.appendEvents)
				r.Get("/sessions/{id}/events", s.readEvents)
				r.Get("/sessions/{id}/history", s.readHistory)
				r.Get("/sessions/{id}/messages", s.readMessages)
				r.Get("/sessions/{id}/todos", s.getTodos)
				r.Put("/sessions/{id}/todos", s.editTodos)
				r.Get("/sessions/{id}/todos/reminder", s.todoReminder)
				r.Get("/sessions/{id}/todos/history", s.todoHistory)
				r.Post("/sessions/{id}/tools/todo_write", s.todoWrite)
				// Each agent's own list tool (Claude Code's TodoWrite,
				// codex's update_plan), as its file declares it.
				for _, d := range projection.Dialects() {
					r.Post("/sessions/{id}/tools/"+d.Tool, s.dialectWrite(d))
				}
				r.Post("/sessions/{id}/tools/TaskCreate", s.taskTool("TaskCreate"))
				r.Post("/sessions/{id}/tools/TaskUpdate", s.taskTool("TaskUpdate"))
				r.Post("/sessions/{id}/tools/TaskGet", s.taskTool("TaskGet"))
				r.Post("/sessions/{id}/tools/TaskList", s.taskTool("TaskList"))
				r.Post("/sessions/{id}/tools/todo_read", s.todoRead)
			})
			// The session's live socket (live.go) outlives a request and
			// keeps its own deadlines: it is not bounded.
			if s.opts.Live != nil {
				r.Get("/sessions/{id}/live", s.sessionLive)
			}
		})
		// The MCP server (mcp.go): the tools and the todos resources over
		// streamable HTTP. POST carries JSON-RPC, GET the stream of the
		// server's notifications, DELETE ends an MCP session. The SDK reads
		// and bounds the body itself, and a tool call or a read is bounded
		// like the routes above; its write calls, not each POST, pass the
		// scope check and the write limit (writesPerCall).
		r.Post(mcpPath, s.mcp.ServeHTTP)
		r.Get(mcpPath, s.mcp.ServeHTTP)
		r.Delete(mcpPath, s.mcp.ServeHTTP)

		// The feed of the principal's sessions, the other live socket.
		if s.opts.Live != nil {
			r.Get("/live", s.feedLive)
		}

		// The browser UI (package web): the session list and a session.
		if ui != nil {
			r.Get("/", ui.ServeHTTP)
			r.Get("/s/{id}", ui.ServeHTTP)
			r.Get("/settings", ui.ServeHTTP)
		}
	})
	h := &router{Mux: r, serve: s.observe(r)}
	s.self = h
	return h
}

// headAsGet routes HEAD as GET: no route has a HEAD of its own, and
// net/http drops the body a GET handler writes to a HEAD. (Routes are flat,
// in groups rather than mounted subrouters: chi's Match, which the 405's
// Allow and the guard rely on, answers true for any method on the exact
// path of a mounted subrouter.)
func headAsGet(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			chi.RouteContext(r.Context()).RouteMethod = http.MethodGet
		}
		next.ServeHTTP(w, r)
	})
}

// deadline bounds each request's store work by Options.RequestTimeout. A
// database that has dropped off the network can leave a pooled connection
// open and silent, and a query on it would wait as long as the client does;
// with the deadline it answers 503 unavailable instead. The live sockets
// live longer and keep their own deadlines. The request's own context keeps
// the deadline (reqctx.go): its timer is made only if something waits.
func (s *Server) deadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c := requestContextOf(r); c != nil {
			c.bound(time.Now().Add(s.opts.RequestTimeout))
			defer c.end()
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.opts.RequestTimeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
