package live

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
)

// frameHead is the most a frame header of a server takes: two bytes and an
// eight-byte length (a server's frames are not masked).
const frameHead = 10

// encode writes v as JSON without HTML escaping, like the REST API, as a
// whole websocket text frame: the header, then the message. A message is
// framed once, when it is encoded, and the same bytes go to every
// subscriber's socket: a subscriber's writer only copies them, where the
// websocket library would frame the message anew for each socket, under its
// own locks, for every message.
func encode(v any) []byte {
	var buf bytes.Buffer
	buf.Write(make([]byte, frameHead))
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return putHead(b, len(b)-frameHead)
}

// putHead writes the header of a final text frame of n bytes of payload in
// front of the payload at b[frameHead:], and returns the frame.
func putHead(b []byte, n int) []byte {
	start := frameHead - 2
	switch {
	case n <= 125:
		b[start+1] = byte(n)
	case n <= 0xffff:
		start = frameHead - 4
		b[start+1] = 126
		binary.BigEndian.PutUint16(b[start+2:], uint16(n))
	default:
		start = 0
		b[start+1] = 127
		binary.BigEndian.PutUint64(b[start+2:], uint64(n))
	}
	b[start] = 0x81 // FIN, text
	return b[start:]
}

// opClose is the opcode of a close frame, the low bits of its first byte.
const opClose = 0x8
