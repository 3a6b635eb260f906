// Package demo plays a scripted agent session into a running Tack through its
// own HTTP API, at human pace, so a newcomer can watch a plan move in the
// browser: a plan of six steps worked through with tool calls, a rejected
// todo_write the agent corrects, and a second turn with a new plan.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tack-dev/tack/internal/importer"
)

// Options tune a run.
type Options struct {
	// Pace is the pause between two steps; 0 plays as fast as the server answers.
	Pace time.Duration
	// Out receives the URL to open; nil prints nothing.
	Out io.Writer
	// Client is the HTTP client; nil means a client with a 10 s timeout.
	Client *http.Client
	// Token, when set, is sent as the bearer token: under -auth token the
	// demo plays as its own principal.
	Token string
	// StopAfter, when above 0, ends the script after that many accepted
	// todo_writes, leaving the session mid-plan (for screenshots).
	StopAfter int
}

// Run creates a session and plays the script into it. It returns the session
// id once the script is over, or the first error.
func Run(ctx context.Context, baseURL string, opts Options) (string, error) {
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 10 * time.Second}
	}
	base := strings.TrimRight(baseURL, "/")
	p := &player{ctx: ctx, base: base, opts: opts, c: &importer.Client{Server: base, Token: opts.Token, HTTP: opts.Client}}
	var sess struct{ ID string }
	if err := p.call("POST", "/sessions", map[string]string{"title": "Fix the flaky checkout test"}, http.StatusCreated, &sess); err != nil {
		return "", err
	}
	p.id = sess.ID
	if opts.Out != nil {
		fmt.Fprintf(opts.Out, "demo: watch the agent at %s/s/%s\n", p.base, p.id)
	}
	// A head start to open the page before anything moves.
	p.pause(3)
	if err := p.play(); err != nil && !errors.Is(err, errStopped) {
		return p.id, fmt.Errorf("demo: %w", err)
	}
	return p.id, nil
}

type player struct {
	ctx    context.Context
	base   string
	opts   Options
	c      *importer.Client
	id     string
	calls  int
	writes int
	err    error
}

// errStopped ends the script early at Options.StopAfter; Run does not report it.
var errStopped = errors.New("stopped")

// todo is one item as the model writes it.
type todo struct {
	Content string `json:"content"`
	Status  string `json:"status"`
}

// plan builds a list from contents and a status letter per item:
// p pending, i in progress, c completed.
func plan(states string, contents ...string) []todo {
	states = strings.ReplaceAll(states, " ", "")
	out := make([]todo, len(contents))
	for i, c := range contents {
		status := map[byte]string{'p': "pending", 'i': "in_progress", 'c': "completed"}[states[i]]
		out[i] = todo{Content: c, Status: status}
	}
	return out
}

var fixPlan = []string{
	"Reproduce the flaky failure locally",
	"Read the checkout handler and its test",
	"Find the source of the nondeterminism",
	"Fix the race on the order total",
	"Add a regression test under -race",
	"Run the full test suite",
}

var followUpPlan = []string{
	"Write the changelog entry",
	"Draft the pull request description",
	"Double-check the diff",
}

