package hook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/hook"
	"github.com/tack-dev/tack/internal/hook/front"
	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
	"github.com/tack-dev/tack/internal/transcript"
)

func payload(sid, event string) string {
	b, _ := json.Marshal(map[string]any{"session_id": sid, "hook_event_name": event, "cwd": "/w", "prompt_id": "p1", "prompt": "Go",
		"tool_name": "Bash", "tool_use_id": "tu-" + sid, "tool_input": map[string]any{"command": "ls"}})
	return string(b)
}

// TestSend: a hook reaches a real Tack, with the plan mode, and hands
// back its answer; when Tack is down, slow or refuses, nothing, and
// quickly.
func TestSend(t *testing.T) {
	t.Parallel()
	tack := api.New(storetest.SQLite(t, projection.Config{}), api.Options{}).Handler()
	plans := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case plans <- r.URL.Query().Get("plan"):
		default:
		}
		tack.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	c := hook.Client{Server: srv.URL, Plan: "always"}
	if got := hook.Send(ctx, c, "claude-code", strings.NewReader(payload("s1", "UserPromptSubmit")), time.Second); strings.TrimSpace(string(got)) != "{}" {
		t.Errorf("answer %q, want {}", got)
	}
	if got := <-plans; got != "always" {
		t.Errorf("plan %q reached the server, want always", got)
	}
	c.Plan = ""

	// Refused: a bad payload, a token the server does not know.
	if got := hook.Send(ctx, c, "claude-code", strings.NewReader(`{`), time.Second); got != nil {
		t.Errorf("bad payload answered %q", got)
	}
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{}}`, http.StatusInternalServerError)
	}))
	t.Cleanup(refusing.Close)
	if got := hook.Send(ctx, hook.Client{Server: refusing.URL}, "claude-code", strings.NewReader(payload("s1", "Stop")), time.Second); got != nil {
		t.Errorf("a 500 answered %q", got)
	}

	// Down: nobody listens.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	if got := hook.Send(ctx, hook.Client{Server: down}, "claude-code", strings.NewReader(payload("s1", "Stop")), time.Second); got != nil {
		t.Errorf("down answered %q", got)
	}

	// Slow: past the timeout, nothing, at the timeout.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(time.Second):
		case <-r.Context().Done():
		}
		w.Write([]byte(`{"hookSpecificOutput":{}}`))
	}))
	t.Cleanup(slow.Close)
	start := time.Now()
	if got := hook.Send(ctx, hook.Client{Server: slow.URL}, "claude-code", strings.NewReader(payload("s1", "Stop")), 100*time.Millisecond); got != nil {
		t.Errorf("slow answered %q", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("a slow server held the hook %s", d)
	}
}

// BenchmarkHookRoundTrip is a local hook's round trip, the way `tack
// hook` makes it: the payload to a real server on loopback (SQLite, the
// default store) and its answer back. It reports the p99.
func BenchmarkHookRoundTrip(b *testing.B) {
	srv := httptest.NewServer(api.New(storetest.SQLite(b, projection.Config{}), api.Options{}).Handler())
	b.Cleanup(srv.Close)
	c := hook.Client{Server: srv.URL}
	ctx := context.Background()
	if got := hook.Send(ctx, c, "claude-code", strings.NewReader(payload("bench", "UserPromptSubmit")), time.Second); got == nil {
		b.Fatal("no answer")
	}
	events := []string{"PreToolUse", "PostToolUse"}
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		var p map[string]any
		_ = json.Unmarshal([]byte(payload("bench", events[i%2])), &p)
		p["tool_use_id"] = "tu" + string(rune('a'+i%26)) + strings.Repeat("x", i/26%50) + time.Now().Format("150405.000000000")
		raw, _ := json.Marshal(p)
		start := time.Now()
		if got := hook.Send(ctx, c, "claude-code", strings.NewReader(string(raw)), time.Second); got == nil {
			b.Fatal("no answer")
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(times)
	if len(times) > 0 {
		b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	}
}

// hiddenAppend is a ResponseWriter that drops the server's Tack-Append
// from its answers: an older server's, which does not take lines in a
// hook's request.
type hiddenAppend struct{ http.ResponseWriter }

func (h hiddenAppend) WriteHeader(code int) {
	h.Header().Del(transcript.AppendHeader)
	h.ResponseWriter.WriteHeader(code)
}

func (h hiddenAppend) Write(b []byte) (int, error) {
	h.Header().Del(transcript.AppendHeader)
	return h.ResponseWriter.Write(b)
}

// TestSendLinesInHook: the transcript's lines go in the hook's own
// request once the server has said it takes them, and apart before that
// or from a server that does not say so; lines the server refuses there
// are sent again apart and the hook after them. However they travel, the
// live session reads as an import of the same transcript.
func TestSendLinesInHook(t *testing.T) {
	t.Parallel()
	// The hook syncs its transcript itself: a server that reads it is
	// TestServerReadsTranscripts'.
	tack := api.New(storetest.SQLite(t, projection.Config{}), api.Options{NoTranscriptReads: true}).Handler()
	const (
		pass = iota
		older
		refuse
	)
	var mode, apart, within, refused atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(transcript.AppendHeader) != "" {
			within.Add(1)
			if mode.Load() == refuse && refused.Add(1) == 1 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusConflict)
				w.Write([]byte(`{"error":{"code":"conflict","message":"events[0]: refused by the test"}}`))
				return
			}
		}
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/events") {
			apart.Add(1)
		}
		if mode.Load() == older {
			w = hiddenAppend{w}
		}
		tack.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	path := filepath.Join(dir, "li.jsonl")
	c := hook.Client{Server: srv.URL, StateDir: filepath.Join(dir, "states")}
	send := func(event string, fields map[string]any) { sendHook(t, c, "li", path, event, fields) }
	line := func(typ, uuid, prompt, message string) string {
		return transcriptLine("li", typ, uuid, prompt, message)
	}
	round := func(i int) {
		p := fmt.Sprintf("p%d", i)
		prompt, closing := fmt.Sprintf("Prompt %d", i), fmt.Sprintf("Done %d.", i)
		send("UserPromptSubmit", map[string]any{"prompt_id": p, "prompt": prompt})
		appendTo(t, path, line("user", p+"u", p, fmt.Sprintf(`{"role":"user","content":%q}`, prompt)),
			line("assistant", p+"a", p, fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":%q}],"stop_reason":"end_turn"}`, closing)))
		send("Stop", map[string]any{"prompt_id": p, "stop_hook_active": false, "last_assistant_message": closing})
	}
	// An older server: every batch apart.
	mode.Store(older)
	round(1)
	round(2)
	if a, w := apart.Load(), within.Load(); a != 2 || w != 0 {
		t.Errorf("an older server: lines sent apart %d times and within a hook %d times, want 2 and 0", a, w)
	}
	// This server: within from the hook after its first answer (the
	// UserPromptSubmit's, which has no new lines) on.
	mode.Store(pass)
	round(3)
	round(4)
	if a, w := apart.Load(), within.Load(); a != 2 || w != 2 {
		t.Errorf("lines sent apart %d times and within a hook %d times, want 2 and 2", a, w)
	}
	// Refused within: sent again apart.
	mode.Store(refuse)
	round(5)
	if a, w, r := apart.Load(), within.Load(), refused.Load(); a != 3 || w != 3 || r != 1 {
		t.Errorf("refused: lines sent apart %d times, within a hook %d times, refused %d times; want 3, 3 and 1", a, w, r)
	}

	checkLiveIsImport(t, srv.URL, path, "li", "Done 5.")
}

// TestServerReadsTranscripts: a hook from the server's own machine and
// user, once a server's answer said it reads the hook's transcripts, sends
// its payload alone and the server syncs the transcript itself; a server
// that does not (another instance, started with reads off) refuses such a
// hook before applying anything, and the hook then syncs the transcript
// itself and stops asking until told again; a server that lost what it
// read (another instance, a restart) reads the file again and matches it
// with Tack's log. However the lines travel, the live session reads as an
// import of the same transcript. The hooks are tack-hook's (Send), then
// tack-hook-local's (front.Run, which hands what it does not cover to
// Send): the same requests reach the server, and the quick path takes
// every hook that asks but the first after each hook that learned the
// server reads.
func TestServerReadsTranscripts(t *testing.T) {
	t.Parallel()
	for _, local := range []bool{false, true} {
		t.Run(map[bool]string{false: "tack-hook", true: "tack-hook-local"}[local], func(t *testing.T) {
			t.Parallel()
			testServerReadsTranscripts(t, local)
		})
	}
}

func testServerReadsTranscripts(t *testing.T, local bool) {
	st := storetest.SQLite(t, projection.Config{})
	reads := api.New(st, api.Options{}).Handler()
	other := api.New(st, api.Options{}).Handler()
	off := api.New(st, api.Options{NoTranscriptReads: true}).Handler()
	var handler atomic.Pointer[http.Handler]
	handler.Store(&reads)
	var asked, refused, carried, apart atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(hook.ReadHeader) == hook.ReadAsk {
			asked.Add(1)
		}
		if r.Header.Get(transcript.AppendHeader) != "" {
			carried.Add(1)
		}
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/events") {
			apart.Add(1)
		}
		rec := httptest.NewRecorder()
		(*handler.Load()).ServeHTTP(rec, r)
		if rec.Header().Get(hook.ReadHeader) == hook.ReadRefused {
			refused.Add(1)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	path := filepath.Join(dir, "rd.jsonl")
	states := filepath.Join(dir, "states")
	c := hook.Client{Server: srv.URL, StateDir: states, Plan: "auto"}
	var fulls int
	send := func(event string, fields map[string]any) { sendHook(t, c, "rd", path, event, fields) }
	if local {
		send = func(event string, fields map[string]any) {
			t.Helper()
			var out bytes.Buffer
			full := func(payload []byte) error {
				fulls++
				out.Write(hook.Send(context.Background(), c, "claude-code", bytes.NewReader(payload), 10*time.Second))
				return nil
			}
			args := []string{"-agent", "claude-code", "-server", srv.URL, "-timeout", "10s"}
			if err := front.Run(args, func(string) string { return "" }, states, bytes.NewReader(hookPayload("rd", path, event, fields)), &out, full); err != nil {
				t.Fatal(err)
			}
			if out.Len() == 0 {
				t.Errorf("%s: no answer", event)
			}
		}
	}
	line := func(typ, uuid, prompt, message string) string {
		return transcriptLine("rd", typ, uuid, prompt, message)
	}
	write := func(lines string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(lines)
		f.Close()
	}
	round := func(i int) {
		p := fmt.Sprintf("p%d", i)
		id := fmt.Sprintf("toolu_%d", i)
		prompt, closing := fmt.Sprintf("Prompt %d", i), fmt.Sprintf("Done %d.", i)
		send("UserPromptSubmit", map[string]any{"prompt_id": p, "prompt": prompt})
		input := map[string]any{"command": "ls"}
		write(line("user", p+"u", p, fmt.Sprintf(`{"role":"user","content":%q}`, prompt)) +
			line("assistant", p+"c", p, fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":%q,"name":"Bash","input":{"command":"ls"}}]}`, id)))
		send("PreToolUse", map[string]any{"prompt_id": p, "tool_name": "Bash", "tool_use_id": id, "tool_input": input})
		write(line("user", p+"r", p, fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"a.go"}]}`, id)))
		send("PostToolUse", map[string]any{"prompt_id": p, "tool_name": "Bash", "tool_use_id": id, "tool_input": input, "tool_response": map[string]any{"stdout": "a.go"}})
		write(line("assistant", p+"a", p, fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":%q}],"stop_reason":"end_turn"}`, closing)))
		send("Stop", map[string]any{"prompt_id": p, "stop_hook_active": false, "last_assistant_message": closing})
	}
	counts := func() string {
		s := fmt.Sprintf("asked %d, refused %d, lines carried %d, sent apart %d", asked.Load(), refused.Load(), carried.Load(), apart.Load())
		if local {
			s += fmt.Sprintf(", handed on %d", fulls)
		}
		return s
	}
	// want is the counts for tack-hook, and for tack-hook-local with the
	// hooks it handed on.
	want := func(s string, handed int) string {
		if local {
			s += fmt.Sprintf(", handed on %d", handed)
		}
		return s
	}
	// The first hook syncs itself (the transcript is not there yet) and
	// is told; the rest ask, and send no lines.
	round(1)
	round(2)
	if got, want := counts(), want("asked 7, refused 0, lines carried 0, sent apart 0", 1); got != want {
		t.Errorf("a server that reads: %s; want %s", got, want)
	}
	// Another instance, which never read the file: it reads it whole and
	// matches it with the log.
	handler.Store(&other)
	round(3)
	if got, want := counts(), want("asked 11, refused 0, lines carried 0, sent apart 0", 1); got != want {
		t.Errorf("another instance: %s; want %s", got, want)
	}
	// One that does not read: the first hook is refused and syncs itself
	// (the whole file, matched with the log: nothing is new), and the
	// rest carry their lines and do not ask.
	handler.Store(&off)
	round(4)
	if got, want := counts(), want("asked 12, refused 1, lines carried 3, sent apart 0", 5); got != want {
		t.Errorf("a server that does not read: %s; want %s", got, want)
	}
	// Back to one that reads: told again at the first hook, which has no
	// new lines.
	handler.Store(&reads)
	round(5)
	if got, want := counts(), want("asked 15, refused 1, lines carried 3, sent apart 0", 6); got != want {
		t.Errorf("reading again: %s; want %s", got, want)
	}

	checkLiveIsImport(t, srv.URL, path, "rd", "Done 5.")
}

