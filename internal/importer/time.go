package importer

import (
	"encoding/json"
	"time"
)

// now is the time the local mirror stamps events with; Tack stamps its own.
func (t *File) now() time.Time { return time.Now() }

func jsonValid(b []byte) bool { return json.Valid(b) }
