package projection

import (
	"strconv"
	"time"
	"unicode/utf8"
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
		b = appendOptional(b, `,"activeForm":`, it.ActiveForm, escapeHTML)
		if len(it.BlockedBy) > 0 {
			b = append(b, `,"blockedBy":[`...)
			for j, id := range it.BlockedBy {
				if j > 0 {
					b = append(b, ',')
				}
				b = AppendString(b, id, escapeHTML)
			}
			b = append(b, ']')
		}
		b = appendOptional(b, `,"owner":`, it.Owner, escapeHTML)
		b = appendOptional(b, `,"taskId":`, it.TaskID, escapeHTML)
		b = appendOptional(b, `,"description":`, it.Description, escapeHTML)
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

// AppendString appends s as a JSON string, as AppendItems does: as
// encoding/json writes it, byte for byte (TestEncodersMatchEncodingJSON,
// FuzzEncoders). Bytes that are not UTF-8 become U+FFFD; U+2028 and U+2029
// are escaped, as are <, > and & when escapeHTML is set.
func AppendString(b []byte, s string, escapeHTML bool) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!escapeHTML || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendOptional appends key and s, as encoding/json writes a field with
// omitempty: nothing when s is "".
func appendOptional(b []byte, key, s string, escapeHTML bool) []byte {
	if s == "" {
		return b
	}
	return AppendString(append(b, key...), s, escapeHTML)
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
