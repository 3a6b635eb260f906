package api

import (
	"context"
	"errors"
	"net/http"
	"sync"

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
	AdditionalContext string `json:"additionalContext"`
}

// compactions remembers the sessions whose agent compacted its context
// (PreCompact, PostCompact) and has not been given the plan again since.
type compactions struct{ sync.Map }

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
		h, err := transcript.ParseHook(bodyOf(r))
		if err != nil {
			s.writeError(w, r, errorf(http.StatusBadRequest, "invalid", "%s", err.Error()))
			return
		}
		ctx := r.Context()
		owner := identity(r).Principal.ID
		title := h.SessionKey(agent)
		if h.Event == transcript.HookUserPromptSubmit && !projection.Blank(h.Prompt) {
			title = transcript.Title(h.Prompt)
		}
		sess, err := s.hookSession(ctx, agent, store.NewSession{ExternalKey: h.SessionKey(agent), Title: title, Owner: owner, Cwd: h.Cwd})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		target := sess
		if h.Event == transcript.HookSubagentStop && h.AgentID != "" {
			target, err = s.hookSession(ctx, agent, store.NewSession{ExternalKey: h.ChildKey(agent), Title: h.ChildKey(agent), Owner: owner, Cwd: h.Cwd, ParentID: sess.ID})
			if err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		if h.Event == transcript.HookPreToolUse && h.ToolUseID != "" {
			key := owner + "\x00" + h.ToolUseID
			s.hookCalls.Add(key, target.ID, len(key)+len(target.ID)+64)
		}
		switch {
		case h.Event == transcript.HookNotification && h.NotificationType == "permission_prompt",
			h.Event == transcript.HookPermissionRequest:
			if err := s.store.SetNeedsYou(ctx, sess.ID, store.Now()); err != nil {
				s.writeError(w, r, err)
				return
			}
			if s.opts.OnAppend != nil {
				if cur, err := s.store.Session(ctx, sess.ID); err == nil {
					cur.Owner = owner
					s.opts.OnAppend(sess.ID, store.AppendResult{Session: cur})
				}
			}
		case h.Event == transcript.HookPreCompact, h.Event == transcript.HookPostCompact:
			s.compacted.Store(sess.ID, true)
		}
		if err := s.hookEvents(r, w, h, target); err != nil {
			s.writeError(w, r, err)
			return
		}
		answer, err := s.hookContext(r, h, sess)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, answer)
	}
}

// hookSession finds or makes a hook's session as import makes a
// transcript's: its agent, working directory and the agents' policy.
func (s *Server) hookSession(ctx context.Context, agent transcript.Format, ns store.NewSession) (store.Session, error) {
	ns.Agent, ns.PlanLifetime = string(agent), transcript.PlanLifetime
	if agent == transcript.ClaudeCode {
		parallel := true
		ns.ParallelInProgress = &parallel
	}
	cacheKey := ns.Owner + "\x00" + ns.ExternalKey
	if id, ok := s.hookSessions.Get(cacheKey); ok {
		sess, err := s.store.Session(ctx, id)
		if !errors.Is(err, store.ErrNotFound) {
			return sess, err
		}
		s.hookSessions.Remove(cacheKey)
	}
	sess, created, err := s.store.CreateSession(ctx, ns)
	if err != nil {
		return sess, err
	}
	s.hookSessions.Add(cacheKey, sess.ID, len(cacheKey)+len(sess.ID)+64)
	s.owners.Add(sess.ID, ns.Owner, ownerSize(sess.ID, ns.Owner))
	if created && s.opts.OnAppend != nil {
		s.opts.OnAppend(sess.ID, store.AppendResult{Session: sess})
	}
	return sess, nil
}

// hookEvents appends the hook's events to sess, made against the session
// as it stands. When another writer (the transcript's watcher) moved the
// session's turn meanwhile, they are made again; an event the log refuses
// as invalid is left out.
func (s *Server) hookEvents(r *http.Request, w http.ResponseWriter, h transcript.Hook, sess store.Session) error {
	ctx := r.Context()
	for try := 0; ; try++ {
		st := transcript.HookState{TurnOpen: sess.Turn.Open}
		if h.Event == transcript.HookPostToolUse && transcript.IsTodoTool(h.ToolName) {
			list, err := s.store.TodoList(ctx, sess.ID)
			if err != nil {
				return err
			}
			st.Items, st.TaskHigh = list.Items, list.TaskHigh
		}
		events := h.Events(st)
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

// hookContext is the hook's answer: the plan's reminder when a person has
// edited the list since the model last saw it (then marked seen), or after
// a resume or a compaction, for an event that carries context; else none.
func (s *Server) hookContext(r *http.Request, h transcript.Hook, sess store.Session) (hookAnswer, error) {
	if !transcript.CarriesContext(h.Event) {
		return hookAnswer{}, nil
	}
	_, compacted := s.compacted.Load(sess.ID)
	requested := compacted || (h.Event == transcript.HookSessionStart && (h.Source == "resume" || h.Source == "compact"))
	st, err := s.store.TodoList(r.Context(), sess.ID)
	if err != nil {
		return hookAnswer{}, err
	}
	rem := st.Reminder(0, requested)
	if !rem.Due || (*rem.Reason != projection.ReasonEdited && len(st.Items) == 0) {
		return hookAnswer{}, nil
	}
	if *rem.Reason == projection.ReasonEdited {
		// The model is shown the list now: it has seen this version.
		if _, err := s.store.TodoRead(r.Context(), sess.ID); err != nil {
			return hookAnswer{}, err
		}
	}
	s.compacted.Delete(sess.ID)
	return hookAnswer{HookSpecificOutput: &hookOutput{HookEventName: h.Event, AdditionalContext: rem.Text}}, nil
}
