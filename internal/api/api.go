// Package api serves Tack's HTTP/JSON API over a store.Store. Every route is
// listed in routes.go; every body matches api.openapi.yaml.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// Documented limits of the HTTP API (see docs/api.md).
const (
	MaxBodyBytes       = 4 << 20
	MaxBatchEvents     = 1000
	MaxTitleChars      = 200
	DefaultPageLimit   = 100
	MaxPageLimit       = 1000
	MaxIdempotencyKey  = 255
	MaxSessionIDLength = 64
	// DefaultVersionsLimit and MaxVersionsLimit bound a page of the list's
	// history (GET /sessions/{id}/todos/history), which is also bounded by
	// bytes (store.MaxVersionPageBytes).
	DefaultVersionsLimit = 20
	MaxVersionsLimit     = 100
)

// Options configure a Server.
type Options struct {
	Logger *slog.Logger
	// OnAppend, when set, is called after every committed append, before the
	// response is written. The live hub hangs here.
	OnAppend func(sessionID string, res store.AppendResult)
	// Extra mounts further routes (the live sockets, the UI) on the router.
	Extra func(r Router)
	// RequestTimeout bounds the store work of each API request (default
	// DefaultRequestTimeout): past it the request answers 503 unavailable.
	RequestTimeout time.Duration
	// ReminderAfter is how many assistant steps since the latest list write
	// make a list with open items due a reminder (default
	// DefaultReminderAfter); a negative value turns that reason off.
	ReminderAfter int
}

// DefaultReminderAfter is -reminder-after's default.
const DefaultReminderAfter = 3

// DefaultRequestTimeout is the default Options.RequestTimeout: far above
// what any request costs a healthy database, well below what a client
// waits before it gives up on a service.
const DefaultRequestTimeout = 4 * time.Second

// Server is the HTTP API.
type Server struct {
	store store.Store
	log   *slog.Logger
	opts  Options
}

// New returns the API over st.
func New(st store.Store, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.ReminderAfter == 0 {
		opts.ReminderAfter = DefaultReminderAfter
	}
	return &Server{store: st, log: opts.Logger, opts: opts}
}

// Error is a failure the API answers with a JSON error body.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

func errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// writeJSON writes v as the response. HTML escaping is off: bodies carry
// model-facing text such as "[>] a task", which must read as written.
func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	defer putJSONBuffer(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":{"code":"internal","message":"encode response"}}` + "\n")
	}
	h := w.Header()
	h["Content-Type"] = jsonContentType
	// A length lets net/http send the body as is rather than chunked.
	h["Content-Length"] = []string{strconv.Itoa(buf.Len())}
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// jsonContentType is shared by every response; net/http only reads it.
var jsonContentType = []string{"application/json"}

// jsonBuffers keeps response buffers between requests: every request
// encodes a body, and on the todo_write path a fresh buffer per response
// was a measurable share of the allocations the collector then had to
// chase (docs/performance.md).
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func putJSONBuffer(b *bytes.Buffer) {
	if b.Cap() > 64<<10 { // large pages are rare; let them go
		return
	}
	b.Reset()
	jsonBuffers.Put(b)
}

// httpError maps a domain error to its status, code and message: the one
// table from errors to HTTP.
func httpError(err error) *Error {
	var (
		apiErr   *Error
		conflict *store.ConflictError
		evErr    *store.EventError
		projErr  *projection.Error
	)
	switch {
	case errors.As(err, &apiErr):
		return apiErr
	case errors.Is(err, store.ErrNotFound):
		return errorf(http.StatusNotFound, "not_found", "session not found")
	case errors.Is(err, store.ErrUnavailable):
		return errorf(http.StatusServiceUnavailable, "unavailable", "the database is unavailable; try again shortly")
	case errors.Is(err, store.ErrIdempotencyMismatch):
		return errorf(http.StatusUnprocessableEntity, "idempotency_mismatch", "%s", err.Error())
	case errors.Is(err, store.ErrBadCursor):
		return errorf(http.StatusBadRequest, "invalid", "`cursor` is not a cursor this server issued")
	case errors.As(err, &conflict):
		return errorf(http.StatusConflict, "conflict", "%s", err.Error())
	case errors.As(err, &evErr):
		if evErr.Err.Code == projection.CodeConflict {
			return errorf(http.StatusConflict, "conflict", "%s", err.Error())
		}
		return errorf(http.StatusUnprocessableEntity, "invalid", "%s", err.Error())
	case errors.As(err, &projErr):
		if projErr.Code == projection.CodeConflict {
			return errorf(http.StatusConflict, "conflict", "%s", projErr.Message)
		}
		return errorf(http.StatusUnprocessableEntity, "invalid", "%s", projErr.Message)
	case errors.Is(err, context.Canceled):
		return errorf(http.StatusServiceUnavailable, "unavailable", "request canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return errorf(http.StatusServiceUnavailable, "unavailable", "the database did not answer in time; try again shortly")
	}
	return nil
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := httpError(err)
	if e == nil {
		s.log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		e = errorf(http.StatusInternalServerError, "internal", "internal error")
	}
	if e.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.Status, map[string]any{"error": map[string]string{"code": e.Code, "message": e.Message}})
}

// readBody reads a request body up to MaxBodyBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, errorf(http.StatusRequestEntityTooLarge, "too_large", "request body is larger than the limit of %d bytes", MaxBodyBytes)
	}
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "invalid", "read request body: %v", err)
	}
	return b, nil
}

// decodeStrict decodes one JSON object into v, rejecting unknown fields,
// wrong types and trailing data. An empty body decodes as {} when allowEmpty.
func decodeStrict(body []byte, v any, allowEmpty bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		if allowEmpty {
			return nil
		}
		return errorf(http.StatusBadRequest, "invalid", "request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field != "":
			return errorf(http.StatusBadRequest, "invalid", "`%s` must be %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()))
		case errors.As(err, &typeErr):
			return errorf(http.StatusBadRequest, "invalid", "request body must be a JSON object")
		case errors.As(err, &syntaxErr):
			return errorf(http.StatusBadRequest, "invalid", "malformed JSON at byte %d: %v", syntaxErr.Offset, err)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return errorf(http.StatusBadRequest, "invalid", "malformed JSON: unexpected end of input")
		default:
			return errorf(http.StatusBadRequest, "invalid", "%s", trimJSONPrefix(err.Error()))
		}
	}
	if dec.More() {
		return errorf(http.StatusBadRequest, "invalid", "request body must hold exactly one JSON object")
	}
	return nil
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "int", "int32", "int64", "uint", "uint64":
		return "an integer"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "a boolean"
	}
	return "of another type"
}

func trimJSONPrefix(s string) string {
	if after, ok := bytes.CutPrefix([]byte(s), []byte("json: ")); ok {
		return string(after)
	}
	return s
}

// intParam reads an optional integer query parameter within [lo, hi].
func intParam(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return def, nil
	}
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, errorf(http.StatusBadRequest, "invalid", "`%s` must be an integer from %d to %d", name, lo, hi)
	}
	return v, nil
}

func limitParam(r *http.Request) (int, error) {
	v, err := intParam(r, "limit", DefaultPageLimit, 1, MaxPageLimit)
	return int(v), err
}
