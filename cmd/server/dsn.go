package main

import (
	"net/url"
	"strings"
)

// redact hides every secret of a DATABASE_URL for printing, in each form
// Postgres takes one: the password of a URL's userinfo, any query
// parameter or key=value setting whose name holds "password" (password,
// sslpassword). What it cannot parse it does not print at all.
func redact(dsn string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "(unparsable URL)"
		}
		if u.RawQuery != "" {
			q, err := url.ParseQuery(u.RawQuery)
			if err != nil {
				u.RawQuery = "(unparsable query)"
			} else {
				for k := range q {
					if secretKey(k) {
						q[k] = []string{"xxxxx"}
					}
				}
				u.RawQuery = q.Encode()
			}
		}
		return u.Redacted()
	}
	pairs, ok := keyValues(dsn)
	if !ok {
		return "(unparsable connection string)"
	}
	var b strings.Builder
	for i, kv := range pairs {
		if i > 0 {
			b.WriteByte(' ')
		}
		v := kv[1]
		if secretKey(kv[0]) {
			v = "xxxxx"
		}
		b.WriteString(kv[0] + "=" + v)
	}
	return b.String()
}

func secretKey(k string) bool { return strings.Contains(strings.ToLower(k), "password") }

// keyValues splits a key=value connection string the way libpq reads one:
// settings separated by spaces, "key = value" with optional spaces, values
// bare or in single quotes, with backslash escapes in either.
func keyValues(s string) ([][2]string, bool) {
	var out [][2]string
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
	}
	for {
		skip()
		if i == len(s) {
			return out, len(out) > 0
		}
		start := i
		for i < len(s) && s[i] != '=' && s[i] != ' ' && s[i] != '\t' {
			i++
		}
		key := s[start:i]
		skip()
		if key == "" || i == len(s) || s[i] != '=' {
			return nil, false
		}
		i++
		skip()
		var v strings.Builder
		quoted := i < len(s) && s[i] == '\''
		if quoted {
			i++
		}
		for {
			if i == len(s) {
				if quoted {
					return nil, false // unterminated quote
				}
				break
			}
			c := s[i]
			if quoted && c == '\'' {
				i++
				break
			}
			if !quoted && (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
				break
			}
			if c == '\\' && i+1 < len(s) {
				i++
				c = s[i]
			}
			v.WriteByte(c)
			i++
		}
		out = append(out, [2]string{key, v.String()})
	}
}
