package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store/location"
	"github.com/tack-dev/tack/internal/store/sqlite"
	"github.com/tack-dev/tack/internal/storetest"
)

func env(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }

// tack runs the command line and returns stdout, stderr and its error.
func tack(getenv func(string) string, args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, getenv, &out, &errOut)
	return out.String(), errOut.String(), err
}

// TestTokenCommands creates, lists and revokes tokens in both stores, and
// the server's store accepts the token until it is revoked.
func TestTokenCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sqlitePath := filepath.Join(dir, "tack.db")
	st, err := sqlite.Open(context.Background(), sqlitePath, projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close() // as a server that started once and stopped
	stores := map[string]func(string) string{
		"sqlite":   env(map[string]string{"TACK_DATA_DIR": dir}),
		"postgres": env(map[string]string{"DATABASE_URL": storetest.SchemaURL(t)}),
	}
	for name, getenv := range stores {
		t.Run(name, func(t *testing.T) {
			out, errOut, err := tack(getenv, "token", "create", "-name", "ci-harness", "-scope", "read")
			if err != nil {
				t.Fatalf("create: %v %s", err, errOut)
			}
			secret := strings.TrimSpace(out)
			if !regexp.MustCompile(`^tack_[A-Za-z0-9_-]{43}$`).MatchString(secret) {
				t.Fatalf("create printed %q, want tack_ and 32 random bytes", out)
			}
			id := regexp.MustCompile(`tok_[a-z0-9]+`).FindString(errOut)
			out, _, err = tack(getenv, "token", "list")
			if err != nil || !strings.Contains(out, id) || !strings.Contains(out, "ci-harness") || strings.Contains(out, secret) {
				t.Fatalf("list: %v\n%s", err, out)
			}
			loc := &location.Location{DatabaseURL: getenv("DATABASE_URL"), DataDir: getenv("TACK_DATA_DIR")}
			check := func() error {
				st, err := loc.Open(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				_, err = (&auth.Service{Store: st}).Token(context.Background(), secret)
				return err
			}
			if err := check(); err != nil {
				t.Fatalf("the new token does not authenticate: %v", err)
			}
			// -for names the principal, -name then the token.
			if _, errOut, err := tack(getenv, "token", "create", "-for", "bob", "-name", "laptop"); err != nil || !strings.Contains(errOut, "for bob") {
				t.Fatalf("create -for bob: %v %s", err, errOut)
			}
			if out, _, err := tack(getenv, "token", "list"); err != nil || !regexp.MustCompile(`bob\s+laptop`).MatchString(out) {
				t.Fatalf("list after -for: %v\n%s", err, out)
			}
			if _, _, err := tack(getenv, "token", "create", "-for", "Agent"); err == nil || !strings.Contains(err.Error(), "agent") {
				t.Errorf("a token for a principal named Agent: %v", err)
			}
			if out, _, err := tack(getenv, "principal", "create", "-name", "carol", "-admin"); err != nil || !strings.Contains(out, "admin: true") {
				t.Fatalf("principal create -admin: %v %s", err, out)
			}
			if out, _, err := tack(getenv, "principal", "list"); err != nil || !regexp.MustCompile(`carol\s+true`).MatchString(out) || !regexp.MustCompile(`bob\s+false`).MatchString(out) {
				t.Fatalf("principal list: %v\n%s", err, out)
			}
			if out, _, err := tack(getenv, "token", "revoke", id); err != nil || !strings.Contains(out, "revoked "+id) {
				t.Fatalf("revoke: %v %s", err, out)
			}
			if err := check(); err == nil {
				t.Fatal("a revoked token still authenticates")
			}
			if _, _, err := tack(getenv, "token", "revoke", "tok_nosuch"); err == nil || !strings.Contains(err.Error(), `no token with id "tok_nosuch"`) {
				t.Errorf("revoke of an unknown id: %v", err)
			}
			if _, _, err := tack(getenv, "token", "create", "-name", "x", "-scope", "admin"); err == nil || !strings.Contains(err.Error(), "read or write") {
				t.Errorf("create with a bad scope: %v", err)
			}
			if _, _, err := tack(getenv, "token", "create"); err == nil || !strings.Contains(err.Error(), "-name") {
				t.Errorf("create without a name: %v", err)
			}
		})
	}
}

// TestTokenCommandErrors: no store, and a SQLite store a running server holds.
func TestTokenCommandErrors(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	_, _, err := tack(env(map[string]string{"TACK_DATA_DIR": empty}), "token", "list")
	if err == nil || !strings.Contains(err.Error(), "no Tack store at "+filepath.Join(empty, "tack.db")) {
		t.Errorf("no store: %v", err)
	}
	if _, err := os.Stat(filepath.Join(empty, "tack.db")); err == nil {
		t.Error("the command created a store")
	}
	_, _, err = tack(env(map[string]string{}), "token", "list")
	if err == nil || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Errorf("no store anywhere: %v", err)
	}

	dir := t.TempDir()
	held, err := sqlite.Open(context.Background(), filepath.Join(dir, "tack.db"), projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close() // as a running server does
	_, _, err = tack(env(map[string]string{"TACK_DATA_DIR": dir}), "token", "create", "-name", "a")
	if err == nil || !strings.Contains(err.Error(), "tack token create -server URL -token YOUR_TOKEN") || !strings.Contains(err.Error(), "stop the server, run this command again") {
		t.Errorf("store held by a server: %v", err)
	}
	// An unknown command is named in the error, with the usage on stderr.
	if _, stderr, err := tack(env(nil), "nonsense"); err == nil || !strings.Contains(err.Error(), `unknown command "nonsense"`) ||
		!strings.Contains(stderr, "usage: tack") || !strings.Contains(stderr, "token list") {
		t.Errorf("unknown command: %v, stderr %q", err, stderr)
	}
}

// TestTokenCommandsThroughServer makes, lists and revokes one's own token
// through a running server in token mode, as on a SQLite store the server
// holds.
func TestTokenCommandsThroughServer(t *testing.T) {
	t.Parallel()
	st := storetest.SQLite(t, projection.Config{})
	svc := &auth.Service{Store: st}
	mine, _, err := svc.CreateToken(context.Background(), "alice", auth.Write)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(st, api.Options{Auth: api.AuthOptions{Service: svc}}).Handler())
	defer srv.Close()
	noEnv := env(nil)

	out, errOut, err := tack(noEnv, "token", "create", "-server", srv.URL, "-token", mine, "-scope", "read")
	if err != nil {
		t.Fatalf("create: %v %s", err, errOut)
	}
	secret := strings.TrimSpace(out)
	if !strings.HasPrefix(secret, "tack_") || !strings.Contains(errOut, "for alice (read)") {
		t.Fatalf("create: %q %q", out, errOut)
	}
	if id, err := svc.Token(context.Background(), secret); err != nil || id.Principal.Name != "alice" || id.Scope != auth.Read {
		t.Fatalf("the token made through the server: %+v, %v", id, err)
	}
	id := regexp.MustCompile(`token (tok_\S+)`).FindStringSubmatch(errOut)[1]
	if out, _, err := tack(noEnv, "token", "list", "-server", srv.URL, "-token", mine); err != nil || !strings.Contains(out, id) {
		t.Fatalf("list: %v %q", err, out)
	}
	// Through a server -name says what the token is for: it is alice's.
	laptop, errOut, err := tack(noEnv, "token", "create", "-server", srv.URL, "-token", mine, "-name", "laptop")
	if err != nil || !strings.Contains(errOut, "for alice") {
		t.Fatalf("a token named laptop through alice's: %v %q", err, errOut)
	}
	if id, err := svc.Token(context.Background(), strings.TrimSpace(laptop)); err != nil || id.Principal.Name != "alice" {
		t.Fatalf("the laptop's token: %+v, %v", id, err)
	}
	if out, _, err := tack(noEnv, "token", "list", "-server", srv.URL, "-token", mine); err != nil || !strings.Contains(out, "laptop") {
		t.Fatalf("list: %v %q, want the laptop's token named", err, out)
	}
	if _, _, err := tack(noEnv, "token", "create", "-server", srv.URL, "-token", mine, "-for", "bob"); err == nil || !strings.Contains(err.Error(), "-for") {
		t.Fatalf("-for through a server: %v", err)
	}
	if _, _, err := tack(noEnv, "token", "revoke", "-server", srv.URL, "-token", mine, id); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	if _, err := svc.Token(context.Background(), secret); err == nil {
		t.Fatal("the revoked token still works")
	}
	if _, _, err := tack(noEnv, "token", "list", "-server", srv.URL); err == nil || !strings.Contains(err.Error(), "-token") {
		t.Fatalf("without a token: %v", err)
	}
}