func (p *player) play() error {
	p.append("turn/start", map[string]any{})
	p.append("message/user", map[string]any{"text": "TestCheckout fails about one run in ten on CI. Can you find out why and fix it?"})
	p.pause(1)
	p.say("I'll start with a plan, then reproduce the failure before touching any code.")
	p.writeTodos(plan("ipppp p", fixPlan...), true)
	p.tool("bash", map[string]any{"command": "go test ./checkout -run TestCheckout -count=50"}, false,
		"--- FAIL: TestCheckout (0.03s)\n    checkout_test.go:88: total = 1998, want 2000\nFAIL\nFAIL\tshop/checkout\t1.204s\n(4 of 50 runs failed)")
	p.writeTodos(plan("cippp p", fixPlan...), true)
	p.tool("read_file", map[string]any{"path": "checkout/handler.go"}, false,
		"func total(items []Item) int {\n\tvar sum int\n\tvar wg sync.WaitGroup\n\tfor _, it := range items {\n\t\twg.Add(1)\n\t\tgo func() { defer wg.Done(); sum += it.Price * it.Qty }()\n\t}\n\twg.Wait()\n\treturn sum\n}")
	p.say("Found it: total() adds line items from several goroutines to one shared int without a lock.")
	// The agent jumps ahead with two tasks in progress; Tack says no.
	p.writeTodos(plan("ccii p p", fixPlan...), false)
	p.say("Only one task may be in progress at a time. The diagnosis is done, so I'll mark it and move on to the fix.")
	p.writeTodos(plan("ccci p p", fixPlan...), true)
	p.tool("edit_file", map[string]any{"path": "checkout/handler.go", "edit": "sum the items in a plain loop"}, false,
		"Applied 1 edit to checkout/handler.go (-7 +3 lines)")
	p.writeTodos(plan("cccc i p", fixPlan...), true)
	p.tool("write_file", map[string]any{"path": "checkout/total_test.go"}, false, "Wrote 41 lines to checkout/total_test.go")
	p.tool("bash", map[string]any{"command": "go test -race ./checkout -count=200"}, false, "ok  \tshop/checkout\t6.417s")
	p.writeTodos(plan("cccc c i", fixPlan...), true)
	p.tool("bash", map[string]any{"command": "go test ./..."}, false,
		"ok  \tshop/cart\t0.212s\nok  \tshop/checkout\t0.318s\nok  \tshop/payments\t0.540s\nok  \tshop/web\t0.901s")
	p.writeTodos(plan("cccc c c", fixPlan...), true)
	p.say("Fixed. total() now sums in a single loop, so there is no shared write left; the new test runs 200 times under -race without a failure and the whole suite passes.")
	p.append("turn/end", map[string]any{"reason": "completed"})
	p.pause(3)

	// A new turn: the old plan no longer stands until the agent writes one.
	p.append("turn/start", map[string]any{})
	p.append("message/user", map[string]any{"text": "Great, thanks! Add a changelog entry and draft the PR description too."})
	p.pause(1)
	p.say("Sure, a short follow-up plan.")
	p.writeTodos(plan("ipp", followUpPlan...), true)
	p.tool("edit_file", map[string]any{"path": "CHANGELOG.md"}, false, "Applied 1 edit to CHANGELOG.md (+2 lines)")
	p.writeTodos(plan("cip", followUpPlan...), true)
	p.tool("write_file", map[string]any{"path": ".git/PR_DESCRIPTION.md"}, false, "Wrote 18 lines to .git/PR_DESCRIPTION.md")
	p.writeTodos(plan("cci", followUpPlan...), true)
	p.tool("bash", map[string]any{"command": "git diff --stat"}, false,
		" CHANGELOG.md             |  2 ++\n checkout/handler.go      | 10 +++-------\n checkout/total_test.go   | 41 +++++++++++++++++\n 3 files changed, 46 insertions(+), 7 deletions(-)")
	p.writeTodos(plan("ccc", followUpPlan...), true)
	p.say("Done: the changelog has an entry under Fixed, and the PR description is ready to paste.")
	p.append("turn/end", map[string]any{"reason": "completed"})
	return p.err
}

// say appends an assistant message without tool calls.
func (p *player) say(text string) {
	p.append("message/assistant", map[string]any{"text": text})
	p.pause(1)
}

// tool plays one tool call and its result, as a harness would report them.
func (p *player) tool(name string, args map[string]any, isError bool, content string) {
	id := p.callID()
	p.append("message/assistant", map[string]any{"text": "", "toolCalls": []map[string]any{{"id": id, "name": name, "args": args}}})
	p.pause(1.5)
	p.append("tool/result", map[string]any{"callId": id, "name": name, "isError": isError, "content": content})
	p.pause(1)
}

// writeTodos plays a todo_write call: the model's call, the call forwarded to
// Tack, and Tack's answer handed back as the tool result. want says whether
// the script expects Tack to accept the list.
func (p *player) writeTodos(todos []todo, want bool) {
	if p.err != nil {
		return
	}
	id := p.callID()
	args := map[string]any{"todos": todos}
	p.append("message/assistant", map[string]any{"text": "", "toolCalls": []map[string]any{{"id": id, "name": "todo_write", "args": args}}})
	p.pause(0.5)
	var res struct {
		IsError bool   `json:"isError"`
		Content string `json:"content"`
	}
	status, err := p.c.Call(p.ctx, "POST", "/sessions/"+p.id+"/tools/todo_write", args, &res)
	switch {
	case err != nil:
		p.err = err
		return
	case want && status != http.StatusOK, !want && status != http.StatusUnprocessableEntity:
		p.err = fmt.Errorf("todo_write answered %d %q, the script expected it to be %s", status, res.Content, map[bool]string{true: "accepted", false: "rejected"}[want])
		return
	}
	p.append("tool/result", map[string]any{"callId": id, "name": "todo_write", "isError": res.IsError, "content": res.Content})
	if want {
		p.writes++
		if p.writes == p.opts.StopAfter && p.err == nil {
			p.err = errStopped
		}
	}
	p.pause(1.5)
}

func (p *player) callID() string {
	p.calls++
	return fmt.Sprintf("call_%02d", p.calls)
}

func (p *player) append(typ string, data any) {
	if p.err != nil {
		return
	}
	body := map[string]any{"events": []map[string]any{{"type": typ, "data": data}}}
	p.err = p.call("POST", "/sessions/"+p.id+"/events", body, http.StatusCreated, nil)
}

// pause waits steps times the pace, or until the run is cancelled.
func (p *player) pause(steps float64) {
	if p.err != nil || p.opts.Pace == 0 {
		return
	}
	t := time.NewTimer(time.Duration(steps * float64(p.opts.Pace)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-p.ctx.Done():
		p.err = p.ctx.Err()
	}
}

// call sends a request and insists on the wanted status.
func (p *player) call(method, path string, body any, want int, out any) error {
	status, err := p.c.Call(p.ctx, method, path, body, out)
	if err == nil && status != want {
		err = fmt.Errorf("%s %s: status %d, want %d", method, path, status, want)
	}
	return err
}
