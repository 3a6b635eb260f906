package live

import (
	"net"
	"sync"
)

// corkMax bounds what a corked writer gathers before it writes.
const corkMax = 32 << 10

var corkBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// corkWriter writes through to the socket, except while corked: then it
// gathers what it is given in a pooled buffer, held only for the run, and
// writes it at uncork. The library writes to it from the socket's writer
// and, for pongs and close frames, from other goroutines: mu orders them.
type corkWriter struct {
	conn   net.Conn
	mu     sync.Mutex
	corked bool
	buf    *[]byte
}

func (w *corkWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.corked {
		return w.conn.Write(p)
	}
	if w.buf != nil && len(*w.buf)+len(p) > corkMax {
		if err := w.flushLocked(); err != nil {
			return 0, err
		}
	}
	if len(p) > corkMax {
		return w.conn.Write(p)
	}
	if w.buf == nil {
		w.buf = corkBufs.Get().(*[]byte)
	}
	*w.buf = append(*w.buf, p...)
	return len(p), nil
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
	_, err := w.conn.Write(*b)
	if cap(*b) <= 2*corkMax {
		*b = (*b)[:0]
		corkBufs.Put(b)
	}
	return err
}
