package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tack-dev/tack/internal/procstat"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/transcript"
)

// DefaultRegistry is the live-session registry of the current user: the
// folder of the agent that keeps one (transcript.Agent.Live), Claude
// Code's ~/.claude/sessions (or $CLAUDE_CONFIG_DIR/sessions), where each
// interactive session keeps <pid>.json while its process runs; "" when no
// agent keeps one.
func DefaultRegistry(env func(string) string) (string, error) {
	a := liveAgent()
	if a == nil {
		return "", nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(a.Home(env, home), a.Live), nil
}

// liveAgent is the agent whose live-session registry Options.Registry is:
// the first by name that keeps one, nil when none does.
func liveAgent() *transcript.Agent {
	for _, a := range transcript.Agents() {
		if a.Live != "" {
			return a
		}
	}
	return nil
}

// ReasonGone is the reason of the session/end the watcher appends for a
// session whose agent's process is gone without ending it.
const ReasonGone = "gone"

// liveEntry is what Tack reads of a registry file: the agent's process
// (pid, and procStart, its start time as the agent read it: on Linux the
// starttime field of /proc/<pid>/stat, clock ticks since boot, so that a
// reused pid is told from the agent's), the agent's session, and what the
// agent is doing (status: busy, shell, idle or waiting) since when
// (statusUpdatedAt, milliseconds since the epoch).
type liveEntry struct {
	PID             int     `json:"pid"`
	SessionID       string  `json:"sessionId"`
	ProcStart       string  `json:"procStart"`
	Status          string  `json:"status"`
	StatusUpdatedAt float64 `json:"statusUpdatedAt"`
}

// registry follows the live-session registry: every poll it reads the
// entries, tells Tack the status of each running agent when it changed
// (agentStatus), and ends in Tack (reason gone) the session of each whose
// process is no longer the agent's: dead, a zombie, or a pid another
// process took since; an entry removed (a normal exit) is checked until
// its process is gone, when SessionEnd has said so already or it ends it.
type registry struct {
	dir string
	// agent is the agent whose registry it is: its entries' sessionId is
	// the agent's session id.
	agent transcript.Format
	// known are the entries seen, by file name, until their session ends;
	// done those ended whose file is still there (a process killed leaves
	// it), so that it is not read as new.
	known, done map[string]liveEntry
	// sent is the status last told Tack of each agent's session, by the
	// agent's session id, until the session ends.
	sent map[string]string
	// failed is the last error said of each file, said once.
	failed map[string]string
}

// newRegistry follows the registry in dir.
func newRegistry(dir string) *registry {
	var agent transcript.Format
	if a := liveAgent(); a != nil {
		agent = a.Name
	}
	return &registry{dir: dir, agent: agent, known: map[string]liveEntry{}, done: map[string]liveEntry{}, sent: map[string]string{}, failed: map[string]string{}}
}

// checkRegistry reads the registry and ends the sessions whose agent is gone.
func (w *watcher) checkRegistry(ctx context.Context) {
	r := w.registry
	if r == nil {
		return
	}
	entries, err := os.ReadDir(r.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		w.fail(r.dir, err)
	}
	present := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".json") {
			continue
		}
		present[name] = true
		raw, err := os.ReadFile(filepath.Join(r.dir, name))
		if err != nil {
			continue // removed as it was read: the next poll says
		}
		var le liveEntry
		if json.Unmarshal(raw, &le) != nil || le.SessionID == "" {
			continue // being written, or not a session's
		}
		if le.PID == 0 {
			le.PID, _ = strconv.Atoi(strings.TrimSuffix(name, ".json"))
		}
		if d, ok := r.done[name]; ok && d == le {
			continue
		}
		delete(r.done, name)
		r.known[name] = le
	}
	for name, le := range r.known {
		if procAlive(le.PID, le.ProcStart) {
			if err := w.tellStatus(ctx, le); err != nil {
				w.say(name, fmt.Sprintf("%s:%s: cannot tell its status: %v", r.agent, le.SessionID, err))
			} else {
				delete(r.failed, name)
			}
			continue
		}
		if err := w.endGone(ctx, le); err != nil {
			w.say(name, fmt.Sprintf("%s:%s: cannot end it: %v", r.agent, le.SessionID, err))
			continue
		}
		delete(r.known, name)
		delete(r.failed, name)
		delete(r.sent, le.SessionID)
		if present[name] {
			r.done[name] = le
		}
	}
	for name := range r.done {
		if !present[name] {
			delete(r.done, name)
		}
	}
}

