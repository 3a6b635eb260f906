// Package front is the quick path of an agent's command hook, for a Tack
// server on this machine that reads the agent's transcripts itself: the
// hook then posts its payload alone and prints the answer, which takes a
// socket, a file read and a few hundred bytes of HTTP. The binary that
// runs it (cmd/tack-hook-local) links no net/http and no TLS, whose
// package initialisation alone costs a short-lived process more than the
// hook's own work; whatever the quick path does not cover it hands to the
// full hook (Full), which is the same hook with all of it.
//
// It imports nothing heavier than package net, and package hook takes its
// names (the headers, the marker file) from here.
package front

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ReadHeader is, on a hook's request, the hook's word that it sent none of
// the agent's transcript and asks the server to read it itself (ReadAsk);
// on a hook's answer, the server's word that it reads this hook's
// transcripts itself (ReadLocal), so that the next hooks may ask it to, or
// that it does not (ReadRefused), and applied nothing of the hook.
const ReadHeader = "Tack-Read-Transcript"

// The values of ReadHeader.
const (
	ReadAsk     = "read"    // a hook's request: read the transcript yourself
	ReadLocal   = "local"   // an answer: this server reads this hook's transcripts
	ReadRefused = "refused" // an answer: it does not; nothing was applied
)

// KeyHeader carries, on a hook's request that asks the server to read its
// transcript (ReadHeader), the key of the server's user: proof that the
// hook runs as that user on that machine, which no request relayed from
// elsewhere (a proxy on the server's machine) can give. KeyFileHeader is,
// on an answer that says the server reads the hook's transcripts, where
// that key lies; the hook reads it there.
const (
	KeyHeader     = "Tack-Read-Key"
	KeyFileHeader = "Tack-Read-Key-File"
)

// LagHeader is, on the request of a hook that syncs its transcript itself,
// how many tool calls answered before their lines were in the transcript
// (its own among them) the lines it sent lack: the hook went on without
// waiting for its call's line. On every answer, LagEarly: the server takes
// such hooks, so that the next may go on so; on an answer to one that
// would show the model the list, LagWait: the server answered nothing
// (its answer would be counted on steps that lack those calls' messages),
// and the hook sends again once the lines are there.
const LagHeader = "Tack-Lag"

// The values of LagHeader on an answer.
const (
	LagEarly = "early"
	LagWait  = "wait"
)

// The defaults and values of the hook's flags, as `tack hook` has them
// (a test holds them to its own): the server, the agents (the default
// first) and the plan modes (the default first).
const DefaultServer = "http://127.0.0.1:8080"

var (
	Agents = []string{"claude-code", "codex"}
	Plans  = []string{"auto", "always", "off"}
)

// MaxPayloadBytes bounds the hook payload a hook reads, the server's own
// bound on a request body; a larger one is not sent.
const MaxPayloadBytes = 4 << 20

// DefaultTimeout is how long a hook waits for the server before it gives
// up and lets the agent go on.
const DefaultTimeout = time.Second

// StateDir is the hooks' state folder: $XDG_CACHE_HOME/tack/hooks,
// ~/.cache/tack/hooks; "" when the user has no cache folder.
func StateDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "tack", "hooks")
}

// Marker is the file that says that the server reads this machine's
// transcripts itself, holding the key the hooks show it (KeyHeader): one
// per server in the hooks' state folder dir; "" when there is no folder.
func Marker(dir, server string) string { return serverFile(dir, server, ".reads") }

// EarlyMarker is the file that says that the server takes the tool hooks
// of a hook that syncs its transcript itself without their calls' lines
// (LagHeader): one per server in the hooks' state folder dir; "" when
// there is no folder.
func EarlyMarker(dir, server string) string { return serverFile(dir, server, ".early") }

// serverFile is the hooks' file of kind ext for server in dir.
func serverFile(dir, server, ext string) string {
	if dir == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.TrimSuffix(server, "/")))
	return filepath.Join(dir, hex.EncodeToString(sum[:16])+ext)
}

