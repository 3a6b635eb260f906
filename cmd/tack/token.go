package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"text/tabwriter"

	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/location"
	"github.com/tack-dev/tack/internal/store/sqlite"
)

// runToken is `tack token create|list|revoke`, against the store the server
// uses: DATABASE_URL, or the SQLite database in the data directory.
func runToken(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("token: want create, list or revoke")
	}
	fs := flag.NewFlagSet("tack token "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	loc := location.Flags(fs, getenv)
	name := fs.String("name", "", "create: with -server or -for, what the token is for (\"laptop\"); else the principal the token acts as, created if new")
	forName := fs.String("for", "", "create on the store: the principal the token acts as, created if new (-name then names the token)")
	scope := fs.String("scope", auth.Write, "read (read and subscribe) or write (also append and call the tools) (create)")
	server := fs.String("server", "", "manage your own tokens through this running Tack server instead of its store (with -token)")
	token := fs.String("token", getenv("TACK_TOKEN"), "with -server: your token, sent as Authorization: Bearer (TACK_TOKEN)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *server != "" {
		if *forName != "" {
			return errors.New("token " + args[0] + " -server: a token made through a server is always the caller's own; -for is for the store (without -server)")
		}
		return tokenThroughServer(ctx, &importer.Client{Server: *server, Token: *token}, args[0], *name, *scope, fs.Args(), stdout, stderr)
	}
	var run func(st store.Store) error
	switch args[0] {
	case "create":
		principal, label := *name, ""
		if *forName != "" {
			principal, label = *forName, *name
		}
		if principal == "" {
			return errors.New("token create: -name NAME (or -for PRINCIPAL) is required")
		}
		if !auth.ValidScope(*scope) {
			return fmt.Errorf("token create: -scope %q: want read or write", *scope)
		}
		run = func(st store.Store) error {
			svc := &auth.Service{Store: st}
			name, err := auth.CheckName(principal)
			if err != nil {
				return err
			}
			p, _, err := st.EnsurePrincipal(ctx, name)
			if err != nil {
				return err
			}
			secret, tok, err := svc.CreateTokenFor(ctx, p, label, *scope)
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "token %s for %s (%s); it is shown only this once:\n", tok.ID, tok.PrincipalName, tok.Scope)
			fmt.Fprintln(stdout, secret)
			return nil
		}
	case "list":
		run = func(st store.Store) error {
			list, err := st.Tokens(ctx)
			if err != nil {
				return err
			}
			return printTokens(stdout, list)
		}
	case "revoke":
		if fs.NArg() != 1 {
			return errors.New("token revoke: want one token id (see tack token list)")
		}
		id := fs.Arg(0)
		run = func(st store.Store) error {
			tok, err := st.RevokeToken(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("token revoke: no token with id %q (see tack token list)", id)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "revoked %s (%s); a running server refuses it, and the browsers signed in with it, from the next request, and closes their sockets within 5 s\n", tok.ID, tok.PrincipalName)
			return nil
		}
	default:
		return fmt.Errorf("token: unknown command %q; want create, list or revoke", args[0])
	}
	st, err := loc.Open(ctx)
	if errors.Is(err, sqlite.ErrDatabaseInUse) {
		return fmt.Errorf("%w\nA running Tack server holds the SQLite store, and only one process may. "+
			"Your own tokens can be made, listed and revoked through it: tack token %s -server URL -token YOUR_TOKEN. "+
			"For another principal, stop the server, run this command again, and start the server again; "+
			"or serve from Postgres (DATABASE_URL), where tack token runs beside running servers", err, args[0])
	}
	if err != nil {
		return err
	}
	defer st.Close()
	return run(st)
}

func printTokens(out io.Writer, list []store.Token) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tPRINCIPAL\tNAME\tSCOPE\tCREATED\tLAST USED\tREVOKED")
	at := func(t *projection.Time) string {
		if t == nil {
			return "-"
		}
		return t.Format("2006-01-02 15:04:05Z")
	}
	for _, t := range list {
		label := t.Name
		if label == "" {
			label = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.PrincipalName, label, t.Scope, at(&t.CreatedAt), at(t.LastUsedAt), at(t.RevokedAt))
	}
	return w.Flush()
}

// tokenThroughServer runs a token command through a running server's API
// (GET/POST /tokens, DELETE /tokens/{id}): for the caller's own tokens,
// name saying what a new one is for.
func tokenThroughServer(ctx context.Context, c *importer.Client, cmd, name, scope string, args []string, stdout, stderr io.Writer) error {
	if c.Token == "" {
		return errors.New("token " + cmd + " -server: give your token with -token or TACK_TOKEN")
	}
	switch cmd {
	case "create":
		body := map[string]string{"scope": scope}
		if name != "" {
			body["name"] = name
		}
		var made struct {
			store.Token
			Secret string `json:"token"`
		}
		if err := c.Do(ctx, "POST", "/tokens", body, &made); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "token %s for %s (%s); it is shown only this once:\n", made.ID, made.PrincipalName, made.Scope)
		fmt.Fprintln(stdout, made.Secret)
		return nil
	case "list":
		var list struct{ Tokens []store.Token }
		if err := c.Do(ctx, "GET", "/tokens", nil, &list); err != nil {
			return err
		}
		return printTokens(stdout, list.Tokens)
	case "revoke":
		if len(args) != 1 {
			return errors.New("token revoke: want one token id (see tack token list)")
		}
		var tok store.Token
		if err := c.Do(ctx, "DELETE", "/tokens/"+url.PathEscape(args[0]), nil, &tok); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s (%s)\n", tok.ID, tok.PrincipalName)
		return nil
	}
	return fmt.Errorf("token: unknown command %q; want create, list or revoke", cmd)
}
