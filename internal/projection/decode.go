package projection

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tack-dev/tack/internal/strictjson"
)

// object decodes data as a JSON object and checks its keys: every required key
// present, nothing outside required and optional. A missing data is {}.
// The data is first held to strictjson's rule, nested values included: no
// key given twice and text that is valid UTF-8 everywhere, so nothing below
// ever decodes a string that json.Unmarshal would rewrite to U+FFFD.
func object(what string, data json.RawMessage, required, optional []string) (map[string]json.RawMessage, *Error) {
	if len(bytes.TrimSpace(data)) != 0 {
		var se *strictjson.Error
		if errors.As(strictjson.Check(data), &se) {
			switch se.Problem {
			case strictjson.Duplicate:
				return nil, invalidf("%s has the key `%s` twice%s", what, se.Key, se.Where())
			case strictjson.BadText:
				return nil, invalidf("%s must be valid UTF-8, without lone surrogate escapes%s", what, se.Where())
			}
			return nil, invalidf("%s must be a JSON object", what)
		}
	}
	return fields(what, data, required, optional)
}

// fields is object without strictjson's check, for a value inside data that
// object has already held to it.
func fields(what string, data json.RawMessage, required, optional []string) (map[string]json.RawMessage, *Error) {
	m := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(data)) != 0 {
		if err := json.Unmarshal(data, &m); err != nil || m == nil {
			return nil, invalidf("%s must be a JSON object", what)
		}
	}
	return m, checkKeys(what, m, required, optional)
}

// checkKeys checks the keys of an object m: every required key present,
// nothing outside required and optional.
func checkKeys(what string, m map[string]json.RawMessage, required, optional []string) *Error {
	for k := range m {
		if !slices.Contains(required, k) && !slices.Contains(optional, k) {
			return invalidf("%s has an unexpected key `%s`", what, k)
		}
	}
	for _, k := range required {
		if _, ok := m[k]; !ok {
			return invalidf("%s is missing `%s`", what, k)
		}
	}
	return nil
}

// isNull reports whether b is the JSON null.
func isNull(b json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(b), []byte("null")) }

func stringField(what string, m map[string]json.RawMessage, key string, maxBytes int, nonEmpty bool) (string, *Error) {
	var s string
	if err := json.Unmarshal(m[key], &s); err != nil || isNull(m[key]) {
		return "", invalidf("%s: `%s` must be a string", what, key)
	}
	if nonEmpty && strings.TrimSpace(s) == "" {
		return "", invalidf("%s: `%s` must be a non-empty string", what, key)
	}
	if strings.ContainsRune(s, 0) {
		return "", invalidf("%s: `%s` must not contain NUL characters", what, key)
	}
	if len(s) > maxBytes {
		return "", invalidf("%s: `%s` is longer than the limit of %d bytes", what, key, maxBytes)
	}
	return s, nil
}

// decodeString decodes a JSON value that an earlier decode has validated as
// a string, reporting false when it is not one. A string without escapes is
// its bytes between the quotes when they are valid UTF-8 (json.Unmarshal
// would replace invalid bytes); anything else goes through json.Unmarshal.
func decodeString(raw json.RawMessage) (string, bool) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' &&
		bytes.IndexByte(raw[1:n-1], '\\') < 0 && utf8.Valid(raw[1:n-1]) {
		return string(raw[1 : n-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
