// Package importertest serves the real API to the tests of the importer,
// the watcher and tack's command line, and records what they sent.
//
// TODO(integrator): the server of this tree does not take yet what the
// importer sends of a session (agent, cwd, parentId, planLifetime) and of
// an event (at, a harness line's source and kind, the items' activeForm,
// blockedBy, owner, taskId), and refuses a request that carries them.
// Serve records those and strips them before the real API sees the
// request; once the server takes them, Serve hands the requests over as
// they are and the tests read them back from the API instead.
package importertest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/transcript"
)

// Sent is what the clients sent, as they sent it.
type Sent struct {
	mu       sync.Mutex
	sessions map[string]importer.NewSession // by Tack id
	events   map[string][]transcript.Event  // by Tack id, in order
}

// Session is what was sent to make or find the session id.
func (s *Sent) Session(id string) importer.NewSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// Events are the events sent to the session id, in order.
func (s *Sent) Events(id string) []transcript.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]transcript.Event(nil), s.events[id]...)
}

// Children are the ids of the sessions sent with parentId id.
func (s *Sent) Children(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for child, ns := range s.sessions {
		if ns.ParentID == id {
			out = append(out, child)
		}
	}
	return out
}

// Serve serves h (the real API's handler) for the test, and records what
// the clients send it.
func Serve(t testing.TB, h http.Handler) (*importer.Client, *Sent) {
	sent := &Sent{sessions: map[string]importer.NewSession{}, events: map[string][]transcript.Event{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/sessions":
			var ns importer.NewSession
			_ = json.Unmarshal(body, &ns)
			body, _ = json.Marshal(map[string]any{"externalKey": ns.ExternalKey, "title": ns.Title, "parallelInProgress": ns.ParallelInProgress})
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, withBody(r, body))
			defer relay(w, rec)
			var s importer.Session
			if json.Unmarshal(rec.Body.Bytes(), &s) == nil && s.ID != "" {
				sent.mu.Lock()
				if _, ok := sent.sessions[s.ID]; !ok {
					sent.sessions[s.ID] = ns
				}
				sent.mu.Unlock()
			}
			return
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/events"):
			var req struct {
				Events      []transcript.Event `json:"events"`
				ExpectedSeq *int64             `json:"expectedSeq"`
			}
			if json.Unmarshal(body, &req) == nil {
				type old struct {
					Type string          `json:"type"`
					Data json.RawMessage `json:"data"`
				}
				events := make([]old, len(req.Events))
				for i, ev := range req.Events {
					events[i] = old{ev.Type, importer.Downgrade(ev.Type, ev.Data)}
				}
				body, _ = json.Marshal(map[string]any{"events": events, "expectedSeq": req.ExpectedSeq})
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, withBody(r, body))
				defer relay(w, rec) // once recorded: a client that has the answer finds it
				if rec.Code < 300 {
					id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/sessions/"), "/events")
					sent.mu.Lock()
					sent.events[id] = append(sent.events[id], req.Events...)
					sent.mu.Unlock()
				}
				return
			}
		}
		h.ServeHTTP(w, withBody(r, body))
	}))
	t.Cleanup(srv.Close)
	return &importer.Client{Server: srv.URL}, sent
}

// relay writes the recorded answer to w.
func relay(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func withBody(r *http.Request, body []byte) *http.Request {
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return r
}
