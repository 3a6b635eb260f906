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
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/hook"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/sizedcache"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/strictjson"
)

// Documented limits of the HTTP API (see docs/api.md).
const (
	MaxBodyBytes        = 4 << 20
	MaxBatchEvents      = 1000
	MaxTitleChars       = 200
	DefaultPageLimit    = 100
	MaxPageLimit        = 1000
	MaxIdempotencyKey   = 255
	MaxSessionIDLength  = 64
	MaxExternalKeyBytes = 256
	// MaxAgentBytes bounds a session's agent name, MaxCwdBytes its
	// working directory (a path as long as Linux's PATH_MAX).
	MaxAgentBytes = 64
	MaxCwdBytes   = 4096
	// DefaultVersionsLimit and MaxVersionsLimit bound a page of the list's
	// history (GET /sessions/{id}/todos/history), which is also bounded by
	// bytes (store.MaxVersionPageBytes).
	DefaultVersionsLimit = 20
	MaxVersionsLimit     = 100
)

// Options configure a Server.
type Options struct {
	Logger *slog.Logger
	// OnAppend, when set, is called after every committed append and every
	// idempotent replay of one, before the response is written; it must
	// take a result it has seen before in its stride. The live hub hangs
	// here.
	OnAppend func(sessionID string, res store.AppendResult)
	// UI, when set, serves the browser UI on GET /, /s/{id} and /static/*.
	UI http.Handler
	// Live, when set, serves the live sockets on GET /sessions/{id}/live
	// and GET /live (a *live.Hub; see live.go).
	Live Live
	// NoTranscriptReads keeps the server from reading agents' transcripts
	// for their hooks: every hook then syncs its transcript itself. By
	// default a hook from the server's own machine and user asks the
	// server to read it (hookread.go).
	NoTranscriptReads bool
	// RequestTimeout bounds the store work of each API request (default
	// DefaultRequestTimeout): past it the request answers 503 unavailable.
	RequestTimeout time.Duration
	// Hosts are the Host header values the server answers to (see guard.go):
	// a name alone matches it on any port, "name:port" only that port.
	// Empty means the loopback names 127.0.0.1, localhost and [::1].
	Hosts []string
	// TrustedOrigins are origins ("https://tack.example.com") besides the
	// request's own host that may send unsafe requests: the public URL a
	// proxy serves Tack under.
	TrustedOrigins []string
	// BodyTimeout bounds reading a request's body (default
	// DefaultBodyTimeout): past it the request answers 408.
	BodyTimeout time.Duration
	// WriteTimeout bounds writing each response (default
	// DefaultWriteTimeout), so a client that never reads cannot pin one.
	// Hijacked websockets lose it and keep their own deadlines.
	WriteTimeout time.Duration
	// Auth is who may use the API; the zero value is -auth local.
	Auth AuthOptions
	// Registerer, when set, takes the API's collectors: request latency by
	// route and status, appends, list writes and store errors.
	Registerer prometheus.Registerer
	// Metrics, when set, is served on GET /metrics like any other route
	// (a credential under -auth token). Nil when the metrics have a listen
	// address of their own (-metrics-addr) or none.
	Metrics http.Handler
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

// Defaults of Options.BodyTimeout and Options.WriteTimeout: a body of
// MaxBodyBytes arrives in 30 s at 140 KB/s, and a page of a few MiB is
// written in that time to any client that reads at all.
const (
	DefaultBodyTimeout  = 30 * time.Second
	DefaultWriteTimeout = 30 * time.Second
)

// Server is the HTTP API.
type Server struct {
	store       store.Store
	log         *slog.Logger
	opts        Options
	hosts       hostSet
	crossOrigin *http.CrossOriginProtection
	routes      chi.Routes
	limits      limiters
	// logins is the per-address limit of POST /login; guesses that of
	// failures per address and credential, addrGuesses per address
	// (limits.go).
	logins, guesses, addrGuesses *addrLimits
	metrics                      *metrics
	// owners maps session ids to their owners (see sessionID).
	owners *sizedcache.Cache[string, string]
	// hookSessions maps a principal's external keys to the sessions hooks
	// found by them, so a hook reads its session rather than finding it
	// in a write (hooks.go). What else a hook needs of the earlier ones is
	// in the store (store.Notes): any instance answers any request.
	hookSessions *sizedcache.Cache[string, string]
	// answers keeps the encoded GET /todos answers (todoscache.go).
	answers *todosCache
	// mcp is the MCP server on /mcp (mcp.go).
	mcp *mcpServer
	// transcripts are the agents' transcripts this server reads itself
	// for hooks of its own machine, and self its handler, through which
	// it sends them as the hook's caller (hookread.go).
	transcripts hook.Transcripts
	self        http.Handler
	// readKey is the key a hook shows to have its transcript read, in
	// the file readKeyFile ("" when the server reads none).
	readKey, readKeyFile string
}

// OwnerCacheSize bounds the sessions whose owners a Server remembers; the
// least recently used is forgotten first, and read again from the store
// when next asked for. ownerCacheBytes is set far past what ids of any
// length take (ownerSize each), so that the count is the bound that holds.
const (
	OwnerCacheSize  = 1 << 16
	ownerCacheBytes = OwnerCacheSize << 10
)

// ownerSize is what the owner cache counts of an entry.
func ownerSize(id, owner string) int { return 64 + len(id) + len(owner) }

// New returns the API over st. It panics on an Options.TrustedOrigins entry
// that is not an origin ("scheme://host[:port]"): configuration is checked
// before it gets here.
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
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = DefaultBodyTimeout
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	s := &Server{store: st, log: opts.Logger, opts: opts}
	s.logins = &addrLimits{rate: opts.Auth.LoginRate, burst: opts.Auth.LoginBurst}
	s.guesses = &addrLimits{rate: opts.Auth.GuessRate, burst: opts.Auth.GuessBurst}
	s.addrGuesses = &addrLimits{rate: opts.Auth.GuessRate * GuessSpread, burst: opts.Auth.GuessBurst * GuessSpread}
	s.owners = sizedcache.New[string, string](OwnerCacheSize, ownerCacheBytes)
	s.hookSessions = sizedcache.New[string, string](OwnerCacheSize, ownerCacheBytes)
	s.answers = newTodosCache()
	s.mcp = newMCP(s)
	if !opts.NoTranscriptReads {
		path, key, err := hook.ReadKey()
		if err != nil {
			opts.Logger.Warn("hooks will send their transcripts: no key to read them here", "err", err)
		}
		s.readKey, s.readKeyFile = key, path
	}
	if remote, ok := opts.Live.(remoteChanges); ok {
		remote.OnRemote(s.mcp.remoteChanged)
	}
	hosts := opts.Hosts
	if len(hosts) == 0 {
		hosts = loopbackHosts
	}
	s.hosts = newHostSet(hosts)
	if opts.Registerer != nil {
		s.metrics = newMetrics(opts.Registerer)
	}
	var err error
	if s.crossOrigin, err = newCrossOrigin(opts.TrustedOrigins); err != nil {
		panic("api: " + err.Error())
	}
	return s
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
	if err := encodeJSON(buf, v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":{"code":"internal","message":"encode response"}}` + "\n")
	}
	writeBody(w, status, buf.Bytes())
}