// TestServerReadsParallelHooks: the calls of one assistant message run at
// once, so their hooks come together, while the agent is still writing the
// message's lines; a server that reads the transcript for all of them
// stores each line once and in the file's order, and the live session
// reads as an import of the transcript, in every round's interleaving.
// So do hooks that sync the transcript themselves (a server that does not
// read it), each going on without its call's line (TestSendEarly).
func TestServerReadsParallelHooks(t *testing.T) {
	t.Parallel()
	for _, reads := range []bool{true, false} {
		t.Run(fmt.Sprintf("reads=%v", reads), func(t *testing.T) {
			t.Parallel()
			testParallelHooks(t, api.Options{NoTranscriptReads: !reads})
		})
	}
}

func testParallelHooks(t *testing.T, opts api.Options) {
	srv := httptest.NewServer(api.New(storetest.SQLite(t, projection.Config{}), opts).Handler())
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	path := filepath.Join(dir, "pa.jsonl")
	c := hook.Client{Server: srv.URL, StateDir: filepath.Join(dir, "states")}
	write := func(lines ...string) { appendTo(t, path, lines...) }
	n := 0
	line := func(typ, prompt, message string) string {
		n++
		return fmt.Sprintf(`{"type":%q,"sessionId":"pa","uuid":"u%03d","promptId":%q,"cwd":"/w","timestamp":"2026-01-02T10:%02d:%02dZ","message":%s}`+"\n", typ, n, prompt, n/60%60, n%60, message)
	}
	send := func(event string, fields map[string]any) { sendHook(t, c, "pa", path, event, fields) }
	rng := rand.New(rand.NewPCG(7, 31))
	for round := range 6 {
		p := fmt.Sprintf("p%d", round)
		send("UserPromptSubmit", map[string]any{"prompt_id": p, "prompt": "Round " + p})
		write(line("user", p, fmt.Sprintf(`{"role":"user","content":%q}`, "Round "+p)))
		type call struct{ id, tool, call, result string }
		var calls []call
		for i := range 2 + rng.IntN(3) {
			id := fmt.Sprintf("tu_%d_%d", round, i)
			input, tool := `{"command":"ls"}`, "Bash"
			if i == 0 {
				input, tool = fmt.Sprintf(`{"todos":[{"content":"Round %d","status":"in_progress","activeForm":"Doing round %d"}]}`, round, round), "TodoWrite"
			}
			calls = append(calls, call{id: id, tool: tool,
				call:   line("assistant", p, fmt.Sprintf(`{"id":"msg_%d","role":"assistant","content":[{"type":"tool_use","id":%q,"name":%q,"input":%s}]}`, round, id, tool, input)),
				result: line("user", p, fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"ok"}]}`, id))})
		}
		// The message's lines come in random pieces while its calls'
		// hooks run, each call's result before its PostToolUse.
		var wg sync.WaitGroup
		wg.Go(func() {
			lines := make([]string, len(calls))
			for i, cl := range calls {
				lines[i] = cl.call
			}
			for len(lines) > 0 {
				k := 1 + rng.IntN(len(lines))
				write(lines[:k]...)
				lines = lines[k:]
			}
		})
		for _, cl := range calls {
			wg.Go(func() {
				fields := map[string]any{"prompt_id": p, "tool_name": cl.tool, "tool_use_id": cl.id, "tool_input": map[string]any{}}
				send("PreToolUse", fields)
			})
		}
		wg.Wait()
		for _, cl := range calls {
			wg.Go(func() {
				write(cl.result)
				send("PostToolUse", map[string]any{"prompt_id": p, "tool_name": cl.tool, "tool_use_id": cl.id, "tool_input": map[string]any{}, "tool_response": map[string]any{"stdout": "ok"}})
			})
		}
		wg.Wait()
		closing := "Done " + p + "."
		write(line("assistant", p, fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":%q}],"stop_reason":"end_turn"}`, closing)))
		send("Stop", map[string]any{"prompt_id": p, "stop_hook_active": false, "last_assistant_message": closing})
	}

	checkLiveIsImport(t, srv.URL, path, "pa", "Done p5.")
}

