package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Anthropic is a scripted Anthropic Messages API, as Claude Code calls it:
// streaming POST /v1/messages. A request that offers tools is the agent
// loop's and gets the script's next turn; any other (a title, a summary)
// gets a short text; token counts and the model list get plausible answers.
type Anthropic struct {
	*script
	URL string
	// subagents are the scripts of the subagents the model starts, each
	// found by the task its parent gave it (see Subagent).
	mu        sync.Mutex
	subagents map[string]*script
}

// Subagent scripts the subagent whose task is prompt: a request whose
// first message holds prompt is a subagent's (its parent's first message
// is the person's prompt), and gets this script's next turn, so that a
// subagent running beside its parent takes none of the parent's turns.
func (a *Anthropic) Subagent(prompt string, turns ...Turn) *script {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.subagents == nil {
		a.subagents = map[string]*script{}
	}
	s := newScript(a.t, turns)
	a.subagents[prompt] = s
	return s
}

// scriptOf is the script that answers an agent loop's request: a
// subagent's, or the parent's.
func (a *Anthropic) scriptOf(body []byte) *script {
	var in struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(body, &in) != nil || len(in.Messages) == 0 {
		return a.script
	}
	first := Request{Body: in.Messages[0]}
	a.mu.Lock()
	defer a.mu.Unlock()
	for prompt, s := range a.subagents {
		if first.Contains(prompt) {
			return s
		}
	}
	return a.script
}

// NewAnthropic serves the script on a port of its own until the test ends.
func NewAnthropic(t testing.TB, turns ...Turn) *Anthropic {
	a := &Anthropic{script: newScript(t, turns)}
	srv := httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

func (a *Anthropic) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Body: body}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		a.record(req)
		writeJSON(w, map[string]any{"input_tokens": len(body) / 4})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		var in struct {
			Model  string            `json:"model"`
			Stream bool              `json:"stream"`
			Tools  []json.RawMessage `json:"tools"`
		}
		_ = json.Unmarshal(body, &in)
		var turn Turn
		if len(in.Tools) > 0 {
			req.Scripted = true
			turn = a.scriptOf(body).next(req)
		} else {
			a.record(req)
			turn = Turn{Text: "Scripted session"}
		}
		if turn.Before != nil {
			turn.Before(req)
		}
		n := len(a.Requests())
		if !in.Stream {
			writeJSON(w, a.message(n, in.Model, turn))
			return
		}
		a.stream(w, n, in.Model, turn)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		a.record(req)
		writeJSON(w, map[string]any{"data": []any{}, "has_more": false, "first_id": nil, "last_id": nil})
	default:
		a.record(req)
		a.t.Logf("anthropic: unexpected %s %s", r.Method, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"type":"error","error":{"type":"not_found_error","message":"not scripted"}}`))
	}
}

func stopReason(turn Turn) string {
	if len(turn.Tools) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func usage() map[string]any {
	return map[string]any{"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
}

// message is the non-streaming answer, for a client that asks for one.
func (a *Anthropic) message(n int, model string, turn Turn) map[string]any {
	var content []any
	if turn.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": turn.Text})
	}
	for i, c := range turn.Tools {
		content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%02d_%d", n, i), "name": c.Name, "input": c.Input})
	}
	return map[string]any{
		"id": fmt.Sprintf("msg_%02d", n), "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": stopReason(turn), "stop_sequence": nil, "usage": usage(),
	}
}

// stream answers as the API streams: message_start, one content block per
// text or tool call (tool input as input_json_delta), message_delta with the
// stop reason, message_stop.
func (a *Anthropic) stream(w http.ResponseWriter, n int, model string, turn Turn) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_%02d", n), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage(),
	}})
	index := 0
	if turn.Text != "" {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}})
		sse(w, "ping", map[string]any{"type": "ping"})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "text_delta", "text": turn.Text}})
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for i, c := range turn.Tools {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%02d_%d", n, i), "name": c.Name, "input": map[string]any{}}})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": inputJSON(c.Input)}})
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stopReason(turn), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 10}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}
