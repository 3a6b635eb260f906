package api

import (
	"net/http"
	"sync"
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
// requests.
type planNote struct {
	// tool is the list tool the model uses, named in the texts it is
	// shown; "" until known.
	tool string
	// shown is the version of the list a hook answer last showed the model
	// (a reminder, a denied call), and steps and version the state's Steps
	// and Version then: the model has seen it once it made a step after it
	// (its next request carried it), never for the calls it had made
	// already.
	shown, version int64
	steps          int
	at             time.Time
	// stale is the version whose staleness was reminded, once.
	stale int64
}

// unsyncedSeenAfter is how long after a hook answer showed the list a step
// of the model counts as made after it, when the hooks' own calls are the
// steps.
const unsyncedSeenAfter = time.Second

// planNotes holds the sessions' notes.
type planNotes struct {
	mu    sync.Mutex
	notes map[string]planNote
}

func (p *planNotes) get(id string) planNote {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.notes[id]
}

func (p *planNotes) update(id string, f func(*planNote)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.notes == nil {
		p.notes = map[string]planNote{}
	}
	n := p.notes[id]
	f(&n)
	p.notes[id] = n
}

// nativeListTool reports whether name is one of the agents' own list
// tools, whose call a person's unseen edit denies.
func nativeListTool(name string) bool {
	switch name {
	case "TodoWrite", "TaskCreate", "TaskUpdate", "update_plan":
		return true
	}
	return false
}

// listToolName is the tool the texts name for a list tool the model
// called: Claude Code's task tools by TaskUpdate.
func listToolName(name string) string {
	switch {
	case name == "TaskCreate" || name == "TaskUpdate":
		return "TaskUpdate"
	case nativeListTool(name), name == tackTodoTool:
		return name
	}
	return ""
}

// defaultListTool is the tool an agent's model has unless it showed
// another.
func defaultListTool(agent transcript.Format) string {
	if agent == transcript.Codex {
		return "update_plan"
	}
	return "TodoWrite"
}

// planContext is the hook's answer about the plan: Tack's introduction on
// SessionStart where the model has no list tool of its own; a person's
// unseen edit as a denial of the model's own list call or as a reminder;
// the list after a compaction or a resume; the stale reminder once per
// staleness. Each text names the tool the model has.
func (s *Server) planContext(r *http.Request, agent transcript.Format, h transcript.Hook, sess store.Session, requested bool) (hookAnswer, error) {
	ctx := r.Context()
	plan, tools := r.URL.Query().Get("plan"), r.Header.Get(TodoToolsHeader)
	tell := plan == "always" || (plan == "auto" && tools == "none")
	if tool := listToolName(h.ToolName); tool != "" && h.Event == transcript.HookPreToolUse {
		s.plans.update(sess.ID, func(n *planNote) { n.tool = tool })
	}
	if tell && h.Event == transcript.HookSessionStart {
		s.plans.update(sess.ID, func(n *planNote) { n.tool = tackTodoTool })
	}
	st, err := s.store.TodoList(ctx, sess.ID)
	if err != nil {
		return hookAnswer{}, err
	}
	note := s.plans.get(sess.ID)
	tool := note.tool
	if tool == "" {
		tool = defaultListTool(agent)
	}
	// A list a hook answer showed is seen once the model moved on from the
	// request it reached: a list write since, or a step of its own. With
	// the transcript sent first, the calls of the message the answer came
	// with are in the log already, so a step since is a later message;
	// without it, each of that message's calls adds one as its hook comes,
	// so a step counts only a while after the answer (parallel calls' hooks
	// come together).
	synced := r.Header.Get(transcript.SyncedHeader) != ""
	stepped := st.Steps > note.steps && (synced || time.Since(note.at) > unsyncedSeenAfter)
	if note.shown > st.Seen && (stepped || st.Version != note.version) {
		if _, err := s.store.TodoRead(ctx, sess.ID); err != nil {
			return hookAnswer{}, err
		}
		st.Seen = note.shown
	}
	show := func(version int64) {
		s.plans.update(sess.ID, func(n *planNote) { n.shown, n.version, n.steps, n.at = version, st.Version, st.Steps, time.Now() })
	}
	edited := st.LastEdit > st.Seen
	switch {
	case h.Event == transcript.HookPreToolUse && edited && nativeListTool(h.ToolName):
		// The model's own list call, made without a person's change: denied
		// with the rejection Tack's own todo_write gives, which shows it the
		// list to write again.
		show(st.Version)
		return hookAnswer{HookSpecificOutput: &hookOutput{HookEventName: h.Event, PermissionDecision: "deny",
			PermissionDecisionReason: "Error: " + projection.EditedText(st.EditedBy, st.Seen, st.Version, st.Items)}}, nil
	case h.Event == transcript.HookPreToolUse && listToolName(h.ToolName) == tackTodoTool:
		// Tack's own tool rejects it itself, or takes it.
		return hookAnswer{}, nil
	}
	var text string
	switch {
	case edited && (note.shown < st.Version || requested):
		text = projection.ReminderTextFor(st.Version, st.Items, st.EditedBy, tool)
		show(st.Version)
	case requested && len(st.Items) > 0:
		text = projection.ReminderTextFor(st.Version, st.Items, "", tool)
		show(st.Version)
	case (h.Event == transcript.HookPreToolUse || h.Event == transcript.HookPostToolUse) && listToolName(h.ToolName) == "" && s.opts.ReminderAfter > 0 &&
		note.stale != st.Version && st.Reminder(s.opts.ReminderAfter, false).Due && !edited:
		text = projection.ReminderTextFor(st.Version, st.Items, "", tool)
		s.plans.update(sess.ID, func(n *planNote) { n.stale = st.Version })
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
	return hookAnswer{HookSpecificOutput: &hookOutput{HookEventName: h.Event, AdditionalContext: text}}, nil
}
