package agenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/eventually"
)

// The oracle: a session watched live (hooks and `tack watch` together,
// with restarts) must end up as `tack import` of its transcript into an
// empty Tack makes it. Each test runs a real agent with both live routes
// on, then imports the transcript files the agent left into a second,
// empty Tack and holds the two sessions to each other: title, turns, every
// message, tool result and list write in order (each with its turn), the
// final list with its ids, the state and how the session ended, and the
// children with theirs. A difference is printed as "what: live X, import
// Y", every one of them, so that one run tells all that is wrong.

// A watch is `tack watch` as a user runs it beside Tack: the agents'
// default folders under the user's home, into the live Tack.
type watch struct {
	*daemon
	u    user
	k    *tack
	runs int
}

// startWatch starts tack watch and waits until it follows its folders,
// which need not exist yet.
func (k *tack) startWatch(t *testing.T, u user) *watch {
	t.Helper()
	w := &watch{u: u, k: k}
	w.start(t)
	return w
}

func (w *watch) start(t *testing.T) {
	t.Helper()
	w.runs++
	args := []string{"watch", "-server", w.k.URL, "-poll", "100ms"}
	if w.k.Token != "" {
		args = append(args, "-token", w.k.Token)
	}
	w.daemon = startDaemon(t, fmt.Sprintf("tack watch (run %d)", w.runs), w.u.env("CODEX_HOME="+w.u.CodexHome), nil, binary(t, "tack"), args...)
	d := w.daemon
	eventually.True(t, 10*time.Second, "start of tack watch", func() bool { return strings.Contains(d.Log(), "tack watch: following") }, d.Log)
}

// Restart stops the watcher and starts it again, as a person does
// mid-session.
func (w *watch) Restart(t *testing.T) {
	t.Helper()
	w.Stop()
	w.start(t)
}

// Followed reports whether the watcher (its latest run) follows path.
func (w *watch) Followed(path string) bool {
	return strings.Contains(w.Log(), path+": following into")
}

// sessionByKey is the session Tack holds under the agent's key
// ("claude-code:<session id>", "codex:<thread id>").
func (k *tack) sessionByKey(t *testing.T, key string) (session, bool) {
	t.Helper()
	for _, s := range k.sessions(t, "") {
		if s.ExternalKey == key {
			return s, true
		}
	}
	return session{}, false
}

// sessions lists every session, or the children of parent.
func (k *tack) sessions(t *testing.T, parent string) []session {
	t.Helper()
	path := "/sessions?limit=200"
	if parent != "" {
		path += "&parent=" + url.QueryEscape(parent)
	}
	var list struct {
		Sessions []session `json:"sessions"`
	}
	k.do(t, http.MethodGet, path, nil, &list)
	return list.Sessions
}

// importFiles runs `tack import FILE...` into k, as a user would.
func (k *tack) importFiles(t *testing.T, u user, files []string) {
	t.Helper()
	args := append([]string{"import", "-server", k.URL}, files...)
	if k.Token != "" {
		args = append(args, "-token", k.Token)
	}
	cmd := exec.Command(binary(t, "tack"), args...)
	cmd.Env = u.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tack import: %v\n%s", err, out)
	}
	t.Logf("tack import:\n%s", out)
}

// claudeTranscripts are Claude Code's files of session id: its transcript,
// then its subagents'.
func claudeTranscripts(t *testing.T, u user, id string) []string {
	t.Helper()
	main, _ := filepath.Glob(filepath.Join(u.Home, ".claude", "projects", "*", id+".jsonl"))
	if len(main) != 1 {
		t.Fatalf("Claude Code's transcript of %s: found %v", id, main)
	}
	subs, _ := filepath.Glob(filepath.Join(filepath.Dir(main[0]), id, "subagents", "*.jsonl"))
	sort.Strings(subs)
	return append(main, subs...)
}

