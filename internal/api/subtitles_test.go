package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/store"
)

// TestSubagentTitles: a subagent's session reads the title an import of
// its transcripts gives it, the task its parent's Agent call gave
// ("general-purpose: Check the changelog"), in whatever order Tack hears
// of the call (the parent's PostToolUse hook, or its transcript), of the
// subagent's own file (`tack watch`, a hook's sync) and of the subagent's
// hooks; by its prompt when no call names it; and a person's rename
// stands whatever comes after it.
func TestSubagentTitles(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{
		{name: "AnyOrder", run: testSubagentTitleOrders},
		{name: "NoTask", run: testSubagentTitleNoTask},
		{name: "Renamed", run: testSubagentTitleRenamed},
	})
}

const (
	subPrompt = "Read CHANGELOG.md and say whether it is in order."
	subTask   = "general-purpose: Check the changelog"
)

// subagentRun is one parent session sid that starts subagent a1 in the
// background, its transcripts written as Claude Code writes them.
type subagentRun struct {
	t             *testing.T
	b             *bundle
	sid           string
	parent, child string
}

func newSubagentRun(t *testing.T, b *bundle, sid string) *subagentRun {
	dir := t.TempDir()
	r := &subagentRun{t: t, b: b, sid: sid, parent: filepath.Join(dir, sid+".jsonl"),
		child: filepath.Join(dir, sid, "subagents", "agent-a1.jsonl")}
	call, _ := json.Marshal(map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "tu1", "name": "Agent", "input": r.agentInput()}}})
	appendLines(t, r.parent,
		claudeLine(sid, "user", "u1", "p1", `{"role":"user","content":"Have a helper check the changelog."}`),
		claudeLine(sid, "assistant", "u2", "p1", string(call)),
		strings.TrimSuffix(claudeLine(sid, "user", "u3", "p1", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":"Async agent launched successfully."}]}`), "}")+
			`,"toolUseResult":{"isAsync":true,"status":"async_launched","agentId":"a1"}}`)
	if err := os.MkdirAll(filepath.Dir(r.child), 0o755); err != nil {
		t.Fatal(err)
	}
	side := r.side
	bash, _ := json.Marshal(map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "b1", "name": "Bash", "input": map[string]any{"command": "echo ok"}}}})
	prompt, _ := json.Marshal(map[string]any{"role": "user", "content": subPrompt})
	appendLines(t, r.child, side("user", "c1", string(prompt)), side("assistant", "c2", string(bash)))
	return r
}

// side is a line of the subagent's own file.
func (r *subagentRun) side(typ, uuid, message string) string {
	return strings.TrimSuffix(claudeLine(r.sid, typ, uuid, "", message), "}") + `,"isSidechain":true,"agentId":"a1"}`
}

func (r *subagentRun) agentInput() map[string]any {
	return map[string]any{"description": "Check the changelog", "prompt": subPrompt, "subagent_type": "general-purpose"}
}

func (r *subagentRun) imp(path string) {
	r.t.Helper()
	var out bytes.Buffer
	if err := importer.Import(context.Background(), &importer.Client{Server: r.b.url, HTTP: r.b.client}, []string{path}, &out); err != nil {
		r.t.Fatalf("import %s: %v\n%s", path, err, out.String())
	}
}

// step runs one way Tack hears of the subagent.
func (r *subagentRun) step(name string) {
	r.t.Helper()
	switch name {
	case "task": // the parent's PostToolUse of its Agent call, which names the subagent
		r.b.hook("claude-code", r.sid, "PostToolUse", map[string]any{"prompt_id": "p1", "tool_name": "Agent", "tool_use_id": "tu1",
			"tool_input": r.agentInput(), "tool_response": map[string]any{"isAsync": true, "status": "async_launched", "agentId": "a1"}})
	case "spawn": // the parent's transcript, whose call's result names the subagent
		r.imp(r.parent)
	case "watch": // the subagent's own file
		r.imp(r.child)
	case "sync": // the subagent's PreToolUse through `tack hook`, which sends its file first
		r.b.sendHook(r.sid, r.parent, "PreToolUse", map[string]any{"agent_id": "a1", "tool_name": "Bash", "tool_use_id": "b1",
			"tool_input": map[string]any{"command": "echo ok"}})
	case "hook": // the subagent's PreToolUse, its transcript not sent
		r.b.hook("claude-code", r.sid, "PreToolUse", map[string]any{"agent_id": "a1", "tool_name": "Bash", "tool_use_id": "b1",
			"tool_input": map[string]any{"command": "echo ok"}})
	default:
		r.t.Fatalf("no step %q", name)
	}
}

