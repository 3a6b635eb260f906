package front_test

import (
	"bufio"
	"bytes"
	"flag"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/hook"
	"github.com/tack-dev/tack/internal/hook/front"
	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/transcript"
)

// TestFlagsAreTackHooks: the quick path reads the hook's flags with the
// defaults and values `tack hook` has.
func TestFlagsAreTackHooks(t *testing.T) {
	if front.DefaultServer != importer.DefaultServer {
		t.Errorf("default server %q, tack hook's %q", front.DefaultServer, importer.DefaultServer)
	}
	var agents []string
	for _, a := range transcript.Agents() {
		agents = append(agents, string(a.Name))
	}
	slices.Sort(agents)
	got := slices.Clone(front.Agents)
	slices.Sort(got)
	if !slices.Equal(got, agents) || front.Agents[0] != string(transcript.ClaudeCode) {
		t.Errorf("agents %q, tack hook's %q with %s first", front.Agents, agents, transcript.ClaudeCode)
	}
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	def := *hook.PlanFlag(fs)
	for _, p := range front.Plans {
		if !transcript.ValidPlan(p) {
			t.Errorf("plan %q is not tack hook's", p)
		}
	}
	if front.Plans[0] != def || len(front.Plans) != 3 {
		t.Errorf("plans %q, default %q", front.Plans, def)
	}
}

// TestHandsOn: what the quick path does not cover goes to the full hook
// with the payload, and a server away gets nothing printed and nothing
// handed on.
func TestHandsOn(t *testing.T) {
	t.Parallel()
	var asked int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(front.ReadHeader) == front.ReadAsk && r.Header.Get(front.KeyHeader) == "k3y" &&
			r.URL.Path == "/hooks/codex" && r.URL.Query().Get("plan") == "off" && r.Header.Get("Authorization") == "Bearer tk" {
			asked++
			w.Header().Set(front.ReadHeader, front.ReadLocal)
			w.Write([]byte(`{"quick":true}`))
			return
		}
		w.WriteHeader(http.StatusBadRequest)
	}))
	t.Cleanup(srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	states := t.TempDir()
	for _, server := range []string{srv.URL, down} {
		if err := os.WriteFile(front.Marker(states, server), []byte("k3y"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := func(k string) string {
		if k == "TACK_TOKEN" {
			return "tk"
		}
		return ""
	}
	const tool = `{"hook_event_name":"PreToolUse","tool_name":"Bash"}`
	run := func(payload string, args ...string) (out string, handed []byte) {
		t.Helper()
		var b bytes.Buffer
		full := func(p []byte) error { handed = p; b.WriteString("full"); return nil }
		if err := front.Run(args, env, states, strings.NewReader(payload), &b, full); err != nil {
			t.Fatal(err)
		}
		return b.String(), handed
	}
	if out, handed := run(tool, "-agent", "codex", "-plan", "off", "-server", srv.URL); out != `{"quick":true}` || handed != nil || asked != 1 {
		t.Errorf("the quick path: printed %q, handed on %q", out, handed)
	}
	for _, tc := range []struct {
		name    string
		payload string
		args    []string
	}{
		{"a SessionStart", `{"hook_event_name":"SessionStart"}`, []string{"-agent", "codex", "-plan", "off", "-server", srv.URL}},
		{"no marker", tool, []string{"-server", "http://127.0.0.1:9"}},
		{"https", tool, []string{"-server", "https://127.0.0.1:9"}},
		{"another machine", tool, []string{"-server", "http://10.1.2.3:8080"}},
		{"an unknown flag", tool, []string{"-verbose"}},
		{"an unknown agent", tool, []string{"-agent", "vim", "-server", srv.URL}},
		{"an unknown plan", tool, []string{"-plan", "never", "-server", srv.URL}},
		{"an argument", tool, []string{"install"}},
		{"a query in the URL", tool, []string{"-server", srv.URL + "?x=1"}},
	} {
		if out, handed := run(tc.payload, tc.args...); out != "full" || string(handed) != tc.payload {
			t.Errorf("%s: printed %q, handed on %q; want it handed on whole", tc.name, out, handed)
		}
	}
	if out, handed := run(tool, "-server", down); out != "" || handed != nil {
		t.Errorf("a server away: printed %q, handed on %q; want nothing", out, handed)
	}
	// A server that refuses: the marker goes, and the full hook syncs.
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(front.ReadHeader, front.ReadRefused)
		w.WriteHeader(http.StatusConflict)
	}))
	t.Cleanup(refusing.Close)
	marker := front.Marker(states, refusing.URL)
	if err := os.WriteFile(marker, []byte("k3y"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, handed := run(tool, "-server", refusing.URL); out != "full" || string(handed) != tool {
		t.Errorf("refused: printed %q, handed on %q", out, handed)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the marker of a server that refused is still there: %v", err)
	}
	if filepath.Dir(marker) != states {
		t.Errorf("marker %s outside the state folder", marker)
	}
}

// TestReadAnswer: the answer's body whole, by its length, chunked or to
// the end, and nothing of a status other than 200.
func TestReadAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, resp, read, answer string
		fails                    bool
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\ntack-read-transcript: local\r\n\r\nhelloEXTRA", "local", "hello", false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n", "", "hello", false},
		{"to the end", "HTTP/1.0 200 OK\r\nTack-Read-Transcript: refused\r\n\r\nhello", "refused", "hello", false},
		{"not 200", "HTTP/1.1 409 Conflict\r\nTack-Read-Transcript: refused\r\nContent-Length: 2\r\n\r\n{}", "refused", "", false},
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", "", "", true},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "", "", true},
		{"bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "", "", true},
		{"cut short", "HTTP/1.1 200 OK\r\nContent-Le", "", "", true},
	} {
		read, answer, err := front.ReadAnswer(bufio.NewReader(strings.NewReader(tc.resp)))
		if (err != nil) != tc.fails || (err == nil && (read != tc.read || string(answer) != tc.answer)) {
			t.Errorf("%s: %q %q %v", tc.name, read, answer, err)
		}
	}
}

// FuzzReadAnswer: whatever answers, reading it ends, within the bound on
// an answer, without a panic.
func FuzzReadAnswer(f *testing.F) {
	f.Add("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
	f.Add("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
	f.Add("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n")
	f.Fuzz(func(t *testing.T, resp string) {
		_, answer, _ := front.ReadAnswer(bufio.NewReader(strings.NewReader(resp)))
		if len(answer) > front.MaxPayloadBytes {
			t.Fatalf("an answer of %d bytes", len(answer))
		}
	})
}
