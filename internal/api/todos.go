package api

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// ETag names one state of the todos view. The view changes only with a new
// version or when a standing plan stops standing, so the pair names it.
func ETag(t projection.Todos) string {
	standing := 0
	if t.Standing {
		standing = 1
	}
	return fmt.Sprintf(`"v%d-s%d"`, t.Version, standing)
}

func etagMatches(header, etag string) bool {
	for _, candidate := range strings.Split(header, ",") {
		candidate = strings.TrimPrefix(strings.TrimSpace(candidate), "W/")
		if candidate == "*" || candidate == etag {
			return true
		}
	}
	return false
}

func (s *Server) getTodos(w http.ResponseWriter, r *http.Request) {
	format := r.URL.Query().Get("format")
	if format != "" && format != "acp" {
		s.writeError(w, r, errorf(http.StatusBadRequest, "invalid", "`format` must be acp or absent"))
		return
	}
	todos, err := s.store.Todos(r.Context(), idOf(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	acp := format == "acp"
	cached, hit := s.answers.cached(todos, acp)
	etag := cached.etag
	if !hit {
		etag = todosETag(todos, acp)
	}
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "no-cache")
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatches(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := cached.body
	if !hit {
		if body, err = s.answers.encode(todos, etag, acp); err != nil {
			s.writeError(w, r, fmt.Errorf("encode todos of %s: %w", todos.SessionID, err))
			return
		}
	}
	writeBody(w, http.StatusOK, body)
}

// toolResult is the answer of a tool endpoint, handed to the model as is.
type toolResult struct {
	IsError bool        `json:"isError"`
	Content string      `json:"content"`
	Result  *toolOutput `json:"result,omitempty"`
	Version *int64      `json:"version,omitempty"`
}

type toolOutput struct {
	Todos  []projection.Item `json:"todos"`
	Counts projection.Counts `json:"counts"`
}

// toolOK answers a call the tool took: the toolResult encoding/json would
// write (TestToolOKEncoding), written by hand on this, the todo_write path.
func toolOK(w http.ResponseWriter, text string, t projection.Todos) {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	defer putJSONBuffer(buf)
	buf.Write(appendToolOK(buf.AvailableBuffer(), text, t))
	writeBody(w, http.StatusOK, buf.Bytes())
}

func appendToolOK(b []byte, text string, t projection.Todos) []byte {
	b = append(b, `{"isError":false,"content":`...)
	b = projection.AppendString(b, text, false)
	b = append(b, `,"result":{"todos":`...)
	b = projection.AppendItems(b, t.Todos, false)
	b = append(b, `,"counts":`...)
	b = projection.AppendCounts(b, t.Counts)
	b = append(b, `},"version":`...)
	b = strconv.AppendInt(b, t.Version, 10)
	return append(b, "}\n"...)
}

// toolRejected answers a rejected call with the model-facing text, in the
// terms of the dialect d of another agent's tool when d is not nil; it
// reports false when err is not the model's to see.
func toolRejected(w http.ResponseWriter, err error, d *projection.Dialect) bool {
	var pe *projection.Error
	if !errors.As(err, &pe) {
		return false
	}
	if d != nil {
		pe = d.Reword(pe).(*projection.Error)
	}
	writeJSON(w, projectionError(pe.Code, "").Status, toolResult{IsError: true, Content: "Error: " + pe.Message})
	return true
}

func (s *Server) todoWrite(w http.ResponseWriter, r *http.Request) {
	s.writeList(w, r, nil)
}

// dialectWrite serves another agent's todo tool (projection.Dialects): its
// arguments are translated into todo_write's, and the call is todo_write.
func (s *Server) dialectWrite(tool string) http.HandlerFunc {
	d := projection.Dialects[tool]
	return func(w http.ResponseWriter, r *http.Request) { s.writeList(w, r, &d) }
}

// writeList is todo_write, with the arguments in todo_write's shape (d nil)
// or in the dialect d's.
func (s *Server) writeList(w http.ResponseWriter, r *http.Request, d *projection.Dialect) {
	body := bodyOf(r)
	parse := projection.ParseTodoWriteArgs
	if d != nil {
		parse = d.Parse
	}
	ev, base, err := parse(body)
	if err != nil {
		toolRejected(w, err, nil) // a dialect's Parse answers in its own terms
		return
	}
	req := store.AppendRequest{
		Events:      []projection.NewEvent{ev},
		BaseVersion: base,
	}
	if err := idempotency(r, body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.commit(r, w, idOf(r), req)
	if err != nil {
		if !toolRejected(w, err, d) {
			s.writeError(w, r, err)
		}
		return
	}
	toolOK(w, projection.WriteText(res.Todos.Counts), *res.Todos)
}

func (s *Server) todoRead(w http.ResponseWriter, r *http.Request) {
	body := bodyOf(r)
	if err := projection.ParseTodoReadArgs(body); err != nil {
		toolRejected(w, err, nil)
		return
	}
	// The model is shown the list: a person's edit before it is now seen.
	todos, err := s.store.TodoRead(r.Context(), idOf(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	toolOK(w, projection.ReadText(todos.Todos), todos)
}

// authorOf names the principal a request acts for: the author of an edit
// of the list ("local" under -auth local).
func authorOf(r *http.Request) string {
	return identity(r).Principal.Name
}

// editTodos is a person's edit of the list: PUT /sessions/{id}/todos
// {"todos": [...], "baseVersion": N} appends a todo/edit and answers the
// todos view it left (with its ETag), or the error shape with the same
// texts as todo_write's checks.
func (s *Server) editTodos(w http.ResponseWriter, r *http.Request) {
	body := bodyOf(r)
	ev, base, err := projection.ParseTodoEditArgs(body, authorOf(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req := store.AppendRequest{Events: []projection.NewEvent{ev}, BaseVersion: &base}
	if err := idempotency(r, body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.commit(r, w, idOf(r), req)
	var evErr *store.EventError
	if errors.As(err, &evErr) {
		err = evErr.Err // one event: its message alone, without "events[0]: "
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("ETag", ETag(*res.Todos))
	writeJSON(w, http.StatusOK, res.Todos)
}

// todoReminder answers whether the model is due a reminder of its list,
// why, and the text to inject. ?reason=compaction (or resume) asks for it
// outright.
func (s *Server) todoReminder(w http.ResponseWriter, r *http.Request) {
	requested := false
	switch reason := r.URL.Query().Get("reason"); reason {
	case "":
	case "compaction", "resume":
		requested = true
	default:
		s.writeError(w, r, errorf(http.StatusBadRequest, "invalid", "`reason` must be compaction or resume"))
		return
	}
	st, err := s.store.TodoList(r.Context(), idOf(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, st.Reminder(s.opts.ReminderAfter, requested))
}

// todoHistory pages the versions of the list, newest first.
func (s *Server) todoHistory(w http.ResponseWriter, r *http.Request) {
	before, err := intParam(r, "before", 0, 1, math.MaxInt64)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	limit, err := intParam(r, "limit", DefaultVersionsLimit, 1, MaxVersionsLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	versions, more, err := s.store.TodoHistory(r.Context(), idOf(r), before, int(limit))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if versions == nil {
		versions = []projection.Version{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"versions": versions, "hasMore": more})
}