// checkLiveIsImport requires the session the hooks made live of the
// transcript at path (session sid) to read exactly as an import of the
// same transcript into a session of its own, every page of its log (a
// person's edits of the list, which no transcript holds, aside), and to
// hold last.
func checkLiveIsImport(t *testing.T, server, path, sid, last string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	oracle := filepath.Join(t.TempDir(), "oracle.jsonl")
	if err := os.WriteFile(oracle, bytes.ReplaceAll(raw, []byte(`"sessionId":"`+sid+`"`), []byte(`"sessionId":"oracle"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	ic := &importer.Client{Server: server}
	var out bytes.Buffer
	if err := importer.Import(context.Background(), ic, []string{oracle}, &out); err != nil {
		t.Fatalf("import: %v\n%s", err, out.String())
	}
	shape := func(key string) string {
		s, err := ic.OpenSession(context.Background(), importer.NewSession{ExternalKey: key})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for after := int64(0); ; {
			evs, more, err := ic.Events(context.Background(), s.ID, after)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				after = ev.Seq
				if ev.Type == projection.TypeTodoEdit {
					continue // a person's, in Tack alone
				}
				got = append(got, fmt.Sprintf("%d %s %s", ev.Turn, ev.Type, ev.Data))
			}
			if !more {
				return strings.Join(got, "\n")
			}
		}
	}
	live, imported := shape("claude-code:"+sid), shape("claude-code:oracle")
	if live != imported || !strings.Contains(live, last) {
		t.Errorf("live log\n%s\nimport\n%s", live, imported)
	}
}

// sendHook sends, as `tack hook` does through c, Claude Code's hook event
// of session sid, whose transcript is at path, with fields; a hook that
// gets no answer fails the test (from any goroutine).
func sendHook(t *testing.T, c hook.Client, sid, path, event string, fields map[string]any) {
	t.Helper()
	raw := hookPayload(sid, path, event, fields)
	if got := hook.Send(context.Background(), c, "claude-code", bytes.NewReader(raw), 10*time.Second); got == nil {
		t.Errorf("%s: no answer", event)
	}
}

// hookPayload is Claude Code's payload of a hook of session sid, its
// transcript at path.
func hookPayload(sid, path, event string, fields map[string]any) []byte {
	body := map[string]any{"session_id": sid, "hook_event_name": event, "cwd": "/w", "transcript_path": path}
	for k, v := range fields {
		body[k] = v
	}
	raw, _ := json.Marshal(body)
	return raw
}

// appendTo appends lines (each ending in its newline) to the transcript
// at path in one write, as an agent writes them; from any goroutine.
func appendTo(t testing.TB, path string, lines ...string) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "")); err != nil {
		t.Error(err)
	}
}

// transcriptLine is a line of Claude Code's transcript of session sid.
func transcriptLine(sid, typ, uuid, prompt, message string) string {
	return fmt.Sprintf(`{"type":%q,"sessionId":%q,"uuid":%q,"promptId":%q,"cwd":"/w","timestamp":"2026-01-02T10:00:%02dZ","message":%s}`+"\n", typ, sid, uuid, prompt, len(uuid)%60, message)
}
