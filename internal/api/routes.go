package api

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// Router is the router extra routes are mounted on.
type Router = chi.Router

// Handler returns the router with every route of the API.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errorf(http.StatusNotFound, "not_found", "no route for %s %s", r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errorf(http.StatusMethodNotAllowed, "method_not_allowed", "%s is not allowed on %s", r.Method, r.URL.Path))
	})

	r.Get("/healthz", s.healthz)
	r.Group(func(r chi.Router) {
		r.Use(s.deadline)
		r.Get("/readyz", s.readyz)

		r.Post("/sessions", s.createSession)
		r.Get("/sessions", s.listSessions)
		r.Route("/sessions/{id}", func(r chi.Router) {
			r.Use(s.sessionID)
			r.Get("/", s.getSession)
			r.Post("/events", s.appendEvents)
			r.Get("/events", s.readEvents)
			r.Get("/history", s.readHistory)
			r.Get("/messages", s.readMessages)
			r.Get("/todos", s.getTodos)
			r.Put("/todos", s.editTodos)
			r.Get("/todos/reminder", s.todoReminder)
			r.Get("/todos/history", s.todoHistory)
			r.Post("/tools/todo_write", s.todoWrite)
			r.Post("/tools/todo_read", s.todoRead)
		})
	})

	if s.opts.Extra != nil {
		s.opts.Extra(r)
	}
	return r
}

// deadline bounds each request's store work by Options.RequestTimeout. A
// database that has dropped off the network can leave a pooled connection
// open and silent, and a query on it would wait as long as the client does;
// with the deadline it answers 503 unavailable instead. The live sockets,
// mounted by Extra, live longer and keep their own deadlines.
func (s *Server) deadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.opts.RequestTimeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
