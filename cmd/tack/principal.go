package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/location"
)

// runPrincipal is `tack principal create|list`, against the store the
// server uses: who uses the instance, and who of them is an admin (reads
// every session of the instance). The first principal, made by a fresh
// install's one-time link, is the admin named "admin".
func runPrincipal(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("principal: want create or list")
	}
	fs := flag.NewFlagSet("tack principal "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	loc := location.Flags(fs, getenv)
	name := fs.String("name", "", "the principal, created if new (create)")
	admin := fs.Bool("admin", false, "make it an admin, which reads every session of the instance; -admin=false makes it none (create)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var run func(st store.Store) error
	switch args[0] {
	case "create":
		adminSet := false
		fs.Visit(func(f *flag.Flag) { adminSet = adminSet || f.Name == "admin" })
		n, err := auth.CheckName(*name)
		if err != nil {
			return fmt.Errorf("principal create: %w", err)
		}
		run = func(st store.Store) error {
			p, created, err := st.EnsurePrincipal(ctx, n)
			if err != nil {
				return err
			}
			if adminSet {
				if err := st.SetAdmin(ctx, p.ID, *admin); err != nil {
					return err
				}
				p.Admin = *admin
			}
			verb := "exists"
			if created {
				verb = "created"
			}
			fmt.Fprintf(stdout, "%s %s (%s), admin: %t\n", verb, p.Name, p.ID, p.Admin)
			return nil
		}
	case "list":
		run = func(st store.Store) error {
			list, err := st.Principals(ctx)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tNAME\tADMIN\tCREATED")
			for _, p := range list {
				fmt.Fprintf(w, "%s\t%s\t%t\t%s\n", p.ID, p.Name, p.Admin, p.CreatedAt.Format("2006-01-02 15:04:05Z"))
			}
			return w.Flush()
		}
	default:
		return fmt.Errorf("principal: unknown command %q; want create or list", args[0])
	}
	st, err := loc.Open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	return run(st)
}
