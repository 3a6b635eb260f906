package importer

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Import syncs each transcript into its Tack sessions, whole, and prints
// one line per file to w. A directory stands for the transcripts (*.jsonl)
// under it, each session's before its subagents', so a child finds its
// parent made and titled. It goes on past a file that fails and reports
// the first failure at the end.
func Import(ctx context.Context, c *Client, paths []string, w io.Writer) error {
	var first error
	fail := func(path string, err error) {
		fmt.Fprintf(w, "%s: %v\n", path, err)
		if first == nil {
			first = fmt.Errorf("%s: %w", path, err)
		}
	}
	for _, arg := range paths {
		files, err := Transcripts(arg)
		if err != nil {
			fail(arg, err)
			continue
		}
		if len(files) == 0 {
			fmt.Fprintf(w, "%s: no transcripts (*.jsonl) under it\n", arg)
		}
		for _, path := range files {
			if err := ctx.Err(); err != nil {
				return err // interrupted: the files not reached yet are left alone
			}
			t, err := Open(c, path)
			if err == nil {
				err = t.Sync(ctx, true)
			}
			if err != nil {
				fail(path, err)
				continue
			}
			fmt.Fprintln(w, t.Report())
		}
	}
	return first
}

// Transcripts is path itself when it is a file, or the transcripts under
// it when it is a directory: those of top-level sessions first, then the
// subagents' (agent-*.jsonl, subagents/), each group in path order.
func Transcripts(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && IsTranscript(p) {
			files = append(files, p)
		}
		return nil
	})
	sort.SliceStable(files, func(i, j int) bool {
		si, sj := IsSubagent(files[i]), IsSubagent(files[j])
		if si != sj {
			return !si
		}
		return files[i] < files[j]
	})
	return files, err
}

// IsTranscript reports whether path names a transcript file by its name.
func IsTranscript(path string) bool { return strings.HasSuffix(path, ".jsonl") }

// IsSubagent reports whether path is a Claude Code subagent's own file.
func IsSubagent(path string) bool {
	return strings.HasPrefix(filepath.Base(path), "agent-") || filepath.Base(filepath.Dir(path)) == "subagents"
}
