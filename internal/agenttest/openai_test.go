package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// compactionPrompt is how codex's own compaction request starts; it is no
// turn of the script, and a model that does not answer it with a summary
// makes codex compact again and again.
const compactionPrompt = "CONTEXT CHECKPOINT COMPACTION"

// Responses is a scripted OpenAI Responses API, as codex calls it:
// streaming POST /v1/responses. Each request gets the script's next turn,
// except codex's compaction request, which gets a summary.
type Responses struct {
	*script
	URL string // the provider's base_url, with /v1
}

// NewResponses serves the script on a port of its own until the test ends.
func NewResponses(t testing.TB, turns ...Turn) *Responses {
	o := &Responses{script: newScript(t, turns)}
	srv := httptest.NewServer(http.HandlerFunc(o.serve))
	t.Cleanup(srv.Close)
	o.URL = srv.URL + "/v1"
	return o
}

func (o *Responses) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Body: body}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses/compact":
		o.record(req)
		writeJSON(w, map[string]any{"output": []any{messageItem("msg_compact", "Summary: the scripted session so far.")}})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		var turn Turn
		if strings.Contains(string(body), compactionPrompt) {
			o.record(req)
			turn = Turn{Text: "Summary: the scripted session so far."}
		} else {
			req.Scripted = true
			turn = o.next(req)
		}
		if turn.Before != nil {
			turn.Before(req)
		}
		o.stream(w, len(o.Requests()), turn)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/models"):
		o.record(req)
		writeJSON(w, map[string]any{"object": "list", "data": []any{}, "models": []any{}})
	default:
		o.record(req)
		o.t.Logf("responses: unexpected %s %s", r.Method, r.URL.Path)
		http.Error(w, `{"error":{"message":"not scripted","type":"invalid_request_error"}}`, http.StatusNotFound)
	}
}

func messageItem(id, text string) map[string]any {
	return map[string]any{"type": "message", "id": id, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}

// stream answers as the API streams: response.created, then per output
// item response.output_item.added, its deltas and response.output_item.done,
// then response.completed.
func (o *Responses) stream(w http.ResponseWriter, n int, turn Turn) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	id := fmt.Sprintf("resp_%02d", n)
	seq := 0
	send := func(event string, data map[string]any) {
		data["type"] = event
		data["sequence_number"] = seq
		seq++
		sse(w, event, data)
	}
	send("response.created", map[string]any{"response": map[string]any{"id": id, "object": "response", "status": "in_progress", "output": []any{}}})
	var output []any
	index := 0
	if turn.Text != "" {
		itemID := fmt.Sprintf("msg_%02d", n)
		added := messageItem(itemID, "")
		added["status"] = "in_progress"
		added["content"] = []any{}
		send("response.output_item.added", map[string]any{"output_index": index, "item": added})
		send("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": index, "content_index": 0, "delta": turn.Text})
		done := messageItem(itemID, turn.Text)
		send("response.output_item.done", map[string]any{"output_index": index, "item": done})
		output = append(output, done)
		index++
	}
	for i, c := range turn.Tools {
		args := inputJSON(c.Input)
		item := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%02d_%d", n, i),
			"call_id": fmt.Sprintf("call_%02d_%d", n, i), "name": c.Name, "status": "in_progress", "arguments": ""}
		if c.Namespace != "" {
			item["namespace"] = c.Namespace
		}
		send("response.output_item.added", map[string]any{"output_index": index, "item": item})
		send("response.function_call_arguments.delta", map[string]any{"item_id": item["id"], "output_index": index, "delta": args})
		done := map[string]any{}
		for k, v := range item {
			done[k] = v
		}
		done["arguments"], done["status"] = args, "completed"
		send("response.output_item.done", map[string]any{"output_index": index, "item": done})
		output = append(output, done)
		index++
	}
	tokens := turn.Tokens
	if tokens == 0 {
		tokens = 100
	}
	send("response.completed", map[string]any{"response": map[string]any{
		"id": id, "object": "response", "status": "completed", "output": output,
		"usage": map[string]any{"input_tokens": tokens, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 10, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": tokens + 10},
	}})
}

// decode is the request body as JSON, for a test to look into.
func (r Request) decode(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("request %s %s: %v", r.Method, r.Path, err)
	}
	return m
}
