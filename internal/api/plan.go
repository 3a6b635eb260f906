package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/transcript"
)

// TodoToolsHeader is the request header with which `tack hook` says
// whether the agent offers a list tool of its own ("native") or none
// ("none"), as far as the agent's process says (hook.TodoTools). With the
// hook's ?plan= (`tack connect -plan`: auto, always or off; absent means
// off, hooks installed without Tack's MCP server) it decides whether the
// model is told of Tack's tool.
const TodoToolsHeader = transcript.TodoToolsHeader

// tackTodoTool is the name the model gives Tack's own todo_write through
// MCP (the server is registered as "tack").
const tackTodoTool = transcript.TackTodoTool

// planNote is what the hooks told a session's model, kept between its hook
// requests in the store (store.Notes), as JSON: the next hook may come to
// another instance.
type planNote struct {
	// Tool is the list tool the model uses, named in the texts it is
	// shown; "" until known.
	Tool string `json:"tool,omitempty"`
	// Shown is the version of the list a hook answer last showed the model
	// (a reminder, a denied call), and Steps and Version the state's Steps
	// and Version then: the model has seen it once it made a step after it
	// (its next request carried it), never for the calls it had made
	// already.
	Shown   int64     `json:"shown,omitempty"`
	Version int64     `json:"version,omitempty"`
	Steps   int       `json:"steps,omitempty"`
	At      time.Time `json:"at,omitzero"`
	// Stale is the version whose staleness was reminded, once.
	Stale int64 `json:"stale,omitempty"`
	// Compacted is set when the agent compacted its context (PreCompact,
	// PostCompact) and has not been given the plan again since.
	Compacted bool `json:"compacted,omitempty"`
}

// unsyncedSeenAfter is how long after a hook answer showed the list a step
// of the model counts as made after it, when the hooks' own calls are the
// steps.
const unsyncedSeenAfter = time.Second

// planNote reads session id's note.
func (s *Server) planNote(ctx context.Context, id string) (planNote, error) {
	var n planNote
	raw, err := s.store.SessionNote(ctx, id)
	if err != nil || raw == nil {
		return n, err
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return n, fmt.Errorf("session %s's note: %w", id, err)
	}
	return n, nil
}