// childSession is the subagent's session; it must exist.
func (r *subagentRun) childSession() store.Session {
	r.t.Helper()
	var page struct{ Sessions []store.Session }
	r.b.want(r.b.do("GET", "/sessions?parent="+r.b.keyed("claude-code:"+r.sid).ID, nil), http.StatusOK, &page)
	if len(page.Sessions) != 1 {
		r.t.Fatalf("the parent's children %+v, want the subagent's alone", page.Sessions)
	}
	return page.Sessions[0]
}

func testSubagentTitleOrders(t *testing.T, b *bundle) {
	var orders [][]string
	for _, src := range []string{"task", "spawn"} {
		for _, o := range [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
			steps := []string{src, "watch", "hook"}
			orders = append(orders, []string{steps[o[0]], steps[o[1]], steps[o[2]]})
		}
		orders = append(orders, []string{"sync", src}, []string{src, "sync"})
	}
	for i, order := range orders {
		r := newSubagentRun(t, b, fmt.Sprintf("ord-%d", i))
		for _, s := range order {
			r.step(s)
		}
		if got := r.childSession(); got.Title != subTask || got.Untitled {
			t.Errorf("%s: the subagent reads %q (untitled %v), want %q", strings.Join(order, ", "), got.Title, got.Untitled, subTask)
		}
	}
}

// With no call that names it, a subagent reads its prompt, as an import
// of its file alone titles it, whether its hooks came first or not; a
// later prompt of its (a subagent resumed) leaves the title.
func testSubagentTitleNoTask(t *testing.T, b *bundle) {
	for i, order := range [][]string{{"watch"}, {"hook", "watch"}, {"watch", "hook"}, {"sync"}} {
		r := newSubagentRun(t, b, fmt.Sprintf("nt-%d", i))
		for _, s := range order {
			r.step(s)
		}
		// Untitled still: the prompt stands in for a task to come.
		if got := r.childSession(); got.Title != subPrompt || !got.Untitled {
			t.Errorf("%s: the subagent reads %q (untitled %v), want its prompt, untitled", strings.Join(order, ", "), got.Title, got.Untitled)
		}
	}
	r := newSubagentRun(t, b, "nt-later")
	r.step("watch")
	appendLines(t, r.child, r.side("assistant", "c3", `{"role":"assistant","content":[{"type":"text","text":"In order."}]}`),
		r.side("user", "c4", `{"role":"user","content":"Now read README.md"}`))
	r.step("watch")
	if got := r.childSession(); got.Title != subPrompt || got.LastSeq < 5 {
		t.Errorf("after a second prompt the subagent reads %q (%d events), want its first prompt", got.Title, got.LastSeq)
	}
}

// A person's rename is final: the task heard after it leaves it.
func testSubagentTitleRenamed(t *testing.T, b *bundle) {
	for i, before := range [][]string{{"watch"}, {"hook"}, {"hook", "watch"}} {
		for _, src := range []string{"task", "spawn"} {
			r := newSubagentRun(t, b, fmt.Sprintf("rn-%d-%s", i, src))
			for _, s := range before {
				r.step(s)
			}
			kid := r.childSession()
			b.want(b.do("PATCH", "/sessions/"+kid.ID, map[string]any{"title": "Mine"}), http.StatusOK, nil)
			r.step(src)
			r.step("watch")
			if got := b.session(kid.ID); got.Title != "Mine" || got.Untitled {
				t.Errorf("%s then a rename, then %s: the subagent reads %q (untitled %v)", strings.Join(before, ", "), src, got.Title, got.Untitled)
			}
		}
	}
}
