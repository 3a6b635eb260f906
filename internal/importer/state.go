package importer

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"os"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/transcript"
)

// fileState is what a File has read and sent of its transcript, as JSON,
// for a File in another process to resume from (`tack hook` runs once per
// hook and sends only what the agent wrote since the last).
type fileState struct {
	Offset int64              `json:"offset"`
	Head   [sha256.Size]byte  `json:"head"`
	Tail   [sha256.Size]byte  `json:"tail"`
	Parser *transcript.Parser `json:"parser"`
	Sinks  []sinkState        `json:"sinks"`
}

type sinkState struct {
	Key     string           `json:"key"`
	Own     bool             `json:"own,omitempty"`
	Session *Session         `json:"session,omitempty"`
	State   projection.State `json:"state"`
	Made    int64            `json:"made"`
}

// MarshalJSON is what the File has read and sent, once a Sync has sent
// everything it read; Resume takes it up again.
func (t *File) MarshalJSON() ([]byte, error) {
	if t.parser == nil {
		return nil, errors.New("nothing read yet")
	}
	st := fileState{Offset: t.offset, Head: t.head, Tail: t.tail, Parser: t.parser}
	for _, s := range t.order {
		if len(s.held) > 0 || len(s.batch) > 0 {
			return nil, errors.New("events not sent yet")
		}
		st.Sinks = append(st.Sinks, sinkState{Key: s.key, Own: s == t.own, Session: s.sess, State: s.state, Made: s.made})
	}
	return json.Marshal(st)
}

// Resume is the File of path that a File's MarshalJSON described, to read
// on from where it stopped; when the file is not the one it read (shorter,
// or other bytes where it was read), it reads it again from the start, as
// Open's File would.
func Resume(c *Client, path string, raw []byte) (*File, error) {
	var st fileState
	if err := json.Unmarshal(raw, &st); err != nil || st.Parser == nil {
		return Open(c, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() < st.Offset {
		return Open(c, path)
	}
	head, tail, err := prints(f, st.Offset)
	if err != nil || head != st.Head || tail != st.Tail {
		return Open(c, path)
	}
	t := &File{Path: path, client: c, parser: st.Parser, offset: st.Offset, seen: info, head: head, tail: tail, notes: map[string]int{}}
	for _, ss := range st.Sinks {
		s := &sink{key: ss.Key, sess: ss.Session, state: ss.State, made: ss.Made}
		if ss.Own {
			t.own = s
			s.info = t.parser.Info
		} else {
			child := t.parser.Child(ss.Key)
			if child == nil {
				return Open(c, path)
			}
			if t.children == nil {
				t.children = map[string]*sink{}
			}
			t.children[ss.Key] = s
			s.info = child.Info
		}
		t.order = append(t.order, s)
	}
	return t, nil
}
