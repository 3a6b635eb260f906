package live

import (
	"net"
	"sync"
	"syscall"
	"time"
)

// corkMax bounds what a corked writer gathers before it writes.
const corkMax = 32 << 10

var corkBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// corkWriter is what every byte of a socket goes out through: the frames
// of the hub's messages (frame), and its control frames (Write: pings,
// pongs and the close frame, each a whole frame in one Write). It writes
// through to the socket, except while corked: then it gathers what it is
// given in a pooled buffer, held only for the run, and writes it at
// uncork. Control frames come from the socket's writer and from its reader
// (pongs, close frames): mu orders them, a frame at a time.
type corkWriter struct {
	conn net.Conn
	// raw is conn's descriptor, for a hub writer's non-blocking writes
	// (tryFlushLocked); nil when conn has none (a TLS connection).
	raw    syscall.RawConn
	mu     sync.Mutex
	corked bool
	// closed is set once a close frame has been written: no data
	// frame may follow it.
	closed bool
	buf    *[]byte
	// timeout bounds every write to the socket (Options.WriteTimeout);
	// deadline is the socket's write deadline as last set, as a time
	// since clockStart (8 bytes, where a time.Time takes 24).
	timeout  time.Duration
	deadline time.Duration
	// clock reads the time since clockStart; nil is the monotonic clock.
	// A test sets it to move the writer's time on without waiting.
	clock func() time.Duration
}

// clockStart is the origin of corkWriter's deadlines, read on the
// monotonic clock.
var clockStart = time.Now()

// Write writes a whole control frame.
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
		// What a hub writer gathered and the socket did not take yet goes
		// first.
		if err := w.flushLocked(); err != nil {
			return err
		}
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
// It is never cleared: the next write, pongs and close frames included,
// moves one that has run out.
func (w *corkWriter) out(p []byte) error {
	w.keepDeadline()
	_, err := w.conn.Write(p)
	return err
}

func (w *corkWriter) keepDeadline() {
	if w.timeout > 0 {
		var now time.Duration
		if w.clock != nil {
			now = w.clock()
		} else {
			now = time.Since(clockStart)
		}
		if w.deadline-now < w.timeout-w.timeout/8 {
			w.deadline = now + w.timeout
			_ = w.conn.SetWriteDeadline(clockStart.Add(w.deadline))
		}
	}
}

// gather adds a frame to what is gathered, w.mu held; only a hub writer
// calls it (see conn.quick), and it writes what it gathered before it lets
// go of w.mu.
func (w *corkWriter) gather(p []byte) {
	if w.buf == nil {
		w.buf = corkBufs.Get().(*[]byte)
	}
	*w.buf = append(*w.buf, p...)
}

// tryFlushLocked writes what is gathered with one non-blocking write(2),
// through rw, w.mu held, and reports whether all of it went. What the
// socket did not take stays gathered, and goes before anything else is
// written (see writeLocked). The write goes through raw, which keeps the
// descriptor from being closed under it, and so through the deadline: one
// that ran out fails the write here and leaves it to out, which moves it.
func (w *corkWriter) tryFlushLocked(rw *rawWrite) bool {
	if w.buf == nil {
		return true
	}
	w.keepDeadline()
	b := w.buf
	rw.p, rw.n, rw.err = *b, 0, nil
	err := w.raw.Write(rw.fn)
	n, whole := rw.n, err == nil && rw.err == nil && rw.n == len(*b)
	rw.p = nil
	if whole {
		w.buf = nil
		if cap(*b) <= 2*corkMax {
			*b = (*b)[:0]
			corkBufs.Put(b)
		}
		return true
	}
	if n > 0 {
		*b = (*b)[:copy(*b, (*b)[n:])]
	}
	return false
}

// rawWrite is a non-blocking write(2) of p, for syscall.RawConn.Write (fn,
// bound once, so that a write allocates nothing). The descriptor is
// non-blocking, as every one of package net's is, and fn reports true so
// that RawConn never waits for it to be writable. Each hub writer has one.
type rawWrite struct {
	p   []byte
	n   int
	err error
	fn  func(fd uintptr) bool
}

func newRawWrite() *rawWrite {
	rw := &rawWrite{}
	rw.fn = func(fd uintptr) bool {
		rw.n, rw.err = writeFD(fd, rw.p)
		return true
	}
	return rw
}
