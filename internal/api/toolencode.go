package api

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/tack-dev/tack/internal/projection"
)

// appendToolOK appends the answer of a successful tool call, byte for byte
// what writeJSON makes of toolResult (HTML escaping off, a final newline),
// without reflection: it is written on every todo_write and todo_read, where
// encoding/json was a twentieth of the server's CPU (docs/performance.md).
// TestAppendToolOK holds it to writeJSON's output.
func appendToolOK(b []byte, text string, t projection.Todos) []byte {
	b = append(b, `{"isError":false,"content":`...)
	b = appendJSONString(b, text)
	b = append(b, `,"result":{"todos":`...)
	if t.Todos == nil { // never from a store, which always lists; as encoding/json would
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
	}
	for i, it := range t.Todos {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendJSONString(b, it.ID)
		b = append(b, `,"content":`...)
		b = appendJSONString(b, it.Content)
		b = append(b, `,"status":`...)
		b = appendJSONString(b, it.Status)
		b = append(b, `,"updatedAt":"`...)
		b = it.UpdatedAt.UTC().AppendFormat(b, projection.TimeFormat)
		b = append(b, `"}`...)
	}
	if t.Todos != nil {
		b = append(b, ']')
	}
	b = append(b, `,"counts":{"pending":`...)
	b = strconv.AppendInt(b, int64(t.Counts.Pending), 10)
	b = append(b, `,"inProgress":`...)
	b = strconv.AppendInt(b, int64(t.Counts.InProgress), 10)
	b = append(b, `,"completed":`...)
	b = strconv.AppendInt(b, int64(t.Counts.Completed), 10)
	b = append(b, `}},"version":`...)
	b = strconv.AppendInt(b, t.Version, 10)
	return append(b, "}\n"...)
}

// appendJSONString appends s as a JSON string the way encoding/json does
// with HTML escaping off. Strings that need no escape, the common case, are
// copied; any other goes through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' {
				return appendJSONStringSlow(b, s)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
			return appendJSONStringSlow(b, s)
		}
		i += size
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendJSONStringSlow(b []byte, s string) []byte {
	var buf jsonStringBuffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return append(b, buf[:len(buf)-1]...) // without Encode's newline
}

type jsonStringBuffer []byte

func (j *jsonStringBuffer) Write(p []byte) (int, error) {
	*j = append(*j, p...)
	return len(p), nil
}