// OnThisMachine says whether the server's URL names this machine: a
// loopback address, or localhost.
func OnThisMachine(server string) bool {
	u, err := url.Parse(server)
	if err != nil {
		return false
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// Full runs the full hook (`tack hook`, tack-hook) with the same
// arguments, the payload on its standard input, its output the agent's.
type Full func(payload []byte) error

// Run is the hook: it reads the payload from stdin and, where the quick
// path covers it, posts it and prints the answer to stdout; everything
// else goes to full with the payload. stateDir is the hooks' state folder
// (StateDir), where the marker files lie. The quick path covers a hook of a
// plain HTTP server on this machine that has said it reads this user's
// transcripts (the marker file holds its key), other than a SessionStart
// (which tells the server the agent's todo tools). Like the full hook, it
// prints nothing when the server is away or slow, and never stands in the
// agent's way.
func Run(args []string, env func(string) string, stateDir string, stdin io.Reader, stdout io.Writer, full Full) error {
	payload, err := io.ReadAll(io.LimitReader(stdin, MaxPayloadBytes+1))
	if err != nil || len(payload) > MaxPayloadBytes {
		return nil
	}
	h, ok := parse(args, env)
	if !ok || bytes.Contains(payload, []byte(`"SessionStart"`)) {
		return full(payload)
	}
	marker := Marker(stateDir, h.server)
	key, err := os.ReadFile(marker)
	if err != nil || len(key) == 0 || bytes.ContainsAny(key, "\r\n") {
		return full(payload)
	}
	read, answer, err := h.post(payload, string(key))
	if err != nil {
		return nil
	}
	switch read {
	case ReadLocal:
	case ReadRefused:
		// Nothing of the hook was applied: the full hook syncs the
		// transcript itself, as to a server that never read one.
		_ = os.Remove(marker)
		return full(payload)
	default:
		// An older server put in its place: it took the hook as one with
		// no transcript; the next hooks sync themselves.
		_ = os.Remove(marker)
	}
	_, _ = stdout.Write(answer)
	return nil
}

// hookFlags are the flags of `tack hook` the quick path reads.
type hookFlags struct {
	server, token, agent, plan string
	timeout                    time.Duration
	addr, target               string // host:port, and the request's path
}

// parse reads the hook's flags as `tack hook` does, and reports whether
// the quick path covers the server they name. A flag it does not know, or
// one the full hook would refuse, is the full hook's to report.
func parse(args []string, env func(string) string) (hookFlags, bool) {
	var h hookFlags
	fs := flag.NewFlagSet("tack-hook-local", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	server := env("TACK_SERVER")
	if server == "" {
		server = DefaultServer
	}
	fs.StringVar(&h.server, "server", server, "")
	fs.StringVar(&h.token, "token", env("TACK_TOKEN"), "")
	fs.StringVar(&h.agent, "agent", Agents[0], "")
	fs.StringVar(&h.plan, "plan", Plans[0], "")
	fs.DurationVar(&h.timeout, "timeout", DefaultTimeout, "")
	if fs.Parse(args) != nil || fs.NArg() > 0 {
		return h, false
	}
	if !slices.Contains(Plans, h.plan) || !slices.Contains(Agents, h.agent) {
		return h, false
	}
	u, err := url.Parse(h.server)
	if err != nil || u.Scheme != "http" || u.User != nil || !OnThisMachine(h.server) || h.timeout <= 0 {
		return h, false
	}
	h.addr = u.Host
	if u.Port() == "" {
		h.addr = net.JoinHostPort(u.Hostname(), "80")
	}
	if u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(h.token, "\r\n") {
		return h, false
	}
	h.target = strings.TrimSuffix(u.EscapedPath(), "/") + "/hooks/" + url.PathEscape(h.agent) +
		"?" + url.Values{"plan": {h.plan}}.Encode()
	return h, true
}

// post sends the payload, asking the server to read the transcript, and
// returns what the answer's ReadHeader says and the agent's answer: the
// body of a 200, nothing otherwise. One connection, one request, closed
// after it.
func (h *hookFlags) post(payload []byte, key string) (read string, answer []byte, err error) {
	deadline := time.Now().Add(h.timeout)
	c, err := (&net.Dialer{Deadline: deadline}).Dial("tcp", h.addr)
	if err != nil {
		return "", nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(deadline)
	var req bytes.Buffer
	req.Grow(256 + len(payload))
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", h.target, h.addr, len(payload))
	fmt.Fprintf(&req, "%s: %s\r\n%s: %s\r\n", ReadHeader, ReadAsk, KeyHeader, key)
	if h.token != "" {
		fmt.Fprintf(&req, "Authorization: Bearer %s\r\n", h.token)
	}
	req.WriteString("Connection: close\r\n\r\n")
	req.Write(payload)
	if _, err := c.Write(req.Bytes()); err != nil {
		return "", nil, err
	}
	return readAnswer(bufio.NewReader(c))
}

// readAnswer reads an HTTP/1.1 response: its ReadHeader, and its body when
// the status is 200 (as Content-Length or chunked say, or to the end).
func readAnswer(br *bufio.Reader) (read string, answer []byte, err error) {
	status, err := br.ReadString('\n')
	if err != nil {
		return "", nil, err
	}
	f := strings.Fields(status)
	if len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/1.") {
		return "", nil, fmt.Errorf("not an HTTP answer: %q", status)
	}
	length, chunked := int64(-1), false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch {
		case strings.EqualFold(k, ReadHeader):
			read = v
		case strings.EqualFold(k, "Content-Length"):
			if length, err = strconv.ParseInt(v, 10, 64); err != nil || length < 0 {
				return "", nil, fmt.Errorf("bad Content-Length %q", v)
			}
		case strings.EqualFold(k, "Transfer-Encoding"):
			chunked = strings.EqualFold(v, "chunked")
		}
	}
	if f[1] != "200" {
		return read, nil, nil
	}
	var body io.Reader = br
	switch {
	case chunked:
		body = &chunkedReader{r: br}
	case length >= 0:
		body = io.LimitReader(br, length)
	}
	answer, err = io.ReadAll(io.LimitReader(body, MaxPayloadBytes))
	return read, answer, err
}

// chunkedReader decodes a chunked body (RFC 9112, section 7.1), trailers
// left unread.
type chunkedReader struct {
	r    *bufio.Reader
	left int64
	done bool
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	for c.left == 0 {
		if c.done {
			return 0, io.EOF
		}
		line, err := c.r.ReadString('\n')
		if err != nil {
			return 0, err
		}
		size, _, _ := strings.Cut(strings.TrimRight(line, "\r\n"), ";")
		n, err := strconv.ParseInt(strings.TrimSpace(size), 16, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("bad chunk size %q", line)
		}
		if n == 0 {
			c.done = true
			return 0, io.EOF
		}
		c.left = n
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left == 0 && err == nil {
		// The CRLF after the chunk's data.
		if _, err := c.r.Discard(2); err != nil {
			return n, err
		}
	}
	return n, err
}
