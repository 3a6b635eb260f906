package bench

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tack-dev/tack/internal/live"
)

// frame is a server's (unmasked) websocket frame.
func frame(fin bool, op byte, payload []byte) []byte {
	b := []byte{op}
	if fin {
		b[0] |= 0x80
	}
	switch n := len(payload); {
	case n < 126:
		b = append(b, byte(n))
	case n < 1<<16:
		b = append(b, 126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, payload...)
}

// TestWSClientParse feeds the latency clients' frame parser a stream that
// has every kind of frame a server sends, in pieces of every size: the
// first message readies the socket, event seqs are recorded whatever the
// length's encoding or fragmentation, a ping is answered with its payload
// in a masked pong, and a 4008 close is counted and ends the socket.
func TestWSClientParse(t *testing.T) {
	t.Parallel()
	event := func(seq int, pad int) []byte {
		return fmt.Appendf(nil, `{"type":"event","event":{"seq":%d,"type":"user_message","data":{"text":%q}}}`, seq, strings.Repeat("x", pad))
	}
	var stream []byte
	stream = append(stream, frame(true, 1, []byte(`{"type":"todos","todos":[]}`))...)
	stream = append(stream, frame(true, 1, event(1, 10))...)
	stream = append(stream, frame(true, 9, []byte("hi"))...)
	stream = append(stream, frame(true, 1, event(2, 300))...)   // 16-bit length
	stream = append(stream, frame(true, 1, event(3, 70000))...) // 64-bit length
	long := event(4, 50)
	stream = append(stream, frame(false, 1, long[:20])...) // fragmented
	stream = append(stream, frame(true, 9, nil)...)        // a ping between fragments
	stream = append(stream, frame(false, 0, long[20:40])...)
	stream = append(stream, frame(true, 0, long[40:])...)
	stream = append(stream, frame(true, 8, binary.BigEndian.AppendUint16(nil, uint16(live.CodeTooSlow)))...)

	for _, piece := range []int{1, 7, 100, 4096, len(stream)} {
		t.Run(fmt.Sprint(piece), func(t *testing.T) {
			t.Parallel()
			fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Close(fds[1])
			s := &wsSocket{fd: fds[0]}
			l := &wsLoop{sockets: map[int32]*wsSocket{int32(s.fd): s}}
			readied := 0
			for i := 0; i < len(stream); i += piece {
				if l.sockets[int32(s.fd)] == nil {
					t.Fatalf("the socket ended at byte %d of %d", i, len(stream))
				}
				s.buf = append(s.buf, stream[i:min(i+piece, len(stream))]...)
				if err := l.parse(s, int64(i), func() { readied++ }); err != nil {
					t.Fatal(err)
				}
			}
			if readied != 1 {
				t.Errorf("readied %d times, want 1", readied)
			}
			var seqs []int64
			for _, r := range l.receipts {
				seqs = append(seqs, r.seq)
			}
			if !slices.Equal(seqs, []int64{1, 2, 3, 4}) {
				t.Errorf("seqs %v, want [1 2 3 4]", seqs)
			}
			if l.tooSlow != 1 || l.sockets[int32(s.fd)] != nil {
				t.Errorf("after a 4008: tooSlow %d, socket kept %v", l.tooSlow, l.sockets[int32(s.fd)] != nil)
			}
			pongs := make([]byte, 64)
			n, err := syscall.Read(fds[1], pongs)
			if err != nil {
				t.Fatal(err)
			}
			want := []byte{0x8a, 0x82, 0, 0, 0, 0, 'h', 'i', 0x8a, 0x80, 0, 0, 0, 0}
			if !bytes.Equal(pongs[:n], want) {
				t.Errorf("pongs % x, want % x", pongs[:n], want)
			}
		})
	}
}