// codexTranscripts is codex's rollout file of thread id.
func codexTranscripts(t *testing.T, u user, id string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(u.CodexHome, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
	if len(files) != 1 {
		t.Fatalf("codex's rollout of %s: found %v", id, files)
	}
	return files
}

// A view is what the oracle compares of a session: everything a person
// reads of it, none of what differs by nature between two Tacks (ids,
// seqs, receipt times).
type view struct {
	Key, Title string
	Turns      int
	State      string
	// End is how the log ends: the last session/end's reason, "" when the
	// log has none.
	End string
	// Log is every message, tool result and list write, in log order.
	Log []logLine
	// List is the current list, one "id content:status …" per item.
	List     []string
	Children []view
}

type logLine struct {
	Turn int
	Text string
}

// viewOf reads the session s of k and its children.
func (k *tack) viewOf(t *testing.T, s session) view {
	t.Helper()
	v := view{Key: s.ExternalKey, Title: s.Title, Turns: s.Turn.Number, State: s.State, End: "(none)"}
	for _, e := range k.events(t, s.ID) {
		if e.Type == "session/end" {
			var d struct {
				Reason string `json:"reason"`
			}
			_ = json.Unmarshal(e.Data, &d)
			v.End = fmt.Sprintf("session/end %q", d.Reason)
			continue
		}
		if text := logText(e); text != "" {
			v.Log = append(v.Log, logLine{Turn: e.Turn, Text: text})
		}
	}
	var cur struct {
		Todos []struct {
			ID         string   `json:"id"`
			Content    string   `json:"content"`
			Status     string   `json:"status"`
			ActiveForm string   `json:"activeForm"`
			BlockedBy  []string `json:"blockedBy"`
			Owner      string   `json:"owner"`
		} `json:"todos"`
	}
	k.do(t, http.MethodGet, "/sessions/"+s.ID+"/todos", nil, &cur)
	for _, it := range cur.Todos {
		item := fmt.Sprintf("%s %q:%s", it.ID, it.Content, it.Status)
		if it.ActiveForm != "" {
			item += fmt.Sprintf(" activeForm %q", it.ActiveForm)
		}
		if len(it.BlockedBy) > 0 {
			item += " blockedBy " + strings.Join(it.BlockedBy, ",")
		}
		if it.Owner != "" {
			item += fmt.Sprintf(" owner %q", it.Owner)
		}
		v.List = append(v.List, item)
	}
	kids := k.sessions(t, s.ID)
	sort.Slice(kids, func(i, j int) bool { return kids[i].ExternalKey < kids[j].ExternalKey })
	for _, c := range kids {
		v.Children = append(v.Children, k.viewOf(t, c))
	}
	return v
}

// logText is an event as the oracle compares it, "" for those it leaves
// to other fields (turn starts and ends: the turn of each line and the
// count say them).
func logText(e event) string {
	var d struct {
		Text      string `json:"text"`
		Source    string `json:"source"`
		Kind      string `json:"kind"`
		ToolCalls []struct {
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"toolCalls"`
		Name    string `json:"name"`
		Content string `json:"content"`
		IsError bool   `json:"isError"`
		Todos   []struct {
			Content string `json:"content"`
			Status  string `json:"status"`
		} `json:"todos"`
		By string `json:"by"`
	}
	_ = json.Unmarshal(e.Data, &d)
	switch e.Type {
	case "message/user":
		if d.Source != "" {
			return fmt.Sprintf("user (%s %s) %q", d.Source, d.Kind, d.Text)
		}
		return fmt.Sprintf("user %q", d.Text)
	case "message/assistant":
		s := fmt.Sprintf("assistant %q", d.Text)
		for _, c := range d.ToolCalls {
			// Keys in a canonical order: the hook's tool_input and the
			// transcript's input give the same arguments in different ones.
			var args any
			_ = json.Unmarshal(c.Args, &args)
			canon, _ := json.Marshal(args)
			s += fmt.Sprintf(" + call %s %s", c.Name, canon)
		}
		return s
	case "tool/result":
		s := fmt.Sprintf("tool result %s %q", d.Name, d.Content)
		if d.IsError {
			s += " (error)"
		}
		return s
	case "todo/write", "todo/edit":
		var items []string
		for _, it := range d.Todos {
			items = append(items, it.Content+":"+it.Status)
		}
		s := "list write [" + strings.Join(items, ", ") + "]"
		if e.Type == "todo/edit" {
			s = "list edit by " + d.By + " [" + strings.Join(items, ", ") + "]"
		}
		return s
	}
	return ""
}

// concurrent folds each run of a turn's tool results and list writes that
// holds more than one list write (the results of calls the agent ran at
// once, three TaskUpdates of one message) into its results, sorted, and
// the list the run left. The agent runs such calls concurrently: their
// hooks reach Tack in whatever order they finish, and the transcript
// writes their results in its own, so the lists between them may differ;
// each call, its result and the list they leave may not.
func concurrent(log []logLine) []logLine {
	var out []logLine
	for i := 0; i < len(log); {
		j, writes := i, 0
		for j < len(log) && log[j].Turn == log[i].Turn &&
			(strings.HasPrefix(log[j].Text, "tool result ") || strings.HasPrefix(log[j].Text, "list write ")) {
			if strings.HasPrefix(log[j].Text, "list write ") {
				writes++
			}
			j++
		}
		if writes < 2 {
			out = append(out, log[i:max(j, i+1)]...)
			i = max(j, i+1)
			continue
		}
		var results []logLine
		last := ""
		for _, l := range log[i:j] {
			if strings.HasPrefix(l.Text, "list write ") {
				last = l.Text
			} else {
				results = append(results, l)
			}
		}
		slices.SortFunc(results, func(a, b logLine) int { return strings.Compare(a.Text, b.Text) })
		out = append(out, results...)
		out = append(out, logLine{Turn: log[i].Turn, Text: fmt.Sprintf("%d list writes run at once, leaving %s", writes, strings.TrimPrefix(last, "list write "))})
		i = j
	}
	return out
}

// diffViews lists every difference between the live view and the
// imported one, each a line naming what differs and both sides.
func diffViews(what string, live, imp view) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, what+fmt.Sprintf(format, args...)) }
	if live.Key != imp.Key {
		add("key: live %q, import %q", live.Key, imp.Key)
	}
	if live.Title != imp.Title {
		add("title: live %q, import %q", live.Title, imp.Title)
	}
	if live.Turns != imp.Turns {
		add("turns: live %d, import %d", live.Turns, imp.Turns)
	}
	// A transcript never says its session ended (neither agent writes a
	// line for it), nor always that its last turn did when the agent
	// exits right after it: the end is known live alone (SessionEnd, Stop,
	// the agent's process gone). A live session that ended reads as its
	// import idle or working.
	endedLive := live.End != "(none)" && imp.End == "(none)" && live.State == "ended" && (imp.State == "idle" || imp.State == "working")
	if live.State != imp.State && !endedLive {
		add("state: live %s, import %s", live.State, imp.State)
	}
	if live.End != imp.End && !endedLive {
		add("end: live %s, import %s", live.End, imp.End)
	}
	out = append(out, diffLogs(what, concurrent(live.Log), concurrent(imp.Log))...)
	if strings.Join(live.List, "\n") != strings.Join(imp.List, "\n") {
		add("list: live %d items, import %d:\n%s", len(live.List), len(imp.List), sideBySide(live.List, imp.List))
	}
	lk, ik := map[string]view{}, map[string]view{}
	var keys []string
	for _, c := range live.Children {
		lk[c.Key] = c
		keys = append(keys, c.Key)
	}
	for _, c := range imp.Children {
		if _, ok := lk[c.Key]; !ok {
			keys = append(keys, c.Key)
		}
		ik[c.Key] = c
	}
	if len(live.Children) != len(imp.Children) {
		add("children: live %d, import %d", len(live.Children), len(imp.Children))
	}
	sort.Strings(keys)
	for _, key := range keys {
		l, inLive := lk[key]
		i, inImport := ik[key]
		switch {
		case !inLive:
			add("child %s (%q, %d lines): import only", key, i.Title, len(i.Log))
		case !inImport:
			add("child %s (%q, %d lines): live only", key, l.Title, len(l.Log))
		default:
			out = append(out, diffViews(what+"child "+key+" ", l, i)...)
		}
	}
	return out
}

// diffLogs aligns the two logs (longest common subsequence of their
// texts) and says each line one side lacks or has otherwise, and each
// matched line whose turn differs. Lines are numbered from 1 on each side.
func diffLogs(what string, live, imp []logLine) []string {
	n, m := len(live), len(imp)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if live[i].Text == imp[j].Text {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	var gone, added []int // unmatched lines of the current run
	flush := func() {
		for k := 0; k < max(len(gone), len(added)); k++ {
			switch {
			case k < len(gone) && k < len(added):
				out = append(out, fmt.Sprintf("%smessage %d (import %d): live %s vs import %s", what, gone[k]+1, added[k]+1, short(live[gone[k]].Text), short(imp[added[k]].Text)))
			case k < len(gone):
				out = append(out, fmt.Sprintf("%smessage %d: live only %s", what, gone[k]+1, short(live[gone[k]].Text)))
			default:
				out = append(out, fmt.Sprintf("%smessage (import %d): import only %s", what, added[k]+1, short(imp[added[k]].Text)))
			}
		}
		gone, added = nil, nil
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && live[i].Text == imp[j].Text:
			flush()
			if live[i].Turn != imp[j].Turn {
				out = append(out, fmt.Sprintf("%smessage %d (import %d) %s: live turn %d, import turn %d", what, i+1, j+1, short(live[i].Text), live[i].Turn, imp[j].Turn))
			}
			i, j = i+1, j+1
		case j == m || (i < n && lcs[i+1][j] >= lcs[i][j+1]):
			gone = append(gone, i)
			i++
		default:
			added = append(added, j)
			j++
		}
	}
	flush()
	if len(out) > 0 {
		out = append([]string{fmt.Sprintf("%smessages: live %d, import %d", what, n, m)}, out...)
	}
	return out
}

// short cuts a line to what a diff needs to tell it.
func short(s string) string {
	const limit = 240
	if r := []rune(s); len(r) > limit {
		return "`" + string(r[:limit]) + "…`"
	}
	return "`" + s + "`"
}

func sideBySide(live, imp []string) string {
	var b strings.Builder
	for i := 0; i < max(len(live), len(imp)); i++ {
		l, m := "-", "-"
		if i < len(live) {
			l = live[i]
		}
		if i < len(imp) {
			m = imp[i]
		}
		mark := " "
		if l != m {
			mark = "≠"
		}
		fmt.Fprintf(&b, "    %s live %s | import %s\n", mark, l, m)
	}
	return b.String()
}

// checkOracle imports files into an empty Tack and holds the live
// session of key to what the import made of it. The live routes may still
// be catching up (the watcher polls), so the comparison is made again
// until the two agree or 10 s have passed; then every difference is
// printed.
func checkOracle(t *testing.T, u user, live *tack, key string, files []string) {
	t.Helper()
	empty := startTack(t, u, false)
	empty.importFiles(t, u, files)
	imported, ok := empty.sessionByKey(t, key)
	if !ok {
		t.Fatalf("tack import made no session %s (files %v)", key, files)
	}
	want := empty.viewOf(t, imported)
	checkTitles(t, "import", want)
	// The live side may still be taking in what the agent did last.
	var diff []string
	eventually.Within(10*time.Second, func() bool {
		s, ok := live.sessionByKey(t, key)
		if !ok {
			diff = []string{"session: live none, import " + key}
		} else {
			diff = diffViews("", live.viewOf(t, s), want)
		}
		return len(diff) == 0
	})
	if s, ok := live.sessionByKey(t, key); ok {
		checkTitles(t, "live", live.viewOf(t, s))
	}
	if len(diff) > 0 {
		t.Errorf("the live session differs from the import of its transcript (%d differences):\n%s", len(diff), strings.Join(diff, "\n"))
	}
	if dir := os.Getenv("TACK_ORACLE_SHOTS"); dir != "" {
		if s, ok := live.sessionByKey(t, key); ok {
			shootOracle(t, dir, []oracleShot{{live.URL, s.ID, t.Name() + "-live"}, {empty.URL, imported.ID, t.Name() + "-import"}})
		}
	}
}

// oracleShot is one session of one Tack to photograph.
type oracleShot struct {
	URL  string `json:"url"`
	ID   string `json:"id"`
	Name string `json:"name"`
}

// shootOracle photographs each session's board and page at 1440×900 and
// 390×844 into dir (web/e2e/oracle-shots.js), for a person to set the live
// page beside the import's: TACK_ORACLE_SHOTS=DIR asks for it.
func shootOracle(t *testing.T, dir string, shots []oracleShot) {
	t.Helper()
	for i := range shots {
		shots[i].Name = strings.ReplaceAll(shots[i].Name, "/", "-")
	}
	list, _ := json.Marshal(shots)
	cmd := exec.CommandContext(t.Context(), "node", abs(filepath.Join("..", "..", "web", "e2e", "oracle-shots.js")))
	cmd.Env = append(os.Environ(), "TACK_URL="+shots[0].URL, "TACK_ORACLE_SHOTS="+abs(dir), "TACK_SHOTS="+string(list))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("oracle-shots.js: %v\n%s", err, out)
	}
}

// checkTitles asserts that no session of v, nor its children, is titled
// by its raw key: the oracle's two sides may agree on a wrong title.
func checkTitles(t *testing.T, side string, v view) {
	t.Helper()
	if v.Title == v.Key || strings.HasPrefix(v.Title, "claude-code:") || strings.HasPrefix(v.Title, "codex:") {
		t.Errorf("%s: session %s is titled by its raw key %q", side, v.Key, v.Title)
	}
	for _, c := range v.Children {
		checkTitles(t, side, c)
	}
}
