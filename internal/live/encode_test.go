package live

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/projection"
)

// TestEncodeEvent: the hand-written event message is the one encoding/json
// writes, byte for byte, for data as the store holds it (compact JSON).
func TestEncodeEvent(t *testing.T) {
	at := projection.NewTime(time.Date(2026, 11, 30, 7, 1, 2, 345_678_900, time.UTC))
	for _, ev := range []projection.Event{
		{Seq: 1, Type: "turn/start", Turn: 1, At: at, Data: json.RawMessage(`{}`)},
		{Seq: 42, Type: "message/user", Turn: 0, At: at, Data: json.RawMessage(`{"text":"<b>&\"é\u2028 ☃ \n"}`)},
		{Seq: 1 << 40, Type: "todo/write", Turn: 7, At: at, Data: json.RawMessage(`{"todos":[{"content":"a","status":"pending"}]}`)},
		{Seq: 3, Type: "odd\"type\u00e9", Turn: 2, At: at, Data: json.RawMessage(`[1,2.5,null,true]`)},
	} {
		got := encodeEvent(ev)
		want := encode(eventMessage{Type: "event", Event: ev})
		if !bytes.Equal(got, want) {
			t.Errorf("event %d:\n got %s\nwant %s", ev.Seq, got, want)
		}
	}
}
