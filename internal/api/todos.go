package api

import (
	"bytes"
	"context"
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
	format := ""
	if r.URL.RawQuery != "" { // most reads have none: no parse, no map
		format = r.URL.Query().Get("format")
	}
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
	answer, hit := s.answers.cached(todos, acp)
	var etag string
	if hit {
		etag = answer.etag[0]
	} else {
		etag = todosETag(todos, acp)
	}
	h := w.Header()
	if hit {
		h["Etag"] = answer.etag
	} else {
		h["Etag"] = []string{etag}
	}
	h["Cache-Control"] = noCache
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatches(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if !hit {
		if answer, err = s.answers.encode(todos, etag, acp); err != nil {
			s.writeError(w, r, fmt.Errorf("encode todos of %s: %w", todos.SessionID, err))
			return
		}
	}
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = answer.length
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(answer.body)
}

// noCache is GET /todos's Cache-Control: a client may keep the answer but
// asks again each time, with If-None-Match. Shared: net/http only reads it.
var noCache = []string{"no-cache"}

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

// toolRejected answers a rejected call with the model-facing text; it
// reports false when err is not the model's to see.
func toolRejected(w http.ResponseWriter, err error) bool {
	pe, ok := rejection(err)
	if ok {
		writeJSON(w, projectionError(pe.Code, "").Status, toolResult{IsError: true, Content: rejectionText(pe)})
	}
	return ok
}

// rejection is the model's to see of err, a tool's rejection of the call.
func rejection(err error) (*projection.Error, bool) {
	var pe *projection.Error
	ok := errors.As(err, &pe)
	return pe, ok
}

// rejectionText is the model-facing text of a rejected call.
func rejectionText(pe *projection.Error) string { return "Error: " + pe.Message }

func (s *Server) todoWrite(w http.ResponseWriter, r *http.Request) {
	s.writeList(w, r, nil)
}

// dialectWrite serves another agent's todo tool (a registered
// projection.Dialect): its arguments are translated into todo_write's,
// and the call is todo_write.
func (s *Server) dialectWrite(d projection.Dialect) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.writeList(w, r, &d) }
}

// writeList is todo_write over REST, with the arguments in todo_write's
// shape (d nil) or in the dialect d's.
func (s *Server) writeList(w http.ResponseWriter, r *http.Request, d *projection.Dialect) {
	body := bodyOf(r)
	res, err := s.callTodoWrite(r.Context(), idOf(r), body, d, func(req *store.AppendRequest) error {
		return idempotency(r, body, req)
	})
	if err == nil && res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if err != nil {
		if !toolRejected(w, err) {
			s.writeError(w, r, err)
		}
		return
	}
	toolOK(w, projection.WriteText(res.Todos.Counts), *res.Todos)
}

// callTodoWrite is todo_write on session id as the principal on ctx,
// whichever transport carried it (REST here, MCP in mcp.go): args in
// todo_write's shape (d nil) or in the dialect d's, the request completed
// by prepare when set (REST's Idempotency-Key). An error that rejection
// takes is the model's to see, in the terms of the tool it called.
func (s *Server) callTodoWrite(ctx context.Context, id string, args []byte, d *projection.Dialect, prepare func(*store.AppendRequest) error) (store.AppendResult, error) {
	parse := projection.ParseTodoWriteArgs
	if d != nil {
		parse = d.Parse
	}
	ev, base, err := parse(args)
	if err != nil {
		return store.AppendResult{}, err // a dialect's Parse answers in its own terms
	}
	req := store.AppendRequest{
		Events:      []projection.NewEvent{ev},
		BaseVersion: base,
	}
	if prepare != nil {
		if err := prepare(&req); err != nil {
			return store.AppendResult{}, err
		}
	}
	res, err := s.append(ctx, id, req)
	if pe, ok := rejection(err); ok && d != nil {
		err = d.Reword(pe)
	}
	return res, err
}

func (s *Server) todoRead(w http.ResponseWriter, r *http.Request) {
	todos, err := s.callTodoRead(r.Context(), idOf(r), bodyOf(r), identity(r).CanWrite())
	if err != nil {
		if !toolRejected(w, err) {
			s.writeError(w, r, err)
		}
		return
	}
	toolOK(w, projection.ReadText(todos.Todos), todos)
}

// callTodoRead is todo_read on session id, whichever transport carried it.
// Only a caller that may write (the agent's own token) marks the list seen
// by the model: a read token's call reads it and changes nothing.
func (s *Server) callTodoRead(ctx context.Context, id string, args []byte, markSeen bool) (projection.Todos, error) {
	if err := projection.ParseTodoReadArgs(args); err != nil {
		return projection.Todos{}, err
	}
	if !markSeen {
		return s.store.Todos(ctx, id)
	}
	// The model is shown the list: a person's edit before it is now seen.
	return s.store.TodoRead(ctx, id)
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