// encodeJSON appends v to buf as a response body is encoded.
func encodeJSON(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeBody writes an encoded JSON body as the response.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	// A length lets net/http send the body as is rather than chunked.
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = w.Write(body)
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
		answered statusError
		conflict *store.ConflictError
		evErr    *store.EventError
		projErr  *projection.Error
	)
	switch {
	case errors.As(err, &apiErr):
		return apiErr
	case errors.As(err, &answered):
		status, code := answered.HTTPStatus()
		return &Error{Status: status, Code: code, Message: answered.Error()}
	case errors.Is(err, auth.ErrUnauthenticated):
		return errorf(http.StatusUnauthorized, "unauthenticated", "this route needs a token or a signed-in browser")
	case errors.Is(err, store.ErrNotFound):
		return errorf(http.StatusNotFound, "not_found", "session not found")
	case errors.Is(err, store.ErrUnavailable):
		return errorf(http.StatusServiceUnavailable, "unavailable", "the database is unavailable; try again shortly")
	case errors.Is(err, store.ErrIdempotencyMismatch):
		return errorf(http.StatusUnprocessableEntity, "idempotency_mismatch", "%s", err.Error())
	case errors.Is(err, store.ErrNoParent):
		return errorf(http.StatusUnprocessableEntity, "invalid", "`parentId` names no session of yours")
	case errors.Is(err, store.ErrBadCursor):
		return errorf(http.StatusBadRequest, "invalid", "`cursor` is not a cursor this server issued")
	case errors.As(err, &conflict):
		return errorf(http.StatusConflict, "conflict", "%s", err.Error())
	case errors.As(err, &evErr):
		return projectionError(evErr.Err.Code, err.Error())
	case errors.As(err, &projErr):
		return projectionError(projErr.Code, projErr.Message)
	case errors.Is(err, context.Canceled):
		return errorf(http.StatusServiceUnavailable, "unavailable", "request canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return errorf(http.StatusServiceUnavailable, "unavailable", "the database did not answer in time; try again shortly")
	}
	return nil
}

