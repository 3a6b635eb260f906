package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/tack-dev/tack/internal/hook"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/transcript"
)

// hookAnswer is what a hook answers the agent: nothing to do, or text for
// the model's next request.
type hookAnswer struct {
	HookSpecificOutput *hookOutput `json:"hookSpecificOutput,omitempty"`
}

type hookOutput struct {
	HookEventName     string `json:"hookEventName"`
	AdditionalContext string `json:"additionalContext,omitempty"`
	// PermissionDecision "deny" (PreToolUse) stops the call; the model is
	// given PermissionDecisionReason as its result.
	PermissionDecision       string `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
}

// hook serves POST /hooks/{agent}: an agent's hook payload (Claude Code's
// or codex's, through `tack hook` or as an HTTP hook) updates its session
// live, found or made by the key import and watch use for its transcript,
// and the answer carries the plan back when the model should see it.
// ?plan= is the plan mode `tack connect -plan` chose; it is checked and,
// for now, not used.
func (s *Server) hook(agent transcript.Format) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if plan := r.URL.Query().Get("plan"); plan != "" && !transcript.ValidPlan(plan) {
			s.writeError(w, r, errorf(http.StatusBadRequest, "invalid", "`plan` must be auto, always or off"))
			return
		}
		// Every hook's answer says that lines may come in the request: a
		// hook sends them so only to a server that said it takes them (an
		// older one would drop the field unread); and that a hook that
		// syncs itself may go on without waiting for its call's line.
		w.Header().Set(transcript.AppendHeader, "events")
		w.Header().Set(hook.LagHeader, hook.LagEarly)
		sentLag, err := hookLag(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		payload := bodyOf(r)
		if id := r.Header.Get(transcript.AppendHeader); id != "" {
			rest, err := s.hookAppend(w, r, id, payload)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			payload = rest
		}
		h, err := transcript.Lookup(string(agent)).ParseHook(payload)
		if err != nil {
			s.writeError(w, r, errorf(http.StatusBadRequest, "invalid", "%s", err.Error()))
			return
		}
		// A hook of this machine's user may leave its transcript to the
		// server (hookread.go); the answer says so, for the next hooks.
		reads, lag := s.readsTranscripts(r, h), sentLag
		if reads {
			w.Header().Set(hook.ReadHeader, hook.ReadLocal)
			w.Header().Set(hook.KeyFileHeader, s.readKeyFile)
		}
		if asked, keyed := s.askedToRead(r); asked {
			if !reads || !keyed {
				w.Header().Set(hook.ReadHeader, hook.ReadRefused)
				s.writeError(w, r, errorf(http.StatusConflict, "conflict", "this server does not read this hook's transcript (it reads only those of its own machine and user, unless started with -no-transcript-reads): the hook sends it"))
				return
			}
			var sent string
			sent, lag = s.readTranscripts(w, r, h, true)
			r.Header.Set(transcript.SyncedHeader, sent)
		}
		ctx := r.Context()
		owner := identity(r).Principal.ID
		// Made untitled: its first prompt titles it, by whichever route
		// it comes (the store does, in the append that brings it).
		sess, err := s.hookSession(ctx, agent, store.NewSession{ExternalKey: h.SessionKey(agent), Owner: owner, Cwd: h.Cwd})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if sub, ok := h.Subagent(agent); ok {
			// The call that started a subagent names it: its session is
			// made now, titled by the task the parent gave it, or, made
			// already by the subagent's own hooks or file, titled by it
			// now (unless a person renamed it).
			if _, err := s.hookSession(ctx, agent, store.NewSession{ExternalKey: sub.Key, Title: sub.Title, Owner: owner, Cwd: h.Cwd, ParentID: sess.ID}); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		// A subagent's hooks name its parent's session and its own
		// agent_id: its calls and its end are the child's, never the
		// parent's.
		target := sess
		if h.AgentID != "" {
			target, err = s.hookSession(ctx, agent, store.NewSession{ExternalKey: h.ChildKey(agent), Owner: owner, Cwd: h.Cwd, ParentID: sess.ID})
			if err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		if h.Event == transcript.HookPreToolUse && h.ToolUseID != "" && strings.HasPrefix(h.ToolName, "mcp__") {
			// Claude Code's MCP call names its tool_use_id, and lands in
			// this session (mcp.go), whichever instance serves it. Only an
			// MCP tool's call (mcp__<server>__<tool>) reaches an MCP
			// server: another tool's is not kept, a write saved on nearly
			// every call.
			if err := s.store.RememberCall(ctx, owner, h.ToolUseID, target.ID); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		if h.Event == transcript.HookPreCompact || h.Event == transcript.HookPostCompact {
			// The agent compacted its context: it is given the plan again.
			if err := s.patchNote(ctx, sess.ID, planNote{Compacted: true}, "compacted"); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		// A hook whose transcript was sent, or is to come, adds no call of
		// its own: the transcript's come in its order.
		if err := s.hookEvents(r, w, h, target, r.Header.Get(transcript.SyncedHeader)); err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := s.hookNeedsYou(ctx, h, sess.ID, owner); err != nil {
			s.writeError(w, r, err)
			return
		}
		answer, err := s.hookContext(r, agent, h, sess, lag)
		if errors.Is(err, errUnsettled) && sentLag > 0 {
			// The answer shows the model the list, on steps that lack the
			// calls' messages the hook did not wait for: it sends them,
			// waiting for them, and the hook again.
			w.Header().Set(hook.LagHeader, hook.LagWait)
			writeJSON(w, http.StatusOK, hookAnswer{})
			return
		}
		if errors.Is(err, errUnsettled) {
			// The answer shows the model the list: on the steps of a log
			// that holds the call's message, so the transcript is read
			// again, waiting for the call's line.
			s.readTranscripts(w, r, h, false)
			answer, err = s.hookContext(r, agent, h, sess, 0)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, answer)
	}
}

// maxHookLag bounds LagHeader on a hook's request: the calls of a few
// messages.
const maxHookLag = 4 * projection.MaxToolCalls

// hookLag is the LagHeader a hook sent: how many calls it answered before
// their lines were in its transcript the lines it sent lack (0 for none).
func hookLag(r *http.Request) (int, error) {
	v := r.Header.Get(hook.LagHeader)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxHookLag || r.Header.Get(hook.ReadHeader) != "" {
		return 0, errorf(http.StatusBadRequest, "invalid", "%s must be a count of calls from 1 to %d, sent by a hook that syncs its transcript itself", hook.LagHeader, maxHookLag)
	}
	return n, nil
}

// hookAppend applies the transcript's lines a hook's request carries
// (transcript.AppendHeader) to session id, before the hook, exactly as
// POST /sessions/{id}/events applies them (the same checks of the session,
// the events and their limits; no Idempotency-Key, which the events' own
// keys make needless), and answers the agent's payload without them. A
// refusal is the append's own error, and the hook is not applied: the
// hook sends the lines again the usual way, then the hook.
func (s *Server) hookAppend(w http.ResponseWriter, r *http.Request, id string, body []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var lines json.RawMessage
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errorf(http.StatusBadRequest, "invalid", "a hook's payload must be a JSON object")
	}
	if t, err := dec.Token(); err != nil || t != transcript.AppendField {
		return nil, errorf(http.StatusBadRequest, "invalid", "with %s, the hook's body must begin with `%s`", transcript.AppendHeader, transcript.AppendField)
	}
	if err := dec.Decode(&lines); err != nil {
		return nil, errorf(http.StatusBadRequest, "invalid", "`%s`: %v", transcript.AppendField, err)
	}
	rest := bytes.TrimLeft(body[dec.InputOffset():], " \t\r\n")
	if len(rest) == 0 || rest[0] != ',' {
		return nil, errorf(http.StatusBadRequest, "invalid", "the hook's payload must follow `%s`", transcript.AppendField)
	}
	var req appendRequest
	if err := decodeStrict(lines, &req, false); err != nil {
		return nil, err
	}
	if err := s.hookLines(w, r, id, req); err != nil {
		return nil, err
	}
	return append([]byte{'{'}, rest[1:]...), nil
}

// hookLines applies a transcript's lines (what POST
// /sessions/{id}/events takes) to session id, as that append does.
func (s *Server) hookLines(w http.ResponseWriter, r *http.Request, id string, lines appendRequest) error {
	if err := s.ownSession(r.Context(), id, identity(r), true); err != nil {
		return err
	}
	_, err := s.appendDecoded(w, r, id, lines, nil)
	return err
}

// pendingTail is how much of a session's log a permission prompt is read
// against for the call it is about: the prompt follows its call's
// PreToolUse at once, a few parallel calls at most between them.
const pendingTail = 32

// hookNeedsYou marks session id as waiting on its person when the hook
// says the agent does (transcript.Hook.NeedsYou), and for what: a Claude
// Code permission prompt names no tool, so it is about the latest call in
// the log with no result yet. It runs after the hook's own events, so that
// a question's or plan's call (its PreToolUse) does not end the wait it
// begins, and tells the live list and the webhooks.
func (s *Server) hookNeedsYou(ctx context.Context, h transcript.Hook, id, owner string) error {
	var pending *projection.ToolCall
	if h.Event == transcript.HookNotification {
		tail, err := s.store.History(ctx, id, 0, pendingTail)
		if err != nil {
			return err
		}
		pending = projection.PendingCall(tail.Events)
	}
	need, ok := h.NeedsYou(pending)
	if !ok {
		return nil
	}
	if err := s.store.SetNeedsYou(ctx, id, store.Now(), need); err != nil {
		return err
	}
	if s.opts.OnAppend != nil {
		if cur, err := s.store.Session(ctx, id); err == nil {
			cur.Owner = owner
			s.opts.OnAppend(id, store.AppendResult{Session: cur})
		}
	}
	return nil
}

// hookSession finds or makes a hook's session as import makes a
// transcript's (of one found in this instance's cache, only its id, not
// read again): its agent, working directory and the agents' policy. A
// session it makes is in no list until it holds content: an agent that
// starts and ends without a word (`claude mcp list`, `claude --version`)
// leaves none behind.
func (s *Server) hookSession(ctx context.Context, agent transcript.Format, ns store.NewSession) (store.Session, error) {
	ns.Agent, ns.PlanLifetime, ns.Unlisted, ns.Hooked = string(agent), transcript.PlanLifetime, true, true
	if transcript.Lookup(string(agent)).Config().AllowParallel {
		parallel := true
		ns.ParallelInProgress = &parallel
	}
	cacheKey := ns.Owner + "\x00" + ns.ExternalKey
	if id, ok := s.hookSessions.Get(cacheKey); ok {
		if ns.ParentID == "" || ns.Title == "" {
			// A session this instance found or made before: its id is all
			// most hooks need, and hookEvents reads the rest when it adds
			// events (sessions are never deleted, so the id stays good).
			return store.Session{ID: id, Hooked: true}, nil
		}
		sess, err := s.store.Session(ctx, id)
		switch {
		case err == nil && sess.Untitled:
			// A subagent's session its own hooks made, untitled: found
			// again by key below, which titles it by its task.
		case !errors.Is(err, store.ErrNotFound):
			return sess, err
		default:
			s.hookSessions.Remove(cacheKey)
		}
	}
	sess, created, err := s.store.CreateSession(ctx, ns)
	if err != nil {
		return sess, err
	}
	if !sess.Hooked {
		// Made by an import or a watch: heard by a hook from now on.
		if err := s.store.SetHooked(ctx, sess.ID); err != nil {
			return sess, err
		}
		sess.Hooked = true
	}
	s.hookSessions.Add(cacheKey, sess.ID, len(cacheKey)+len(sess.ID)+64)
	s.owners.Add(sess.ID, ns.Owner, ownerSize(sess.ID, ns.Owner))
	if (created || titledChild(ns, sess)) && s.opts.OnAppend != nil {
		s.opts.OnAppend(sess.ID, store.AppendResult{Session: sess})
	}
	return sess, nil
}

// titledChild reports whether sess, a subagent's session found by the
// key of ns rather than made, reads the title ns gave: the task its
// parent's call gave it, which replaces the title Tack made up or the
// prompt standing in for it (store.NewSession.Title), for the feed to tell.
func titledChild(ns store.NewSession, sess store.Session) bool {
	return ns.ParentID != "" && ns.Title != "" && sess.Title == ns.Title
}

// hookEvents appends the hook's events to sess, made against the session
// as it stands; sent is what `tack hook` said of the agent's transcript
// (transcript.HookState.Transcript). When another writer (the transcript's watcher) moved the
// session's turn meanwhile, they are made again; an event the log refuses
// as invalid is left out.
func (s *Server) hookEvents(r *http.Request, w http.ResponseWriter, h transcript.Hook, sess store.Session, sent string) error {
	ctx := r.Context()
	if sess.CreatedAt.IsZero() {
		// Only its id is known (hookSession's cache). Most hooks add no
		// event whether the turn is open or not (a tool's call whose
		// transcript was sent): then the session is not read at all.
		if len(h.Events(transcript.HookState{TurnOpen: true, Transcript: sent})) == 0 &&
			len(h.Events(transcript.HookState{TurnOpen: false, Transcript: sent})) == 0 {
			return nil
		}
		cur, err := s.store.Session(ctx, sess.ID)
		if err != nil {
			return err
		}
		sess = cur
	}
	for try := 0; ; try++ {
		// A todo tool's list write is sent as its call: the store makes the
		// list of it inside the append, so calls run at once lose nothing.
		events := h.Events(transcript.HookState{TurnOpen: sess.Turn.Open, Transcript: sent})
		if len(events) == 0 {
			return nil
		}
		req := store.AppendRequest{Events: make([]projection.NewEvent, len(events))}
		for i, ev := range events {
			req.Events[i] = projection.NewEvent{Type: ev.Type, Data: ev.Data, Keys: ev.Keys}
		}
		for len(req.Events) > 0 {
			_, err := s.commit(r, w, sess.ID, req)
			var evErr *store.EventError
			if err == nil {
				return nil
			}
			if !errors.As(err, &evErr) || (evErr.Err.Code == projection.CodeConflict && try >= 3) {
				return err
			}
			if evErr.Err.Code == projection.CodeConflict {
				break // made again on the session as it stands now
			}
			req.Events = append(req.Events[:evErr.Index], req.Events[evErr.Index+1:]...)
		}
		if len(req.Events) == 0 {
			return nil
		}
		cur, err := s.store.Session(ctx, sess.ID)
		if err != nil {
			return err
		}
		sess = cur
	}
}

// hookContext is the hook's answer, for an event that carries context
// (planContext); a compaction's mark is spent once answered. With lag,
// the log may lack that many of the model's latest messages (hookread.go):
// an answer that would show the model anything is errUnsettled instead,
// before anything is noted.
func (s *Server) hookContext(r *http.Request, agent transcript.Format, h transcript.Hook, sess store.Session, lag int) (hookAnswer, error) {
	if !transcript.CarriesContext(h.Event) {
		return hookAnswer{}, nil
	}
	note, err := s.planNote(r.Context(), sess.ID)
	if err != nil {
		return hookAnswer{}, err
	}
	requested := note.Compacted || (h.Event == transcript.HookSessionStart && (h.Source == "resume" || h.Source == "compact"))
	answer, err := s.planContext(r, agent, h, sess, note, requested, lag)
	if err == nil && note.Compacted {
		err = s.patchNote(r.Context(), sess.ID, planNote{}, "compacted")
	}
	return answer, err
}
