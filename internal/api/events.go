package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"net/http"

	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

type appendRequest struct {
	Events      []appendEvent `json:"events"`
	ExpectedSeq *int64        `json:"expectedSeq"`
}

type appendEvent struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
	// At is the agent's own time of the event, null or absent for none.
	At json.RawMessage `json:"at"`
	// Keys are the agent's own ids of the event (projection.NewEvent.Keys).
	Keys []string `json:"keys"`
	// Late joins the latest turn, ended already (projection.NewEvent.Late).
	Late bool `json:"late"`
}

// agentTimes reads the events' own times into events: each an RFC 3339
// time at most projection.MaxAtAhead after now, else a 400 naming it.
func agentTimes(req []appendEvent, events []projection.NewEvent, now projection.Time) error {
	for i, ev := range req {
		at, err := projection.ParseAt(ev.At)
		if err == nil {
			err = projection.CheckAt(at, now)
		}
		var pe *projection.Error
		if errors.As(err, &pe) {
			return errorf(http.StatusBadRequest, "invalid", "events[%d]: %s", i, pe.Message)
		}
		if err != nil {
			return err
		}
		events[i].At = at
	}
	return nil
}

// idempotency reads the Idempotency-Key header into req, with a hash of the
// request that tells a retry from a reuse of the key.
func idempotency(r *http.Request, body []byte, req *store.AppendRequest) error {
	keys := r.Header.Values("Idempotency-Key")
	if len(keys) > 1 {
		return errorf(http.StatusBadRequest, "invalid", "Idempotency-Key is given %d times; give it once", len(keys))
	}
	if len(keys) == 0 || keys[0] == "" {
		return nil
	}
	key := keys[0]
	if len(key) > MaxIdempotencyKey {
		return errorf(http.StatusBadRequest, "invalid", "Idempotency-Key must be at most %d bytes", MaxIdempotencyKey)
	}
	if !printableASCII(key) {
		return errorf(http.StatusBadRequest, "invalid", "Idempotency-Key must be printable ASCII without spaces")
	}
	h := sha256.New()
	h.Write([]byte(r.Method + " " + r.URL.Path + "\n"))
	h.Write(body)
	req.IdempotencyKey, req.RequestHash = key, hex.EncodeToString(h.Sum(nil))
	return nil
}

// commit appends req for the request r and says so on w when it was an
// idempotent replay; every write of a REST route goes through here.
func (s *Server) commit(r *http.Request, w http.ResponseWriter, id string, req store.AppendRequest) (store.AppendResult, error) {
	res, err := s.append(r.Context(), id, req)
	if err == nil && res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	return res, err
}

// append appends req to session id as the principal on ctx and tells whoever
// listens (the live hub, the MCP subscribers): every write, whichever
// transport carried it, goes through here.
func (s *Server) append(ctx context.Context, id string, req store.AppendRequest) (store.AppendResult, error) {
	res, err := s.store.Append(ctx, id, req)
	if err != nil {
		return res, err
	}
	s.metrics.appended(res)
	// A replay is announced again: the first answer may have been lost
	// with nobody told of the commit (a 503 that raced it). Subscribers
	// skip what they already have.
	if s.opts.OnAppend != nil && len(res.Events) > 0 {
		who, _ := auth.From(ctx)
		res.Session.Owner = who.Principal.ID // for the live feed, which shows each principal its own
		s.opts.OnAppend(id, res)
	}
	if res.TodosChanged && res.Todos != nil {
		s.mcp.listWritten(id, res.Todos.Version)
	}
	return res, nil
}

func (s *Server) appendEvents(w http.ResponseWriter, r *http.Request) {
	answer, err := s.appendBody(w, r, idOf(r), bodyOf(r), true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, answer)
}

// appendBody appends what body, as POST /sessions/{id}/events takes it,
// says to session id, and answers what that route answers: the route's
// own request, or the events a hook's request carries (hookAppend), which
// takes no Idempotency-Key (keyed false).
func (s *Server) appendBody(w http.ResponseWriter, r *http.Request, id string, body []byte, keyed bool) (map[string]any, error) {
	var req appendRequest
	if err := decodeStrict(body, &req, false); err != nil {
		return nil, err
	}
	if !keyed {
		body = nil
	}
	return s.appendDecoded(w, r, id, req, body)
}

// appendDecoded appends req's events to session id, checked as POST
// /sessions/{id}/events checks them, under the request's Idempotency-Key
// when body (the request's, which the key's hash covers) is given.
func (s *Server) appendDecoded(w http.ResponseWriter, r *http.Request, id string, req appendRequest, body []byte) (map[string]any, error) {
	switch {
	case len(req.Events) == 0:
		return nil, errorf(http.StatusUnprocessableEntity, "invalid", "`events` must hold at least one event")
	case len(req.Events) > MaxBatchEvents:
		return nil, errorf(http.StatusRequestEntityTooLarge, "too_large", "at most %d events per batch, got %d", MaxBatchEvents, len(req.Events))
	case req.ExpectedSeq != nil && *req.ExpectedSeq < 0:
		return nil, errorf(http.StatusUnprocessableEntity, "invalid", "`expectedSeq` must not be negative")
	}
	areq := store.AppendRequest{ExpectedSeq: req.ExpectedSeq, Events: make([]projection.NewEvent, len(req.Events))}
	for i, ev := range req.Events {
		areq.Events[i] = projection.NewEvent{Type: ev.Type, Data: ev.Data, Keys: ev.Keys, Late: ev.Late}
	}
	if err := agentTimes(req.Events, areq.Events, store.Now()); err != nil {
		return nil, err
	}
	if body != nil {
		if err := idempotency(r, body, &areq); err != nil {
			return nil, err
		}
	}
	res, err := s.commit(r, w, id, areq)
	if err != nil {
		return nil, err
	}
	answer := map[string]any{"events": res.Events}
	if len(res.Held) > 0 {
		answer["held"] = res.Held
	}
	return answer, nil
}

func (s *Server) readEvents(w http.ResponseWriter, r *http.Request) {
	after, err := intParam(r, "after", 0, 0, math.MaxInt64)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	limit, err := limitParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	events, hasMore, err := s.store.Events(r.Context(), idOf(r), after, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": events, "hasMore": hasMore})
}

func (s *Server) readHistory(w http.ResponseWriter, r *http.Request) {
	before, err := intParam(r, "before", 0, 1, math.MaxInt64)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	limit, err := limitParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h, err := s.store.History(r.Context(), idOf(r), before, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	resp := map[string]any{"events": h.Events, "hasMore": h.HasMore}
	if h.Snapshot != nil {
		resp["snapshot"] = h.Snapshot
	}
	writeJSON(w, http.StatusOK, resp)
}

// DefaultMessagesLimit is the largest page, so that a client that reads
// /messages once gets the whole of a short session; every page is bounded by
// bytes too (store.MaxPageBytes). See docs/api.md.
const DefaultMessagesLimit = MaxPageLimit

// readMessages answers a page of the model surface: the messages derived
// from the events after `after`, oldest first, with the cursor of the next.
func (s *Server) readMessages(w http.ResponseWriter, r *http.Request) {
	after, err := intParam(r, "after", 0, 0, math.MaxInt64)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	limit, err := intParam(r, "limit", DefaultMessagesLimit, 1, MaxPageLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.store.Messages(r.Context(), idOf(r), after, int(limit))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": page.Messages, "hasMore": page.HasMore, "nextAfter": page.NextAfter})
}