// projectionError is a rejected event's answer: 409 conflict for an event
// that breaks the log's current state, else 422 invalid. The tool routes
// answer with the same status (toolRejected).
func projectionError(code projection.Code, msg string) *Error {
	if code == projection.CodeConflict {
		return &Error{Status: http.StatusConflict, Code: "conflict", Message: msg}
	}
	return &Error{Status: http.StatusUnprocessableEntity, Code: "invalid", Message: msg}
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := httpError(err)
	if e == nil {
		s.log.ErrorContext(r.Context(), "internal error", "requestId", RequestID(r), "method", r.Method, "path", r.URL.Path, "principal", identity(r).Principal.ID, "err", err)
		e = errorf(http.StatusInternalServerError, "internal", "internal error")
	}
	if ri := infoOf(r); ri != nil && (e.Status == http.StatusInternalServerError || e.Status == http.StatusServiceUnavailable && e.Code == "unavailable") {
		ri.storeError = e.Code
	}
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="tack"`)
	}
	if e.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.Status, map[string]any{"error": map[string]string{"code": e.Code, "message": e.Message, "requestId": RequestID(r)}})
}

// readBody reads the body of every API request that has one (the live
// sockets, /metrics and the UI take none), up to MaxBodyBytes and within
// Options.BodyTimeout (the connection's read deadline, set by
// connDeadlines), before the store deadline starts: a slow upload is the
// client's 408, never the database's 503.
func (s *Server) readBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		// A body announced larger than the limit is refused before it is
		// read: net/http answers Expect: 100-continue on the first read, and
		// a client told to continue would send it all for nothing.
		if r.ContentLength > MaxBodyBytes {
			w.Header().Set("Connection", "close")
			s.writeError(w, r, errorf(http.StatusRequestEntityTooLarge, "too_large", "request body is larger than the limit of %d bytes", MaxBodyBytes))
			return
		}
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			err = errorf(http.StatusRequestEntityTooLarge, "too_large", "request body is larger than the limit of %d bytes", MaxBodyBytes)
		case errors.Is(err, os.ErrDeadlineExceeded):
			err = errorf(http.StatusRequestTimeout, "request_timeout", "the request body did not arrive within %s", s.opts.BodyTimeout)
		case err != nil:
			err = errorf(http.StatusBadRequest, "invalid", "read request body: %v", err)
		}
		if err != nil {
			w.Header().Set("Connection", "close")
			s.writeError(w, r, err)
			return
		}
		// Kept on the request's info rather than a context of its own: no
		// copy of the request per write.
		infoOf(r).body = b
		next.ServeHTTP(w, r)
	})
}

// bodyOf is the body readBody read; nil when the request had none.
func bodyOf(r *http.Request) []byte {
	if ri := infoOf(r); ri != nil {
		return ri.body
	}
	return nil
}

// connDeadlines bounds reading the body and writing the response of every
// request on the connection itself, so no client holds a handler by
// sending or reading slowly. A websocket's hijack clears both; the live
// sockets keep deadlines of their own.
func (s *Server) connDeadlines(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		now := time.Now()
		_ = rc.SetReadDeadline(now.Add(s.opts.BodyTimeout))
		_ = rc.SetWriteDeadline(now.Add(s.opts.WriteTimeout))
		next.ServeHTTP(w, r)
	})
}

// decodeStrict decodes one JSON object into v by strictjson's rule: keys
// exactly as the contract spells them and never twice, valid UTF-8 in
// every string (nested event data included), the right types, nothing
// after. An empty body decodes as {} when allowEmpty.
func decodeStrict(body []byte, v any, allowEmpty bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		if allowEmpty {
			return nil
		}
		return errorf(http.StatusBadRequest, "invalid", "request body must be a JSON object")
	}
	err := strictjson.Unmarshal(body, v)
	var se *strictjson.Error
	if !errors.As(err, &se) {
		return err
	}
	switch {
	case se.Problem == strictjson.Trailing:
		return errorf(http.StatusBadRequest, "invalid", "request body must hold exactly one JSON object")
	case se.Problem == strictjson.WrongType && se.Pointer == "":
		return errorf(http.StatusBadRequest, "invalid", "request body must be a JSON object")
	}
	return errorf(http.StatusBadRequest, "invalid", "%s", se.Message)
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
