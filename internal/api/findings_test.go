package api_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// The findings of probing Tack from outside, each held by a test that
// failed before its fix (docs/security.md).

// TestTwoIdempotencyKeys: a request that carries the header twice is
// refused, not answered by whichever copy a reader picks.
func TestTwoIdempotencyKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.SQLite(t, projection.Config{}), api.Options{})
	id := b.newSession()
	req, _ := http.NewRequest("POST", b.url+"/sessions/"+id+"/events", strings.NewReader(`{"events":[{"type":"turn/start"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Add("Idempotency-Key", "one")
	req.Header.Add("Idempotency-Key", "two")
	b.wantError(b.send(req), http.StatusBadRequest, "invalid")
	if s := b.session(id); s.LastSeq != 0 {
		t.Errorf("the refused request wrote: lastSeq %d", s.LastSeq)
	}
}

// TestTitleIsOneLine: a title refuses what a todo's content refuses, a
// line break or another control character.
func TestTitleIsOneLine(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.SQLite(t, projection.Config{}), api.Options{})
	for _, title := range []string{"a\nb", "a\rb", "a\tb", "a\u0085b", "a\u2028b", "a\x1b[31mb"} {
		b.wantError(b.do("POST", "/sessions", map[string]string{"title": title}), http.StatusUnprocessableEntity, "invalid")
	}
	var s store.Session
	b.want(b.do("POST", "/sessions", map[string]string{"title": "  one line, trimmed \n"}), http.StatusCreated, &s)
	if s.Title != "one line, trimmed" {
		t.Errorf("title %q", s.Title)
	}
}

// TestExpectContinueTooLarge: a body announced larger than the limit is
// refused before the client is told to send it.
func TestExpectContinueTooLarge(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.SQLite(t, projection.Config{}), api.Options{})
	id := b.newSession()
	host := strings.TrimPrefix(b.url, "http://")
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "POST /sessions/%s/events HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n",
		id, host, api.MaxBodyBytes+1)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("Expect: 100-continue with Content-Length %d: %d, want 413", api.MaxBodyBytes+1, resp.StatusCode)
	}
}

// TestForgedCursor: a cursor of the right encoding whose id is not a
// session id this server could have issued is refused.
func TestForgedCursor(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.SQLite(t, projection.Config{}), api.Options{})
	b.newSession()
	for _, raw := range []string{"1:x", "1700000000000:x", "-1:ses_x"} {
		c := base64.RawURLEncoding.EncodeToString([]byte(raw))
		b.wantError(b.do("GET", "/sessions?cursor="+c, nil), http.StatusBadRequest, "invalid")
	}
	b.wantError(b.do("GET", "/sessions?cursor=1:x", nil), http.StatusBadRequest, "invalid")
}

// TestReservedNames: no principal may be named as the model or the
// built-in principal, in any case.
func TestReservedNames(t *testing.T) {
	t.Parallel()
	svc := &auth.Service{Store: storetest.SQLite(t, projection.Config{})}
	ctx := context.Background()
	for _, name := range []string{"agent", "Agent", " AGENT ", "local", "Local"} {
		if _, _, err := svc.CreateToken(ctx, name, auth.Write); err == nil {
			t.Errorf("a token for a principal named %q was made", name)
		}
		if _, _, err := svc.NewLink(ctx, name, auth.Write); err == nil {
			t.Errorf("a sign-in link for a principal named %q was made", name)
		}
	}
	if _, _, err := svc.CreateToken(ctx, "agent smith", auth.Write); err != nil {
		t.Errorf("a name that holds agent: %v", err)
	}
}
