package projection

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// Blank reports whether s shows nothing: only white space and invisible
// characters (zero-width spaces and joiners, word joiners, byte order marks,
// variation selectors, fillers: the format characters and the default
// ignorable code points).
func Blank(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) && !unicode.In(r, unicode.Cf, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector) {
			return false
		}
	}
	return true
}

// OneLine reports whether s, trimmed, is one line without control
// characters: the rule of a todo's content, and of a session's title.
func OneLine(s string) bool { return strings.IndexFunc(strings.TrimSpace(s), breaksLine) < 0 }

// breaksLine reports a rune that content may not hold once trimmed: a
// control character (C0 and C1, line breaks and tabs among them) or a line
// or paragraph separator. Each would let content forge lines of todo_read's
// one-item-per-line text.
func breaksLine(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
}

// unstorable names what a compact JSON text holds that a store cannot keep:
// a NUL character (Postgres text and jsonb refuse it) or a number Postgres
// numeric cannot hold. It returns "" when there is neither. Unpaired UTF-16
// surrogate escapes never reach it: object refuses them first. Backslashes
// occur only inside strings in valid JSON, so no string tracking is needed.
func unstorable(raw []byte) string {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if i+5 < len(raw) && raw[i+1] == 'u' && string(raw[i+2:i+6]) == "0000" {
			return "NUL characters"
		}
		i++ // skip the escaped character, so that \\u0000 is no NUL
	}
	return numbersFit(raw)
}

// numbersFit reports a number in a JSON text that Postgres numeric (jsonb)
// cannot hold, such as 1e131072 or 1e-16384, or "" when every number is at
// most 100 characters with an exponent within ±1000.
func numbersFit(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		n, ok := tok.(json.Number)
		if !ok {
			continue
		}
		bad := len(n) > 100
		if _, exp, found := strings.Cut(strings.ToLower(string(n)), "e"); found && !bad {
			e, err := strconv.Atoi(exp)
			bad = err != nil || e > 1000 || e < -1000
		}
		if bad {
			return "numbers longer than 100 characters or with an exponent beyond ±1000"
		}
	}
}

// lazyRegexp is a regular expression compiled on its first use rather
// than at init: a process that links projection and never uses it (a
// hook, which runs on every tool call) does not pay for compiling it.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
