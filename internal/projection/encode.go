package projection

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// The list is encoded on every todo_write for its row, its version in the
// history and the answer. encoding/json does it by reflection and, for each
// of an item's four times, formats the layout and scans Time.MarshalJSON's
// output again; these functions write the very bytes it writes (the tests
// compare them on random input), at a fraction of the cost.

// AppendItems appends items as encoding/json encodes them: as json.Marshal
// does when escapeHTML is set, else as an Encoder after SetEscapeHTML(false)
// (without its newline).
func AppendItems(b []byte, items []Item, escapeHTML bool) []byte {
	if items == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = AppendString(b, it.ID, escapeHTML)
		b = append(b, `,"content":`...)
		b = AppendString(b, it.Content, escapeHTML)
		b = append(b, `,"status":`...)
		b = AppendString(b, it.Status, escapeHTML)
		b = append(b, `,"updatedAt":`...)
		b = it.UpdatedAt.appendJSON(b)
		b = append(b, `,"createdAt":`...)
		b = it.CreatedAt.appendJSON(b)
		b = append(b, `,"startedAt":`...)
		b = appendTimePtr(b, it.StartedAt)
		b = append(b, `,"completedAt":`...)
		b = appendTimePtr(b, it.CompletedAt)
		b = append(b, '}')
	}
	return append(b, ']')
}

// AppendChanges appends changes as AppendItems appends items.
func AppendChanges(b []byte, changes []Change, escapeHTML bool) []byte {
	if changes == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, c := range changes {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = AppendString(b, c.ID, escapeHTML)
		b = append(b, `,"content":`...)
		b = AppendString(b, c.Content, escapeHTML)
		b = append(b, `,"from":`...)
		b = appendStringPtr(b, c.From, escapeHTML)
		b = append(b, `,"to":`...)
		b = appendStringPtr(b, c.To, escapeHTML)
		b = append(b, '}')
	}
	return append(b, ']')
}

// AppendCounts appends c as encoding/json encodes it.
func AppendCounts(b []byte, c Counts) []byte {
	b = append(b, `{"pending":`...)
	b = strconv.AppendInt(b, int64(c.Pending), 10)
	b = append(b, `,"inProgress":`...)
	b = strconv.AppendInt(b, int64(c.InProgress), 10)
	b = append(b, `,"completed":`...)
	b = strconv.AppendInt(b, int64(c.Completed), 10)
	return append(b, '}')
}

// AppendString appends s as a JSON string, as AppendItems does.
func AppendString(b []byte, s string, escapeHTML bool) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || escapeHTML && (c == '<' || c == '>' || c == '&') {
			return appendEscaped(b, s, escapeHTML)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendEscaped leaves a string with anything to escape, or any byte
// beyond ASCII, to encoding/json itself.
func appendEscaped(b []byte, s string, escapeHTML bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

func appendStringPtr(b []byte, s *string, escapeHTML bool) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return AppendString(b, *s, escapeHTML)
}

func appendTimePtr(b []byte, t *Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return t.appendJSON(b)
}

// appendJSON appends the time quoted, as MarshalJSON writes it.
func (t Time) appendJSON(b []byte) []byte {
	u := t.UTC()
	year, month, day := u.Date()
	if year < 0 || year > 9999 {
		return append(u.AppendFormat(append(b, '"'), TimeFormat), '"')
	}
	hour, minute, sec := u.Clock()
	ms := u.Nanosecond() / int(time.Millisecond)
	return append(b, '"',
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-',
		byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':',
		byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z', '"')
}
