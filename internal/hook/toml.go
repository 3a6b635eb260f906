package hook

import (
	"fmt"
	"slices"
	"strings"
)

// codex's config.toml is the user's, comments and all, and only Tack's
// table in it is Tack's to change: so it is edited line by line, never
// decoded and written back (which would drop every comment). The lines
// are read just far enough to know which begin a table, which set a key,
// and which continue a string or an array begun above.

// tomlLine is one line of a TOML file.
type tomlLine struct {
	text string // without its line ending
	// structural is true when the line starts outside any string, array
	// or inline table: only such a line can open a table or set a key.
	structural bool
	// header is the table a structural "[a.b]" or "[[a.b]]" line opens,
	// nil for other lines; array is true for "[[…]]".
	header []string
	array  bool
	// key is the dotted key a structural "a.b = …" line sets, and value
	// the text after "=" up to a comment, trimmed.
	key   []string
	value string
}

// tomlDoc is a TOML file as lines.
type tomlDoc struct {
	// lines are split at "\n": a line of a CRLF file keeps its "\r".
	lines []tomlLine
	cr    string // "\r" when the file's first line ends "\r\n": its lines' ending
	// unclosed is true when the file ends inside a string or an array:
	// not TOML, and a table added at its end would be inside it.
	unclosed bool
}

func parseTOML(data []byte) tomlDoc {
	text := string(data)
	var d tomlDoc
	if i := strings.IndexByte(text, '\n'); i > 0 && text[i-1] == '\r' {
		d.cr = "\r"
	}
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return d
	}
	var s tomlScanner
	for _, line := range strings.Split(text, "\n") {
		l := tomlLine{text: line, structural: s.open()}
		comment := s.scan(line + "\n")
		if l.structural {
			l.header, l.array, l.key, l.value = readStructural(line[:comment])
		}
		d.lines = append(d.lines, l)
	}
	d.unclosed = !s.open()
	return d
}

// line is a new line of the file: text with the file's line ending.
func (d tomlDoc) line(text string) tomlLine {
	l := tomlLine{text: text + d.cr, structural: true}
	l.header, l.array, l.key, l.value = readStructural(text)
	return l
}

func (d tomlDoc) bytes() []byte {
	var b strings.Builder
	for _, l := range d.lines {
		b.WriteString(l.text)
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// tomlScanner follows the strings, arrays and inline tables a line leaves
// open for the next one.
type tomlScanner struct {
	quote string // the open string's delimiter: ", ', """ or '''
	depth int    // open [ and {
}

func (s *tomlScanner) open() bool { return s.quote == "" && s.depth == 0 }

// scan reads one line, its "\n" included, and answers where its comment
// begins (the line's length when it has none).
func (s *tomlScanner) scan(text string) int {
	comment := len(text) - 1
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch s.quote {
		case "":
			switch {
			case c == '#':
				return i // the comment runs to the end of the line
			case c == '"' || c == '\'':
				s.quote = string(c)
				if strings.HasPrefix(text[i:], strings.Repeat(string(c), 3)) {
					s.quote = strings.Repeat(string(c), 3)
					i += 2
				}
			case c == '[' || c == '{':
				s.depth++
			case c == ']' || c == '}':
				s.depth = max(0, s.depth-1)
			}
		case `"`, `"""`:
			switch {
			case c == '\\':
				i++
			case c == '\n' && s.quote == `"`:
				s.quote = "" // a basic string ends with its line
			case strings.HasPrefix(text[i:], s.quote):
				i += len(s.quote) - 1
				s.quote = ""
			}
		default: // ' and '''
			switch {
			case c == '\n' && s.quote == "'":
				s.quote = ""
			case strings.HasPrefix(text[i:], s.quote):
				i += len(s.quote) - 1
				s.quote = ""
			}
		}
	}
	return comment
}

// readStructural reads what a line (its comment cut off) that starts
// outside any value opens or sets: a table header, or a key and its value;
// nothing for a blank line, or one it cannot read.
func readStructural(line string) (header []string, array bool, key []string, value string) {
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "[") {
		array = strings.HasPrefix(t, "[[")
		t = strings.TrimPrefix(strings.TrimPrefix(t, "["), "[")
		path, rest, ok := readKey(t)
		if ok && strings.HasPrefix(strings.TrimSpace(rest), "]") {
			return path, array, nil, ""
		}
		return nil, false, nil, ""
	}
	path, rest, ok := readKey(t)
	rest = strings.TrimSpace(rest)
	if !ok || !strings.HasPrefix(rest, "=") {
		return nil, false, nil, ""
	}
	return nil, false, path, strings.TrimSpace(rest[1:])
}

// readKey reads a dotted key (bare, "basic" or 'literal' parts) at the
// start of t, and what follows it.
func readKey(t string) (path []string, rest string, ok bool) {
	for {
		t = strings.TrimLeft(t, " \t")
		var part string
		switch {
		case strings.HasPrefix(t, `"`):
			end := 1
			var b strings.Builder
			for end < len(t) && t[end] != '"' {
				if t[end] == '\\' && end+1 < len(t) {
					end++
				}
				b.WriteByte(t[end])
				end++
			}
			if end >= len(t) {
				return nil, "", false
			}
			part, t = b.String(), t[end+1:]
		case strings.HasPrefix(t, "'"):
			end := strings.IndexByte(t[1:], '\'')
			if end < 0 {
				return nil, "", false
			}
			part, t = t[1:end+1], t[end+2:]
		default:
			end := strings.IndexFunc(t, func(r rune) bool {
				return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
			})
			if end < 0 {
				end = len(t)
			}
			if end == 0 {
				return nil, "", false
			}
			part, t = t[:end], t[end:]
		}
		path = append(path, part)
		t = strings.TrimLeft(t, " \t")
		if !strings.HasPrefix(t, ".") {
			return path, t, true
		}
		t = t[1:]
	}
}

