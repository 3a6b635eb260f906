package watch_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
	"github.com/tack-dev/tack/internal/watch"
)

// procStart is a process's start time as Claude Code writes it into its
// registry: the starttime field (22) of /proc/<pid>/stat.
func procStart(t *testing.T, pid int) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		t.Skip("no /proc here: procStart is Linux's")
	}
	s := string(raw)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[19]
}

// TestWatchRegistryGone: a real process registered in a Claude Code
// registry, killed with SIGKILL (no SessionEnd), has its session ended with
// reason gone within 10 s; so does an entry whose pid now belongs to
// another process (its start time differs); a live agent's session is
// left as it is.
func TestWatchRegistryGone(t *testing.T) {
	t.Parallel()
	client := serve(t, api.New(storetest.SQLite(t, projection.Config{}), api.Options{}).Handler())
	ctx := context.Background()
	reg := t.TempDir()
	open := func(sid string) string {
		t.Helper()
		if _, err := client.Call(ctx, http.MethodPost, "/hooks/claude-code", map[string]any{"session_id": sid, "hook_event_name": "UserPromptSubmit", "prompt_id": "p1", "prompt": "Work on " + sid}, nil); err != nil {
			t.Fatal(err)
		}
		var s struct{ ID string }
		if err := client.Do(ctx, http.MethodPost, "/sessions", map[string]string{"externalKey": "claude-code:" + sid}, &s); err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	register := func(pid int, sid, start string) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"pid": pid, "sessionId": sid, "cwd": "/work/app", "startedAt": time.Now().UnixMilli(),
			"procStart": start, "kind": "interactive", "status": "busy", "statusUpdatedAt": time.Now().UnixMilli()})
		if err := os.WriteFile(filepath.Join(reg, strconv.Itoa(pid)+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	agent := exec.Command("sleep", "300")
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agent.Process.Kill(); _ = agent.Wait() })
	killed, reused, live := open("killed"), open("reused"), open("live")
	register(agent.Process.Pid, "killed", procStart(t, agent.Process.Pid))
	me := os.Getpid()
	register(me, "live", procStart(t, me))
	// The pid of this test, but another start: the agent that had it is gone.
	other := filepath.Join(reg, "x")
	b, _ := json.Marshal(map[string]any{"pid": me, "sessionId": "reused", "procStart": "1", "status": "idle"})
	if err := os.WriteFile(other+".json", b, 0o644); err != nil {
		t.Fatal(err)
	}

	var log storetest.LogBuffer
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = watch.Run(wctx, watch.Options{Client: client, Dirs: []string{t.TempDir()}, Poll: 100 * time.Millisecond, Log: &log, Registry: reg})
	}()
	t.Cleanup(func() { cancel(); <-done })

	state := func(id string) (string, string) {
		var s struct{ State string }
		if err := client.Do(ctx, http.MethodGet, "/sessions/"+id, nil, &s); err != nil {
			t.Fatal(err)
		}
		evs := stored(t, client, id)
		var d struct{ Reason string }
		if last := evs[len(evs)-1]; last.Type == projection.TypeSessionEnd {
			_ = json.Unmarshal(last.Data, &d)
		}
		return s.State, d.Reason
	}
	ended := func(id string) func() bool {
		return func() bool { st, why := state(id); return st == projection.StateEnded && why == watch.ReasonGone }
	}
	eventually.True(t, 10*time.Second, "the reused pid's session ended (gone)", ended(reused), log.String)
	if st, _ := state(killed); st == projection.StateEnded {
		t.Fatal("a running agent's session ended")
	}
	if err := agent.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	// Not reaped yet: a zombie runs no more.
	eventually.True(t, 10*time.Second, "the killed agent's session ended (gone)", ended(killed), log.String)
	t.Logf("ended %v after SIGKILL", time.Since(killedAt))
	if st, _ := state(live); st == projection.StateEnded {
		t.Errorf("the live agent's session ended:\n%s", log.String())
	}
	if n := len(stored(t, client, killed)); n != 3 {
		t.Errorf("killed session holds %d events, want 3 (turn/start, message/user, session/end): ended twice?", n)
	}
	if c := strings.Count(log.String(), "is gone; ended (gone)"); c != 2 {
		t.Errorf("%d sessions said ended, want 2:\n%s", c, log.String())
	}
}

