package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Change is what Install, Uninstall, Connect or Disconnect did to one
// file.
type Change struct {
	// Path is the file.
	Path string
	// Changed is false when the file already was as asked: nothing written.
	Changed bool
	// Backup is the copy of the file as it was, "" when none was made
	// (nothing changed, or there was no file).
	Backup string
	// Diff is the change, line by line ("-" removed, "+" added).
	Diff string
}

// A fileEdit is one file's new content, worked out before any file is
// written: Connect changes several files, and one it cannot read must
// leave all of them as they were.
type fileEdit struct {
	path string
	old  []byte // nil when there was no file
	mode fs.FileMode
	new  []byte // nil when nothing changes
}

// prepare reads path and works out its new content with change, which
// is given the file's bytes (nil for no file) and answers nil to leave
// the file as it is.
func prepare(path string, change func(old []byte) ([]byte, error)) (fileEdit, error) {
	e := fileEdit{path: path, mode: 0o600}
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return e, err
	default:
		e.old = old
		if info, err := os.Stat(path); err == nil {
			e.mode = info.Mode().Perm()
		}
	}
	e.new, err = change(e.old)
	return e, err
}

// apply writes the edit, after a copy of the file as it was beside it,
// and answers what changed.
func (e fileEdit) apply() (Change, error) {
	if e.new == nil {
		return Change{Path: e.path}, nil
	}
	ch := Change{Path: e.path, Changed: true, Diff: lineDiff(string(e.old), string(e.new))}
	if e.old != nil {
		ch.Backup = e.path + ".bak-" + time.Now().UTC().Format("20060102T150405.000")
		if err := os.WriteFile(ch.Backup, e.old, e.mode); err != nil {
			return Change{}, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(e.path), 0o755); err != nil {
		return Change{}, err
	}
	tmp := e.path + ".tack-tmp"
	if err := os.WriteFile(tmp, e.new, e.mode); err != nil {
		return Change{}, err
	}
	return ch, os.Rename(tmp, e.path)
}

// applyAll applies every edit, in order, after all were worked out.
func applyAll(edits []fileEdit) ([]Change, error) {
	var out []Change
	for _, e := range edits {
		ch, err := e.apply()
		if err != nil {
			return out, err
		}
		out = append(out, ch)
	}
	return out, nil
}

// editJSON is a change of a JSON settings file's top-level object.
func editJSON(path string, change func(d *jsonDoc) error) (fileEdit, error) {
	return prepare(path, func(old []byte) ([]byte, error) {
		d, err := parseJSONDoc(old)
		if err != nil {
			return nil, fmt.Errorf("%s is not a JSON object: %w", path, err)
		}
		if err := change(d); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return d.encode()
	})
}

// jsonDoc is a JSON file's top-level object that keeps its keys in the
// file's order and every value it does not change as the file had it:
// ~/.claude.json is Claude Code's own state, and rewriting it sorted would
// show as a change of the whole file.
type jsonDoc struct {
	keys []string
	raw  map[string]json.RawMessage
	vals map[string]any // the values got or set, decoded
}

func parseJSONDoc(data []byte) (*jsonDoc, error) {
	d := &jsonDoc{raw: map[string]json.RawMessage{}, vals: map[string]any{}}
	if len(bytes.TrimSpace(data)) == 0 {
		return d, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("the file does not hold an object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := t.(string) // an object's tokens before each value are its keys
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if _, seen := d.raw[key]; !seen {
			d.keys = append(d.keys, key)
		}
		d.raw[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more follows the object")
	}
	return d, nil
}

// get is key's value decoded (numbers as json.Number, so none is
// rounded), nil when absent.
func (d *jsonDoc) get(key string) (any, error) {
	if v, ok := d.vals[key]; ok {
		return v, nil
	}
	raw, ok := d.raw[key]
	if !ok {
		return nil, nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	d.vals[key] = v
	return v, nil
}

// object is key's object, which changes in place; an absent key is an
// empty object, dropped again if it stays empty.
func (d *jsonDoc) object(key string) (map[string]any, error) {
	v, err := d.get(key)
	if err != nil {
		return nil, err
	}
	if v == nil {
		m := map[string]any{}
		d.vals[key] = m
		return m, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("`%s` is not an object", key)
	}
	return m, nil
}

// set gives key a value; nil removes the key.
func (d *jsonDoc) set(key string, v any) {
	d.vals[key] = v
}

// encode is the file with its changes, nil when there are none. A key
// whose value a change left an empty object or list, or nil, is left out.
func (d *jsonDoc) encode() ([]byte, error) {
	var added []string
	for key := range d.vals {
		if _, ok := d.raw[key]; !ok {
			added = append(added, key)
		}
	}
	slices.Sort(added) // a stable order: the one Go's maps give is not
	keys := append(slices.Clone(d.keys), added...)
	changed := false
	var out bytes.Buffer
	out.WriteString("{\n")
	n := 0
	for _, key := range keys {
		text, keep, err := d.value(key)
		if err != nil {
			return nil, err
		}
		if !keep {
			_, was := d.raw[key]
			changed = changed || was
			continue
		}
		if text == nil {
			text = d.raw[key]
		} else {
			changed = true
		}
		if n > 0 {
			out.WriteString(",\n")
		}
		n++
		k, _ := marshal(key, "")
		fmt.Fprintf(&out, "  %s: %s", k, text)
	}
	if !changed {
		return nil, nil
	}
	if n == 0 {
		return []byte("{}\n"), nil
	}
	out.WriteString("\n}\n")
	return out.Bytes(), nil
}

// value is key's text in the file: nil to keep the file's own, or its
// new text; keep is false when the key is to go.
func (d *jsonDoc) value(key string) (text []byte, keep bool, err error) {
	v, touched := d.vals[key]
	if !touched {
		return nil, true, nil
	}
	now, err := marshal(v, "")
	if err != nil {
		return nil, false, err
	}
	if raw, ok := d.raw[key]; ok {
		was, err := decodeJSON(raw)
		if err != nil {
			return nil, false, err
		}
		if before, _ := marshal(was, ""); bytes.Equal(before, now) {
			return nil, true, nil
		}
	}
	if empty(v) {
		return nil, false, nil
	}
	text, err = marshal(v, "  ")
	return text, true, err
}

func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// marshal is v as JSON, indented two spaces a level after prefix when
// prefix is not "", without escaping <, > and & as HTML.
func marshal(v any, prefix string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if prefix != "" {
		enc.SetIndent(prefix, "  ")
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// lineDiff is a line diff of a and b: the lines of a not kept marked "-",
// those of b added marked "+", two lines of context around each change.
// The lines both begin and end with are set aside before the quadratic
// part: ~/.claude.json runs to thousands of lines, and a change is a few.
func lineDiff(a, b string) string {
	x, y := splitLines(a), splitLines(b)
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	post := 0
	for post < len(x)-pre && post < len(y)-pre && x[len(x)-1-post] == y[len(y)-1-post] {
		post++
	}
	type line struct {
		mark byte
		text string
	}
	var lines []line
	for _, l := range x[:pre] {
		lines = append(lines, line{' ', l})
	}
	mx, my := x[pre:len(x)-post], y[pre:len(y)-post]
	// lcs[i][j] is the longest common subsequence of mx[i:] and my[j:].
	lcs := make([][]int, len(mx)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(my)+1)
	}
	for i := len(mx) - 1; i >= 0; i-- {
		for j := len(my) - 1; j >= 0; j-- {
			if mx[i] == my[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(mx) || j < len(my) {
		switch {
		case i < len(mx) && j < len(my) && mx[i] == my[j]:
			lines = append(lines, line{' ', mx[i]})
			i, j = i+1, j+1
		case j < len(my) && (i == len(mx) || lcs[i][j+1] >= lcs[i+1][j]):
			lines = append(lines, line{'+', my[j]})
			j++
		default:
			lines = append(lines, line{'-', mx[i]})
			i++
		}
	}
	for _, l := range x[len(x)-post:] {
		lines = append(lines, line{' ', l})
	}
	var out strings.Builder
	for k, l := range lines {
		near := false
		for d := max(0, k-2); d <= min(len(lines)-1, k+2); d++ {
			near = near || lines[d].mark != ' '
		}
		if near {
			fmt.Fprintf(&out, "%c %s\n", l.mark, l.text)
		}
	}
	return out.String()
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
