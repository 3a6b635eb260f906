package live

import (
	"net"
	"sync"
	"time"
)

// corkMax bounds what a corked writer gathers before it writes.
const corkMax = 32 << 10

var corkBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// corkWriter is what every byte of a socket goes out through: the frames
// of the hub's messages (frame), and what the websocket library writes
// (Write: its control frames, pongs, pings and the close frame, each a
// whole frame in one Write, the library's buffer being larger than any
// control frame). It writes through to the socket, except while corked:
// then it gathers what it is given in a pooled buffer, held only for the
// run, and writes it at uncork. The library writes to it from the socket's
// writer and from its reader (pongs, close frames): mu orders them, a frame
// at a time.
type corkWriter struct {
	conn   net.Conn
	mu     sync.Mutex
	corked bool
	// closed is set once the library has written a close frame: no data
	// frame may follow it.
	closed bool
	buf    *[]byte
	// timeout bounds every write to the socket (Options.WriteTimeout);
	// deadline is the socket's write deadline as last set, as a time
	// since clockStart (8 bytes, where a time.Time takes 24).
	timeout  time.Duration
	deadline time.Duration
}

// clockStart is the origin of corkWriter's deadlines, read on the
// monotonic clock.
var clockStart = time.Now()

// Write takes what the websocket library writes.
func (w *corkWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(p) > 0 && p[0]&0x0f == opClose {
		w.closed = true
	}
	if err := w.writeLocked(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// frame writes a whole data frame (see encode), unless a close frame has
// gone out.
func (w *corkWriter) frame(f []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return net.ErrClosed
	}
	return w.writeLocked(f)
}

func (w *corkWriter) writeLocked(p []byte) error {
	if !w.corked {
		return w.out(p)
	}
	if w.buf != nil && len(*w.buf)+len(p) > corkMax {
		if err := w.flushLocked(); err != nil {
			return err
		}
	}
	if len(p) > corkMax {
		return w.out(p)
	}
	if w.buf == nil {
		w.buf = corkBufs.Get().(*[]byte)
	}
	*w.buf = append(*w.buf, p...)
	return nil
}

func (w *corkWriter) cork() {
	w.mu.Lock()
	w.corked = true
	w.mu.Unlock()
}

// uncork writes what was gathered and writes through again.
func (w *corkWriter) uncork() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.corked = false
	return w.flushLocked()
}

// flush writes what was gathered and stays corked.
func (w *corkWriter) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

func (w *corkWriter) flushLocked() error {
	if w.buf == nil {
		return nil
	}
	b := w.buf
	w.buf = nil
	err := w.out(*b)
	if cap(*b) <= 2*corkMax {
		*b = (*b)[:0]
		corkBufs.Put(b)
	}
	return err
}

// out writes p to the socket, under a write deadline between 7/8 of the
// timeout and the timeout ahead. The deadline is moved only when less than
// 7/8 is left, not for every write: setting it costs more than a small
// write, and a socket written 20 times a second sets it once in 25 writes.
// It is never cleared: the next write, the library's pongs and close
// frames included, moves one that has run out.
func (w *corkWriter) out(p []byte) error {
	if w.timeout > 0 {
		now := time.Since(clockStart)
		if w.deadline-now < w.timeout-w.timeout/8 {
			w.deadline = now + w.timeout
			_ = w.conn.SetWriteDeadline(clockStart.Add(w.deadline))
		}
	}
	_, err := w.conn.Write(p)
	return err
}