// tomlEntry is one key of Tack's table and its value as TOML text; an
// empty value means the key must not be there.
type tomlEntry struct{ key, value string }

// table finds the table name: the index of its header line and of the
// next header (or the end), -1, -1 when there is none. It refuses a file that defines the table otherwise (a dotted
// key, an inline table, an array of tables), or twice: no line edit of
// such a file would be safe.
func (d tomlDoc) table(name []string) (start, end int, err error) {
	start, end = -1, -1
	if d.unclosed {
		return 0, 0, fmt.Errorf("the file ends inside a string or an array")
	}
	var current []string // the table the line is in
	for i, l := range d.lines {
		if !l.structural {
			continue
		}
		if l.header != nil {
			current = l.header
			if end == -1 && start >= 0 {
				end = i
			}
			if slices.Equal(l.header, name) && !l.array {
				if start >= 0 {
					return 0, 0, fmt.Errorf("[%s] appears twice", strings.Join(name, "."))
				}
				start = i
			} else if l.array && (hasPrefix(l.header, name) || hasPrefix(name, l.header)) {
				return 0, 0, fmt.Errorf("[[%s]] holds %s: edit it by hand", strings.Join(l.header, "."), strings.Join(name, "."))
			}
			continue
		}
		if l.key == nil || hasPrefix(current, name) {
			continue
		}
		full := append(slices.Clone(current), l.key...)
		if hasPrefix(full, name) || hasPrefix(name, full) {
			return 0, 0, fmt.Errorf("%s is set by the key %q, not as a table [%s]: edit it by hand", strings.Join(name, "."), strings.TrimSpace(l.text), strings.Join(name, "."))
		}
	}
	if start >= 0 && end == -1 {
		end = len(d.lines)
	}
	return start, end, nil
}

func hasPrefix(path, prefix []string) bool {
	return len(path) >= len(prefix) && slices.Equal(path[:len(prefix)], prefix)
}

// setTable makes table name hold the entries: each key set as given (or
// taken out when its value is ""), every other key, comment and table of
// the file as it was. A table not there is added at the end.
func setTable(data []byte, name []string, entries []tomlEntry) ([]byte, error) {
	d := parseTOML(data)
	start, end, err := d.table(name)
	if err != nil {
		return nil, err
	}
	if start < 0 {
		lines := d.lines
		for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1].text) == "" {
			lines = lines[:len(lines)-1]
		}
		if len(lines) > 0 {
			lines = append(lines, d.line(""))
		}
		lines = append(lines, d.line("["+tomlKey(name)+"]"))
		for _, e := range entries {
			if e.value != "" {
				lines = append(lines, d.line(e.key+" = "+e.value))
			}
		}
		d.lines = lines
		return d.bytes(), nil
	}
	block := slices.Clone(d.lines[start+1 : end])
	for _, e := range entries {
		at := slices.IndexFunc(block, func(l tomlLine) bool { return l.structural && slices.Equal(l.key, []string{e.key}) })
		switch {
		case at >= 0 && e.value == "":
			n := 1 // the key's line, and those its value goes on over
			for at+n < len(block) && !block[at+n].structural {
				n++
			}
			block = slices.Delete(block, at, at+n)
		case at >= 0 && block[at].value != e.value:
			block[at] = d.line(e.key + " = " + e.value)
		case at < 0 && e.value != "":
			// After the table's last line that is neither blank nor a
			// comment: those at its end belong to what follows.
			last := len(block)
			for last > 0 && block[last-1].structural && block[last-1].key == nil {
				last--
			}
			block = slices.Insert(block, last, d.line(e.key+" = "+e.value))
		}
	}
	d.lines = slices.Concat(d.lines[:start+1], block, d.lines[end:])
	return d.bytes(), nil
}

// removeTable takes table name out, with the tables under it
// ([name.env]…): every line from its header up to its last key, and a
// blank line that parted it from what came before, so that adding a
// table and removing it leaves the file as it was.
func removeTable(data []byte, name []string) ([]byte, error) {
	d := parseTOML(data)
	for {
		start, end, err := d.table(name)
		if err != nil {
			return nil, err
		}
		if start < 0 {
			// A table under name with no [name] of its own.
			start = slices.IndexFunc(d.lines, func(l tomlLine) bool { return l.header != nil && hasPrefix(l.header, name) })
			if start < 0 {
				return d.bytes(), nil
			}
			end = start + 1
			for end < len(d.lines) && d.lines[end].header == nil {
				end++
			}
		}
		last := end // comments and blank lines at the table's end stay, with what follows
		for last > start+1 && d.lines[last-1].structural && d.lines[last-1].key == nil && d.lines[last-1].header == nil {
			last--
		}
		after := last
		if start > 0 && strings.TrimSpace(d.lines[start-1].text) == "" {
			// One blank line parts it from what came before: keep that
			// one, not also those after the table.
			for after < len(d.lines) && strings.TrimSpace(d.lines[after].text) == "" {
				after++
			}
			if after == len(d.lines) {
				for start > 0 && strings.TrimSpace(d.lines[start-1].text) == "" {
					start--
				}
			}
		}
		d.lines = slices.Delete(d.lines, start, after)
	}
}

// tomlKey is a dotted key, each part bare when it may be.
func tomlKey(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = p
		if p == "" || strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			parts[i] = tomlString(p)
		}
	}
	return strings.Join(parts, ".")
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
