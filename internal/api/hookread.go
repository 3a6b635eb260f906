package api

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/tack-dev/tack/internal/hook"
	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/transcript"
)

// A hook from the server's own machine and user need not read the agent's
// transcript itself: it asks the server to (hook.ReadHeader), and the
// server syncs the transcript exactly as the hook would have, before the
// hook, keeping what it sent of each file in memory (hook.Transcripts).
// The hook process then does no more than forward its payload, which is
// most of what a hook cost beyond its start.

// readBudget bounds the server's sync of a hook's transcripts, as the
// hook bounds its own within its default timeout.
const readBudget = hook.DefaultTimeout - 200*time.Millisecond

// readsTranscripts says whether the server reads h's transcripts itself:
// the hook came over loopback and every one is Readable. A hook naming
// none is read as well: there is nothing to read.
func (s *Server) readsTranscripts(r *http.Request, h transcript.Hook) bool {
	if s.readKey == "" {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return false
	}
	for _, p := range h.Transcripts() {
		if !hook.Readable(p) {
			return false
		}
	}
	return true
}

// askedToRead says whether r asks the server to read its hook's
// transcripts, showing the server's key.
func (s *Server) askedToRead(r *http.Request) (asked, keyed bool) {
	if r.Header.Get(hook.ReadHeader) != hook.ReadAsk {
		return false, false
	}
	key := r.Header.Get(hook.KeyHeader)
	return true, s.readKey != "" && subtle.ConstantTimeCompare([]byte(key), []byte(s.readKey)) == 1
}

// readTranscripts syncs h's transcripts for a hook that asked, and applies
// the last lines before the hook as a hook's own request would carry them
// (hookLines); it answers what the hook would have sent as its
// SyncedHeader. With early, a tool's hooks do not wait for its call's
// line (hook.Transcripts.Sync), and lag is how many calls' messages the
// log may lack.
func (s *Server) readTranscripts(w http.ResponseWriter, r *http.Request, h transcript.Hook, early bool) (sent string, lag int) {
	c := importer.Client{Server: "http://tack.internal", Token: bearer(r), HTTP: &http.Client{Transport: selfTransport{h: s.self, host: r.Host}}}
	sent, batch, applied, lag := s.transcripts.Sync(r.Context(), c, h, readBudget, early)
	if batch == nil {
		return sent, lag
	}
	lines := appendRequest{Events: make([]appendEvent, len(batch.Events))}
	for i, ev := range batch.Events {
		lines.Events[i] = appendEvent{Type: ev.Type, Data: ev.Data, Keys: ev.Keys, Late: ev.Late}
		if !ev.At.IsZero() {
			lines.Events[i].At, _ = json.Marshal(ev.At)
		}
	}
	applied(s.hookLines(w, r, batch.Session, lines) == nil)
	return sent, lag
}

// bearer is the token r was sent with, for the server's own requests on
// its behalf.
func bearer(r *http.Request) string {
	a := r.Header.Get("Authorization")
	if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return a[7:]
	}
	return ""
}

// selfTransport answers the server's own requests with its own handler,
// in process: the requests a transcript's sync makes (finding its session,
// reading its events to match, an append on its own), as the hook's
// caller, through every check a request from outside meets (host is the
// hook's, which the server answered).
type selfTransport struct {
	h    http.Handler
	host string
}

func (t selfTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.RemoteAddr = "127.0.0.1:0"
	r.RequestURI = r.URL.RequestURI()
	r.Host = t.host
	if r.Body == nil {
		r.Body = http.NoBody
	}
	rec := &recorder{header: http.Header{}}
	t.h.ServeHTTP(rec, r)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &http.Response{
		Status: http.StatusText(rec.status), StatusCode: rec.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rec.header, Body: io.NopCloser(bytes.NewReader(rec.body.Bytes())),
		ContentLength: int64(rec.body.Len()), Request: req,
	}, nil
}

// recorder is the response of a request selfTransport serves.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}
