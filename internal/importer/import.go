package importer

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Import syncs each file into its Tack session, whole, and prints one line
// per file to w. It goes on past a file that fails and reports the first
// failure at the end.
func Import(ctx context.Context, c *Client, paths []string, w io.Writer) error {
	var first error
	for _, path := range paths {
		t, err := Open(c, path)
		if errors.Is(err, errEmpty) {
			fmt.Fprintf(w, "%s: empty, nothing to import\n", path)
			continue
		}
		if err == nil {
			err = t.Sync(ctx, true)
			t.Close()
		}
		if err != nil {
			fmt.Fprintf(w, "%s: %v\n", path, err)
			if first == nil {
				first = fmt.Errorf("%s: %w", path, err)
			}
			continue
		}
		fmt.Fprintln(w, t.Report())
	}
	return first
}
