// Package strictjson decodes request bodies by the one rule Tack holds
// every body to: exactly one JSON value, keys matched exactly (case
// included) and never given twice, and text that is valid UTF-8 (no
// invalid bytes, no lone surrogate escapes) in every string, keys and
// nested values included. Nothing is guessed at or rewritten to U+FFFD.
//
// It wraps github.com/go-json-experiment/json (encoding/json/v2), whose
// defaults are exactly these rules.
package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Problem is what is wrong with a body.
type Problem int

// The problems Check and Unmarshal report.
const (
	Malformed  Problem = iota // not JSON, or cut short
	Trailing                  // more after the one value
	Duplicate                 // a key given twice in one object
	BadText                   // invalid UTF-8 or a lone surrogate escape
	UnknownKey                // a key the shape does not have (Unmarshal only)
	WrongType                 // a value of another type (Unmarshal only)
)

// Error says what is wrong and where. Message reads on its own; Pointer
// (RFC 6901, "" for the whole body) and Key locate it.
type Error struct {
	Problem Problem
	Pointer string
	Key     string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Where is " at " and the pointer of where the problem is — for a key given
// twice, the object holding it — or "" for the whole body: the ending of a
// message that names the place.
func (e *Error) Where() string {
	if e.Problem == Duplicate {
		return at(parent(e.Pointer))
	}
	return at(e.Pointer)
}

// Check reports whether data is one JSON value by the rule.
func Check(data []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	if err := dec.SkipValue(); err != nil {
		return describe(err)
	}
	return trailing(dec)
}

// Unmarshal decodes data into v by the rule, with no key that v's type
// lacks.
func Unmarshal(data []byte, v any) error {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	if err := json.UnmarshalDecode(dec, v, json.RejectUnknownMembers(true)); err != nil {
		return describe(err)
	}
	return trailing(dec)
}

func trailing(dec *jsontext.Decoder) error {
	if _, err := dec.ReadToken(); err != io.EOF {
		return &Error{Problem: Trailing, Message: "more than one JSON value"}
	}
	return nil
}

func describe(err error) error {
	var syn *jsontext.SyntacticError
	var sem *json.SemanticError
	switch {
	case errors.As(err, &syn):
		ptr := string(syn.JSONPointer)
		msg := syn.Err.Error()
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			key := syn.JSONPointer.LastToken()
			return &Error{Problem: Duplicate, Pointer: ptr, Key: key, Message: fmt.Sprintf("key `%s` is given twice%s", key, at(parent(ptr)))}
		case strings.Contains(msg, "invalid UTF-8") || strings.Contains(msg, "surrogate"):
			return &Error{Problem: BadText, Pointer: ptr, Message: "text must be valid UTF-8, without lone surrogate escapes" + at(ptr)}
		case errors.Is(syn.Err, io.ErrUnexpectedEOF):
			return &Error{Problem: Malformed, Pointer: ptr, Message: "malformed JSON: unexpected end of input"}
		case strings.Contains(msg, "after top-level value"):
			return &Error{Problem: Trailing, Message: "more than one JSON value"}
		}
		return &Error{Problem: Malformed, Pointer: ptr, Message: fmt.Sprintf("malformed JSON at byte %d: %s", syn.ByteOffset, msg)}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &Error{Problem: Malformed, Message: "malformed JSON: unexpected end of input"}
	case errors.As(err, &sem):
		ptr := string(sem.JSONPointer)
		if errors.Is(sem.Err, json.ErrUnknownName) {
			key := sem.JSONPointer.LastToken()
			return &Error{Problem: UnknownKey, Pointer: ptr, Key: key, Message: fmt.Sprintf("unknown field %q", key)}
		}
		return &Error{Problem: WrongType, Pointer: ptr, Message: fmt.Sprintf("`%s` must be %s", field(ptr), kind(sem.GoType))}
	}
	return &Error{Problem: Malformed, Message: err.Error()}
}

func at(ptr string) string {
	if ptr == "" {
		return ""
	}
	return " at " + ptr
}

func parent(ptr string) string {
	if i := strings.LastIndexByte(ptr, '/'); i >= 0 {
		return ptr[:i]
	}
	return ""
}

// field names a value by its keys alone, "events.type" for
// /events/0/type, as the API's messages always have.
func field(ptr string) string {
	var keys []string
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if tok != "" && strings.Trim(tok, "0123456789") != "" {
			keys = append(keys, strings.NewReplacer("~1", "/", "~0", "~").Replace(tok))
		}
	}
	return strings.Join(keys, ".")
}

func kind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "of another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint64:
		return "an integer"
	case reflect.Slice:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Bool:
		return "a boolean"
	}
	return "of another type"
}
