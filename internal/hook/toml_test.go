package hook

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// FuzzTOMLTable: whatever the file, setting Tack's table either refuses
// or keeps every line of a file that had none, in order; setting it
// again changes nothing; removing it leaves no trace of it.
func FuzzTOMLTable(f *testing.F) {
	for _, seed := range []string{
		"",
		"a = 1\n",
		"# c\n[mcp_servers.other]\ncommand = \"x\" # y\nargs = [\n  \"a\",\n  [1, 2],\n]\n",
		"s = \"\"\"\n[mcp_servers.tack]\n\"\"\"\n",
		"s = '''\n[mcp_servers.tack]\n'''\n[x]\n",
		"[mcp_servers.tack]\nurl = \"u\"\n\n[mcp_servers.tack.env]\nA = \"b\"\n",
		"[mcp_servers . \"tack\"]\nurl = 'u'\n",
		"a = { b = [\n1] }\r\n[t]\r\n",
		"[mcp_servers]\ntack = {}\n",
	} {
		f.Add(seed)
	}
	name := []string{"mcp_servers", "tack"}
	entries := []tomlEntry{{"url", `"http://127.0.0.1:8080/mcp"`}, {"default_tools_approval_mode", `"approve"`}, {"http_headers", `{ Authorization = "Bearer t" }`}}
	f.Fuzz(func(t *testing.T, in string) {
		doc := parseTOML([]byte(in))
		start, _, err := doc.table(name)
		set, err2 := setTable([]byte(in), name, entries)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("table: %v, setTable: %v", err, err2)
		}
		if err2 != nil {
			return
		}
		if again, err := setTable(set, name, entries); err != nil || !bytes.Equal(again, set) {
			t.Fatalf("a second set changed %q to %q (%v)", set, again, err)
		}
		if start < 0 && !isSubsequence(lines(string(doc.bytes())), lines(string(set))) {
			t.Fatalf("set lost lines of %q: %q", in, set)
		}
		s, _, err := parseTOML(set).table(name)
		if err != nil || s < 0 {
			t.Fatalf("no table after set: %q (%v)", set, err)
		}
		removed, err := removeTable(set, name)
		if err != nil {
			t.Fatal(err)
		}
		if s, _, err := parseTOML(removed).table(name); s >= 0 || err != nil {
			t.Fatalf("the table is still in %q (%v)", removed, err)
		}
		// Without a table of Tack's before (nor one under it, which remove
		// takes too), set then remove gives back the file.
		if start < 0 && !slices.ContainsFunc(doc.lines, func(l tomlLine) bool { return l.header != nil && hasPrefix(l.header, name) }) &&
			!slices.Equal(lines(string(removed)), lines(string(doc.bytes()))) {
			t.Fatalf("set then remove: %q, want %q", removed, doc.bytes())
		}
	})
}

// lines are s's lines but the blank ones at its end, which an added table
// takes the place of.
func lines(s string) []string {
	l := strings.Split(s, "\n")
	for len(l) > 0 && strings.TrimSpace(l[len(l)-1]) == "" {
		l = l[:len(l)-1]
	}
	return l
}

func isSubsequence(sub, of []string) bool {
	i := 0
	for _, l := range of {
		if i < len(sub) && sub[i] == l {
			i++
		}
	}
	return i == len(sub)
}