// patchNote sets the fields of session id's note that keys name (their
// JSON names) to n's, leaving the others as another request set them.
func (s *Server) patchNote(ctx context.Context, id string, n planNote, keys ...string) error {
	all := map[string]any{"tool": n.Tool, "shown": n.Shown, "version": n.Version, "steps": n.Steps,
		"at": n.At, "stale": n.Stale, "compacted": n.Compacted}
	patch := make(map[string]any, len(keys))
	for _, k := range keys {
		v, ok := all[k]
		if !ok {
			panic("api: no note field " + k)
		}
		patch[k] = v
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	return s.store.PatchSessionNote(ctx, id, body)
}

// nativeListTool reports whether name is one of the agents' own list
// tools, whose call a person's unseen edit denies.
func nativeListTool(name string) bool { return transcript.IsTodoTool(name) }

// listToolName is the tool the texts name for a list tool the model
// called: Claude Code's task tools by TaskUpdate.
func listToolName(name string) string {
	switch {
	case name == projection.ToolTaskCreate || name == projection.ToolTaskUpdate:
		return "TaskUpdate"
	case nativeListTool(name), name == tackTodoTool:
		return name
	}
	return ""
}

// defaultListTool is the tool an agent's model has unless it showed
// another (transcript.Agent.ListTool).
func defaultListTool(agent transcript.Format) string {
	return transcript.Lookup(string(agent)).ListTool
}

// planContext is the hook's answer about the plan: Tack's introduction on
// SessionStart where the model has no list tool of its own; a person's
// unseen edit as a denial of the model's own list call or as a reminder;
// the list after a compaction or a resume; the stale reminder once per
// staleness. Each text names the tool the model has.
// withSteps is st with n steps more: the messages of calls that the log
// may lack yet.
func withSteps(st projection.State, n int) projection.State {
	st.Steps += n
	return st
}

// errUnsettled is planContext's word that it would show the model the
// list while the log may lack the latest calls' messages (lag).
var errUnsettled = errors.New("the hook's call is not in the log yet")

func (s *Server) planContext(r *http.Request, agent transcript.Format, h transcript.Hook, sess store.Session, note planNote, requested bool, lag int) (hookAnswer, error) {
	ctx := r.Context()
	plan, tools := r.URL.Query().Get("plan"), r.Header.Get(TodoToolsHeader)
	tell := plan == "always" || (plan == "auto" && tools == "none")
	tool := listToolName(h.ToolName)
	if tool == "" || h.Event != transcript.HookPreToolUse {
		tool = ""
		if tell && h.Event == transcript.HookSessionStart {
			tool = tackTodoTool
		}
	}
	if tool != "" && tool != note.Tool {
		if err := s.patchNote(ctx, sess.ID, planNote{Tool: tool}, "tool"); err != nil {
			return hookAnswer{}, err
		}
		note.Tool = tool
	}
	st, err := s.store.TodoList(ctx, sess.ID)
	if err != nil {
		return hookAnswer{}, err
	}
	tool = note.Tool
	if tool == "" {
		tool = defaultListTool(agent)
	}
	// A list a hook answer showed is seen once the model moved on from the
	// request it reached: a list write since, or a step of its own. With
	// the transcript sent first, the message the answer came with is a
	// step in the log already (its lines written later share its id and
	// add none), so a step since is a later message; without it, each of that message's calls adds one as its hook comes,
	// so a step counts only a while after the answer (parallel calls' hooks
	// come together).
	synced := r.Header.Get(transcript.SyncedHeader) != ""
	stepped := st.Steps > note.Steps && (synced || time.Since(note.At) > unsyncedSeenAfter)
	if note.Shown > st.Seen && (stepped || st.Version != note.Version) {
		if _, err := s.store.TodoRead(ctx, sess.ID); err != nil {
			return hookAnswer{}, err
		}
		st.Seen = note.Shown
	}
	show := func(version int64) error {
		return s.patchNote(ctx, sess.ID, planNote{Shown: version, Version: st.Version, Steps: st.Steps, At: time.Now()},
			"shown", "version", "steps", "at")
	}
	edited := st.LastEdit > st.Seen
	switch {
	case lag > 0 && (edited || requested || (tell && h.Event == transcript.HookSessionStart) ||
		(s.opts.ReminderAfter > 0 && note.Stale != st.Version && withSteps(st, lag).Reminder(s.opts.ReminderAfter, false).Due)):
		// Anything shown now would be noted on steps that lack the
		// latest calls' messages (a reminder that they would make due,
		// too): the caller reads the transcript again first.
		return hookAnswer{}, errUnsettled
	case h.Event == transcript.HookPreToolUse && edited && nativeListTool(h.ToolName):
		// The model's own list call, made without a person's change: denied
		// with the rejection Tack's own todo_write gives, which shows it the
		// list to write again.
		if err := show(st.Version); err != nil {
			return hookAnswer{}, err
		}
		return hookAnswer{HookSpecificOutput: &hookOutput{HookEventName: h.AgentEvent, PermissionDecision: "deny",
			PermissionDecisionReason: "Error: " + projection.EditedText(st.EditedBy, st.Seen, st.Version, st.Items)}}, nil
	case h.Event == transcript.HookPreToolUse && listToolName(h.ToolName) == tackTodoTool:
		// Tack's own tool rejects it itself, or takes it.
		return hookAnswer{}, nil
	}
	var text string
	switch {
	case edited && (note.Shown < st.Version || requested):
		text = projection.ReminderTextFor(st.Version, st.Items, st.EditedBy, tool)
		err = show(st.Version)
	case requested && len(st.Items) > 0:
		text = projection.ReminderTextFor(st.Version, st.Items, "", tool)
		err = show(st.Version)
	case (h.Event == transcript.HookPreToolUse || h.Event == transcript.HookPostToolUse) && listToolName(h.ToolName) == "" && s.opts.ReminderAfter > 0 &&
		note.Stale != st.Version && st.Reminder(s.opts.ReminderAfter, false).Due && !edited:
		text = projection.ReminderTextFor(st.Version, st.Items, "", tool)
		err = s.patchNote(ctx, sess.ID, planNote{Stale: st.Version}, "stale")
	}
	if err != nil {
		return hookAnswer{}, err
	}
	if tell && (h.Event == transcript.HookSessionStart || requested) {
		if text != "" {
			text = projection.IntroText + "\n" + text
		} else {
			text = projection.IntroText
		}
	}
	if text == "" {
		return hookAnswer{}, nil
	}
	return hookAnswer{HookSpecificOutput: &hookOutput{HookEventName: h.AgentEvent, AdditionalContext: text}}, nil
}
