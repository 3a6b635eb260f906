package main

import (
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/storetest"
)

// TestRedactEveryDSNForm feeds redact every form a DATABASE_URL takes: no
// secret may survive, and what is not secret stays readable.
func TestRedactEveryDSNForm(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ dsn, keep string }{
		{"postgres://u:s3cret@db:5432/tack", "db:5432/tack"},
		{"postgresql://u:s3cret@db/tack?sslmode=require", "sslmode=require"},
		{"postgres://u@db/tack?password=s3cret", "db/tack"},
		{"postgres://u@db/tack?sslmode=verify-full&sslpassword=s3cret", "sslmode=verify-full"},
		{"postgres://u@db/tack?PASSWORD=s3cret", "db/tack"},
		{"postgres://u:s3cret@db/tack?password=s3cret&sslpassword=s3cret", "db/tack"},
		{"host=db user=u password=s3cret dbname=tack", "host=db"},
		{"host=db password='s3 cret' dbname=tack", "dbname=tack"},
		{`host=db password='s3\'cret' dbname=tack`, "dbname=tack"},
		{"host=db password = s3cret dbname=tack", "dbname=tack"},
		{"host=db sslpassword=s3cret sslmode=require", "sslmode=require"},
		{"password=s3cret", ""},
		{"postgres://u:s3cret@db:notaport/tack", ""},
		{"host=db password='s3cret", ""},
	} {
		got := redact(c.dsn)
		if strings.Contains(got, "s3") || strings.Contains(got, "cret") {
			t.Errorf("redact(%q) = %q: the secret shows", c.dsn, got)
		}
		if !strings.Contains(got, c.keep) {
			t.Errorf("redact(%q) = %q, want it to keep %q", c.dsn, got, c.keep)
		}
	}
}

// TestStartLineRedactsEveryForm starts Tack with the password in the URL's
// user info, in its query and in a key=value DATABASE_URL: the start-up line
// must not print it.
func TestStartLineRedactsEveryForm(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{
		strings.Replace(storetest.SchemaURL(t), "postgres://postgres@", "postgres://postgres:s3cret@", 1),
		"postgres://postgres@127.0.0.1:5432/test?password=s3cret&sslmode=disable",
		"host=127.0.0.1 port=5432 user=postgres dbname=test password=s3cret sslmode=disable",
	} {
		var out storetest.LogBuffer
		_, stop := start(t, env(map[string]string{"DATABASE_URL": dsn}), &out)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), "s3cret") {
			t.Errorf("password printed:\n%s", out.String())
		}
	}
}
