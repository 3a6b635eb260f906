package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
)

// StaticConfig is a plain net/http server that answers every GET with the
// same bytes from memory: the floor an HTTP read can reach on the machine,
// that an external load generator measures Tack's reads against.
type StaticConfig struct {
	Addr        string
	Body        string // file whose bytes are the answer
	ContentType string
	ETag        string
}

// Static serves the bytes until ctx ends, printing its URL on out once it
// listens.
func Static(ctx context.Context, c StaticConfig, out io.Writer) error {
	body, err := os.ReadFile(c.Body)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	length := strconv.Itoa(len(body))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", c.ContentType)
		h.Set("Content-Length", length)
		if c.ETag != "" {
			h.Set("ETag", c.ETag)
		}
		_, _ = w.Write(body)
	})}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	fmt.Fprintf(out, "http://%s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
