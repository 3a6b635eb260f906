package main

import (
	"bytes"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/storetest"
)

// TestLocalRefusesNonLoopback: -auth local (the default) serves only on
// loopback and says what to use instead.
func TestLocalRefusesNonLoopback(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-addr", "0.0.0.0:8080"}, {"-auth", "local", "-addr", "192.0.2.1:80"}} {
		_, err := parseConfig(args, env(map[string]string{"DATABASE_URL": "postgres://x"}), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "use -auth token") {
			t.Errorf("%v: %v, want a refusal that says to use -auth token", args, err)
		}
	}
	if _, err := parseConfig([]string{"-auth", "token", "-addr", "0.0.0.0:8080"}, env(map[string]string{"DATABASE_URL": "postgres://x"}), &bytes.Buffer{}); err != nil {
		t.Errorf("-auth token on 0.0.0.0: %v", err)
	}
	if _, err := parseConfig([]string{"-auth", "open"}, env(map[string]string{"DATABASE_URL": "postgres://x"}), &bytes.Buffer{}); err == nil {
		t.Error("-auth open accepted")
	}
	if c, _ := parseConfig(nil, env(map[string]string{"DATABASE_URL": "postgres://x", "TACK_AUTH": "token"}), &bytes.Buffer{}); c.Auth != "token" {
		t.Errorf("TACK_AUTH=token: Auth = %q", c.Auth)
	}
}

// TestTokenModeServesBeyondLoopback starts -auth token on 127.0.0.2 (not
// 127.0.0.1) with a fresh store: the start-up line names the mode, the
// first start prints a one-time sign-in link, which signs a client in once,
// and every route but /healthz and /readyz wants a credential.
func TestTokenModeServesBeyondLoopback(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "tack")
	var out storetest.LogBuffer
	addr, stop := startWith(t, []string{"-auth", "token", "-addr", "127.0.0.2:0"}, env(map[string]string{"TACK_DATA_DIR": dir}), &out)
	defer func() { _ = stop() }()
	if !strings.HasPrefix(addr, "127.0.0.2:") || !strings.Contains(out.String(), "auth=token") {
		t.Fatalf("start-up on %s does not name the mode:\n%s", addr, out.String())
	}
	code := regexp.MustCompile(`/login#code=([A-Za-z0-9_-]+)`).FindStringSubmatch(out.String())
	if code == nil {
		t.Fatalf("no one-time sign-in link printed:\n%s", out.String())
	}
	base := "http://" + addr
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/sessions": 401, "/me": 401} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	login := func() *http.Response {
		resp, err := http.Post(base+"/login", "application/json", strings.NewReader(`{"code":"`+code[1]+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := login()
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) == 0 {
		t.Fatalf("sign in with the link: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", base+"/sessions", nil)
	req.AddCookie(resp.Cookies()[0])
	me, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	me.Body.Close()
	if me.StatusCode != http.StatusOK {
		t.Errorf("GET /sessions signed in: %d", me.StatusCode)
	}
	if again := login(); again.StatusCode != http.StatusUnauthorized {
		t.Errorf("the link a second time: %d, want 401", again.StatusCode)
	}
	if strings.Contains(out.String(), resp.Cookies()[0].Value) {
		t.Error("the sign-in cookie is in the log")
	}
}