// TestWatchRegistryStatus: a running agent's registry status decides its
// session's state: busy is working though its turn is quiet past
// idle-after; an event newer than the status decides again; idle is idle
// with the turn still open. Only changes are told: a status rewritten
// unchanged, or waiting (the hooks' to tell), is not.
func TestWatchRegistryStatus(t *testing.T) {
	t.Parallel()
	h := api.New(storetest.SQLite(t, projection.Config{}), api.Options{}).Handler()
	var told atomic.Int64
	client := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/agent-status") {
			told.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	ctx := context.Background()
	var s struct{ ID string }
	if err := client.Do(ctx, http.MethodPost, "/sessions", map[string]string{"externalKey": "claude-code:flips"}, &s); err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-10 * time.Minute).UTC().Format(time.RFC3339Nano)
	if err := client.Do(ctx, http.MethodPost, "/sessions/"+s.ID+"/events", map[string]any{"events": []any{
		map[string]any{"type": projection.TypeTurnStart, "data": map[string]any{}, "at": long},
		map[string]any{"type": projection.TypeMessageUser, "data": map[string]string{"text": "Work on it"}, "at": long},
	}}, nil); err != nil {
		t.Fatal(err)
	}
	state := func() string {
		var got struct{ State string }
		if err := client.Do(ctx, http.MethodGet, "/sessions/"+s.ID, nil, &got); err != nil {
			t.Fatal(err)
		}
		return got.State
	}
	if st := state(); st != projection.StateIdle {
		t.Fatalf("a turn quiet for 10 minutes reads %s, want idle", st)
	}

	agent := exec.Command("sleep", "300")
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agent.Process.Kill(); _ = agent.Wait() })
	reg := t.TempDir()
	pid := agent.Process.Pid
	start := procStart(t, pid)
	register := func(status string, at time.Time) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"pid": pid, "sessionId": "flips", "cwd": "/work/app", "procStart": start,
			"kind": "interactive", "status": status, "statusUpdatedAt": at.UnixMilli()})
		// Written whole, then renamed in, as an agent would not leave it half written.
		tmp := filepath.Join(reg, ".tmp")
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(reg, strconv.Itoa(pid)+".json")); err != nil {
			t.Fatal(err)
		}
	}
	register("busy", time.Now().Add(-time.Minute))

	var log storetest.LogBuffer
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = watch.Run(wctx, watch.Options{Client: client, Dirs: []string{t.TempDir()}, Poll: 100 * time.Millisecond, Log: &log, Registry: reg})
	}()
	t.Cleanup(func() { cancel(); <-done })
	is := func(want string) func() bool { return func() bool { return state() == want } }

	eventually.True(t, 10*time.Second, "working while the registry says busy", is(projection.StateWorking), log.String)
	// A newer event: the log decides (a turn open and lively: working).
	if err := client.Do(ctx, http.MethodPost, "/sessions/"+s.ID+"/events", map[string]any{"events": []any{
		map[string]any{"type": projection.TypeMessageAssistant, "data": map[string]string{"text": "On it"}},
	}}, nil); err != nil {
		t.Fatal(err)
	}
	if st := state(); st != projection.StateWorking {
		t.Fatalf("after a newer event: %s", st)
	}
	register("idle", time.Now())
	eventually.True(t, 10*time.Second, "idle while the registry says idle, the turn open", is(projection.StateIdle), log.String)
	register("idle", time.Now())
	register("waiting", time.Now())
	register("busy", time.Now())
	eventually.True(t, 10*time.Second, "working again when busy", is(projection.StateWorking), log.String)
	if n := told.Load(); n != 3 {
		t.Errorf("told Tack %d statuses, want 3 (busy, idle, busy):\n%s", n, log.String())
	}
	if st := state(); st == projection.StateEnded || strings.Contains(log.String(), "cannot") {
		t.Errorf("state %s; log:\n%s", st, log.String())
	}
}
