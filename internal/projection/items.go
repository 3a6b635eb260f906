package projection

import (
	"encoding/json"
	"time"
	"unicode/utf8"
)

// DecodeItems decodes a stored todo list, the JSON array of items a store
// keeps in its projection row. Every todo/write reads the current list back
// to carry each unchanged item's updatedAt over, so this runs once per write:
// a list as stores write it (objects of the four string fields, no escapes
// but \" and \\) is read by a small scanner; anything else goes through
// encoding/json, which gives the same result.
func DecodeItems(raw []byte) ([]Item, error) {
	if items, ok := scanItems(raw); ok {
		return items, nil
	}
	var items []Item
	err := json.Unmarshal(raw, &items)
	return items, err
}

// scanItems is DecodeItems's fast path; ok is false for any input it does
// not fully understand, which is then decoded by encoding/json.
func scanItems(b []byte) (items []Item, ok bool) {
	i := 0
	ws := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
			i++
		}
	}
	// str reads a string without escapes other than \" and \\, whose
	// bytes are valid UTF-8 (json.Unmarshal would replace invalid bytes).
	str := func() (string, bool) {
		if i >= len(b) || b[i] != '"' {
			return "", false
		}
		start, escaped := i+1, false
		for i++; i < len(b); i++ {
			switch c := b[i]; {
			case c == '"':
				s := b[start:i]
				i++
				if escaped {
					return unescapeQuotes(s)
				}
				return string(s), utf8.Valid(s)
			case c == '\\':
				if i+1 >= len(b) || (b[i+1] != '"' && b[i+1] != '\\') {
					return "", false
				}
				escaped = true
				i++
			case c < 0x20:
				return "", false
			}
		}
		return "", false
	}
	ws()
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	i++
	items = []Item{}
	for {
		ws()
		if i < len(b) && b[i] == ']' && len(items) == 0 {
			i++
			break
		}
		if i >= len(b) || b[i] != '{' {
			return nil, false
		}
		i++
		var it Item
		var seen [4]bool
		for {
			ws()
			key, ok := str()
			if !ok {
				return nil, false
			}
			ws()
			if i >= len(b) || b[i] != ':' {
				return nil, false
			}
			i++
			ws()
			val, ok := str()
			if !ok {
				return nil, false
			}
			switch key {
			case "id":
				it.ID, seen[0] = val, true
			case "content":
				it.Content, seen[1] = val, true
			case "status":
				it.Status, seen[2] = val, true
			case "updatedAt":
				t, err := time.Parse(time.RFC3339Nano, val)
				if err != nil {
					return nil, false
				}
				it.UpdatedAt, seen[3] = NewTime(t), true
			default:
				return nil, false
			}
			ws()
			if i < len(b) && b[i] == ',' {
				i++
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return nil, false
		}
		if seen != [4]bool{true, true, true, true} {
			return nil, false
		}
		items = append(items, it)
		ws()
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		if i < len(b) && b[i] == ']' {
			i++
			break
		}
		return nil, false
	}
	ws()
	return items, i == len(b)
}

func unescapeQuotes(s []byte) (string, bool) {
	out := make([]byte, 0, len(s))
	for j := 0; j < len(s); j++ {
		if s[j] == '\\' {
			j++
		}
		out = append(out, s[j])
	}
	return string(out), utf8.Valid(out)
}