// say logs msg of registry file name, unless it was the last said of it.
func (w *watcher) say(name, msg string) {
	if r := w.registry; r.failed[name] != msg {
		r.failed[name] = msg
		fmt.Fprintf(w.opts.Log, "tack watch: %s\n", msg)
	}
}

// agentStatus is the status Tack keeps of a registry's: busy while the
// agent runs a turn or a shell command, idle while it waits for a prompt;
// "" for waiting (on its person: the hooks tell it, with what for) and any
// other.
func agentStatus(registry string) string {
	switch registry {
	case "busy", "shell":
		return projection.AgentBusy
	case "idle":
		return projection.AgentIdle
	}
	return ""
}

// tellStatus tells Tack the status of a running agent's session
// (PUT /sessions/{id}/agent-status), since when its registry says, when it
// is not the one last told.
func (w *watcher) tellStatus(ctx context.Context, le liveEntry) error {
	status := agentStatus(le.Status)
	if status == "" || w.registry.sent[le.SessionID] == status {
		return nil
	}
	id, _, _, err := w.registrySession(ctx, le)
	if err != nil {
		return err
	}
	body := map[string]string{"status": status}
	if le.StatusUpdatedAt > 0 {
		body["at"] = time.UnixMilli(int64(le.StatusUpdatedAt)).UTC().Format(projection.TimeFormat)
	}
	if err := w.opts.Client.Do(ctx, http.MethodPut, "/sessions/"+id+"/agent-status", body, nil); err != nil {
		return err
	}
	w.registry.sent[le.SessionID] = status
	return nil
}

// registrySession finds the Tack session of a registry entry, and its
// state; one Tack had not heard of is made (made: it is never listed
// while empty).
func (w *watcher) registrySession(ctx context.Context, le liveEntry) (id, state string, made bool, err error) {
	var s struct {
		ID    string `json:"id"`
		State string `json:"state"`
	}
	key := transcript.Hook{SessionID: le.SessionID}.SessionKey(w.registry.agent)
	status, err := w.opts.Client.Call(ctx, http.MethodPost, "/sessions", map[string]string{"externalKey": key}, &s)
	return s.ID, s.State, status != http.StatusOK, err
}

// endGone appends session/end {"reason": "gone"} to the Tack session of a
// registry entry, unless Tack has no such session yet (nothing to end) or
// it is ended already (SessionEnd came).
func (w *watcher) endGone(ctx context.Context, le liveEntry) error {
	if le.SessionID == "" {
		return nil
	}
	c := w.opts.Client
	id, state, made, err := w.registrySession(ctx, le)
	if err != nil || made || state == projection.StateEnded {
		return err // made: Tack had not heard of it; the empty session it made is never listed
	}
	body := map[string]any{"events": []map[string]any{{"type": projection.TypeSessionEnd, "data": map[string]string{"reason": ReasonGone}}}}
	if err := c.Do(ctx, http.MethodPost, "/sessions/"+id+"/events", body, nil); err != nil {
		return err
	}
	fmt.Fprintf(w.opts.Log, "tack watch: %s: the agent's process %d is gone; ended (gone)\n", c.URL(id), le.PID)
	return nil
}

// procAlive reports whether process pid runs and is the one that started
// at procStart ("" when unknown): on Linux from /proc/<pid>/stat (a zombie
// is gone: it runs no more), elsewhere by signal 0 alone.
func procAlive(pid int, procStart string) bool {
	if pid <= 0 {
		return false
	}
	if f, err := procstat.Read(pid); err == nil {
		// Field 3 is the state, field 22 the start time.
		if st := f.Field(3); f.Field(22) == "" || st == "Z" || st == "X" {
			return false
		}
		return procStart == "" || f.Field(22) == procStart
	}
	if _, serr := os.Stat("/proc/self/stat"); serr == nil {
		return false // /proc is there, the process is not
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
