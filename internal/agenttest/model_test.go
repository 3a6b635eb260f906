package agenttest

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// A Turn is one answer of the scripted model: some text, then the tool
// calls it makes (none ends the agent's turn).
type Turn struct {
	Text  string
	Tools []Call
	// Tokens, if set, is the input tokens the answer reports used (100
	// otherwise): a large count makes an agent compact its context.
	Tokens int
	// Before, if set, runs when the request this turn answers arrives and
	// before the answer is sent: the agent is waiting on the model, as in
	// the middle of a real turn.
	Before func(req Request)
}

// A Call is one tool call of the model's.
type Call struct {
	Name  string
	Input any
	// Namespace is codex's, for a deferred tool such as an MCP server's
	// ("mcp__tack"); empty for the built-in ones.
	Namespace string
}

// A Request is one request the model server received.
type Request struct {
	Method, Path string
	Body         []byte
	// Scripted tells the agent loop's own requests (answered from the
	// script) from the rest (token counts, titles, compaction).
	Scripted bool
}

// Contains reports whether the request body holds s, JSON-escaped or not.
func (r Request) Contains(s string) bool {
	if strings.Contains(string(r.Body), s) {
		return true
	}
	esc, _ := json.Marshal(s)
	return strings.Contains(string(r.Body), strings.Trim(string(esc), `"`))
}

// script is what both model servers share: the turns still to give, and
// every request received.
type script struct {
	t     testing.TB
	mu    sync.Mutex
	turns []Turn
	log   []Request
	// arrived is signalled (without blocking) on every request.
	arrived chan struct{}
}

func newScript(t testing.TB, turns []Turn) *script {
	return &script{t: t, turns: turns, arrived: make(chan struct{}, 1)}
}

// next takes the next turn; past the end of the script it answers a
// closing text so that an agent that asks once more still finishes.
func (s *script) next(req Request) Turn {
	s.mu.Lock()
	s.log = append(s.log, req)
	var turn Turn
	if len(s.turns) > 0 {
		turn, s.turns = s.turns[0], s.turns[1:]
	} else {
		s.t.Logf("model: request %s %s past the end of the script", req.Method, req.Path)
		turn = Turn{Text: "Done."}
	}
	s.mu.Unlock()
	s.signal()
	return turn
}

func (s *script) record(req Request) {
	s.mu.Lock()
	s.log = append(s.log, req)
	s.mu.Unlock()
	s.signal()
}

func (s *script) signal() {
	select {
	case s.arrived <- struct{}{}:
	default:
	}
}

// Requests returns every request received so far, in order.
func (s *script) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Scripted returns the agent loop's requests only, in order.
func (s *script) Scripted() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Scripted {
			out = append(out, r)
		}
	}
	return out
}

// Left is how many turns of the script were never asked for.
func (s *script) Left() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns)
}

// sse writes one server-sent event and flushes it.
func sse(w http.ResponseWriter, event string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	_, _ = w.Write([]byte("event: " + event + "\ndata: " + string(b) + "\n\n"))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func inputJSON(v any) string {
	if v == nil {
		return "{}"
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// ToolNames are the names of the tools the request offers the model (a
// codex namespace's tools as namespace.name).
func (r Request) ToolNames() []string {
	var in struct {
		Tools []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(r.Body, &in)
	var names []string
	for _, tool := range in.Tools {
		name := tool.Name
		if name == "" {
			name = tool.Type
		}
		names = append(names, name)
		for _, sub := range tool.Tools {
			names = append(names, name+"."+sub.Name)
		}
	}
	return names
}

// ToolResults are the texts of the tool results the request carries back
// to the model: Anthropic's tool_result blocks, Responses'
// function_call_output items.
func (r Request) ToolResults() []string {
	var out []string
	for _, res := range r.Results() {
		out = append(out, res.Text)
	}
	return out
}

// A Result is one tool result a request carries back to the model: its
// text, and whether the agent marked it an error (Anthropic's is_error;
// the Responses API has no such mark).
type Result struct {
	Text    string
	IsError bool
}

// Results are the tool results the request carries, in order.
func (r Request) Results() []Result {
	var in struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Input []struct {
			Type   string          `json:"type"`
			Output json.RawMessage `json:"output"`
		} `json:"input"`
	}
	_ = json.Unmarshal(r.Body, &in)
	var out []Result
	for _, m := range in.Messages {
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
			IsError bool            `json:"is_error"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				out = append(out, Result{Text: flatten(b.Content), IsError: b.IsError})
			}
		}
	}
	for _, it := range in.Input {
		if strings.HasSuffix(it.Type, "call_output") {
			out = append(out, Result{Text: flatten(it.Output)})
		}
	}
	return out
}

// flatten is a result's text: a string, or the text parts of a list.
func flatten(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var texts []string
	for _, p := range parts {
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n")
}
