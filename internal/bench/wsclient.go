package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tack-dev/tack/internal/live"
)

// Latency's subscribers, written by hand for the reason the package comment
// gives: each socket is a plain descriptor, and an event loop reads every
// one of them through epoll, parses the frames by hand and answers pings.
// Linux only, as the rest of the package (it reads /proc).

// clientLoops is how many event loops read the sockets: one per two cores
// (a second loop on two cores lowered no latency and cost more CPU).
var clientLoops = max(1, runtime.GOMAXPROCS(0)/2)

// wsSocket is one subscriber.
type wsSocket struct {
	fd    int
	buf   []byte // read and not yet parsed
	msg   []byte // a fragmented message so far
	ready bool   // its first message (the todos view) has arrived
}

// wsLoop reads a share of the sockets.
type wsLoop struct {
	epfd     int
	sockets  map[int32]*wsSocket
	receipts []receipt
	tooSlow  int64
	err      error
}

// readClients opens n sockets on wsURL, calls ready once every one has
// read its todos view (the end of the empty backlog), and records every
// event message each one reads until ctx ends.
func readClients(ctx context.Context, wsURL string, n int, ready func()) (clientResult, error) {
	var res clientResult
	addr, request, err := handshakeRequest(wsURL)
	if err != nil {
		return res, err
	}
	loops := make([]*wsLoop, clientLoops)
	for i := range loops {
		epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			return res, fmt.Errorf("epoll: %w", err)
		}
		defer syscall.Close(epfd)
		loops[i] = &wsLoop{epfd: epfd, sockets: map[int32]*wsSocket{}}
	}
	defer func() {
		for _, l := range loops {
			for _, s := range l.sockets {
				_ = syscall.Close(s.fd)
			}
		}
	}()

	// Dial every socket first (a few at a time), then read them all.
	var (
		mu      sync.Mutex
		dialErr error
		next    atomic.Int64
		dials   sync.WaitGroup
	)
	for range 32 {
		dials.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				s, err := dialSocket(addr, request)
				mu.Lock()
				if err != nil {
					dialErr = errors.Join(dialErr, err)
					mu.Unlock()
					return
				}
				loops[i%len(loops)].sockets[int32(s.fd)] = s
				mu.Unlock()
			}
		})
	}
	dials.Wait()
	if dialErr != nil {
		return res, fmt.Errorf("dial: %w", dialErr)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}

	var (
		readyCount atomic.Int64
		allReady   = make(chan struct{})
		failed     = make(chan struct{}) // a loop stopped on an error
		failOnce   sync.Once
		stop       atomic.Bool
		running    sync.WaitGroup
	)
	onReady := func() {
		if readyCount.Add(1) == int64(n) {
			close(allReady)
		}
	}
	for _, l := range loops {
		for _, s := range l.sockets {
			if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, s.fd,
				&syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(s.fd)}); err != nil {
				return res, fmt.Errorf("epoll: %w", err)
			}
			// The handshake's answer may have brought the first messages.
			if err := l.parse(s, time.Now().UnixNano(), onReady); err != nil {
				return res, err
			}
		}
		running.Go(func() {
			if l.run(&stop, onReady); l.err != nil {
				failOnce.Do(func() { close(failed) })
			}
		})
	}
	ended := func() (clientResult, error) {
		stop.Store(true)
		running.Wait()
		var errs error
		for _, l := range loops {
			res.receipts = append(res.receipts, l.receipts...)
			res.tooSlow += l.tooSlow
			errs = errors.Join(errs, l.err)
		}
		return res, errs
	}
	select {
	case <-allReady:
	case <-failed:
		return ended()
	case <-ctx.Done():
		_, err := ended()
		return res, errors.Join(ctx.Err(), err)
	}
	ready()
	<-ctx.Done()
	return ended()
}

// handshakeRequest is the websocket upgrade of wsURL: the address to dial
// and the request's bytes.
func handshakeRequest(wsURL string) (*syscall.SockaddrInet4, []byte, error) {
	u, err := url.Parse(wsURL)
	if err != nil {
		return nil, nil, err
	}
	ta, err := net.ResolveTCPAddr("tcp4", u.Host)
	if err != nil {
		return nil, nil, err
	}
	sa := &syscall.SockaddrInet4{Port: ta.Port}
	copy(sa.Addr[:], ta.IP.To4())
	var key [16]byte
	_, _ = rand.Read(key[:])
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", u.RequestURI(), u.Host, base64.StdEncoding.EncodeToString(key[:]))
	return sa, []byte(req), nil
}

// dialSocket connects, sends the upgrade and reads its answer, blocking;
// the socket is then made non-blocking for its loop.
func dialSocket(addr *syscall.SockaddrInet4, request []byte) (*wsSocket, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	s := &wsSocket{fd: fd, buf: make([]byte, 0, 4096)}
	fail := func(err error) (*wsSocket, error) {
		_ = syscall.Close(fd)
		return nil, err
	}
	if err := syscall.Connect(fd, addr); err != nil {
		return fail(err)
	}
	if err := writeAll(fd, request); err != nil {
		return fail(err)
	}
	for {
		if len(s.buf) == cap(s.buf) {
			return fail(errors.New("handshake answer too long"))
		}
		k, err := syscall.Read(fd, s.buf[len(s.buf):cap(s.buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fail(err)
		}
		if k == 0 {
			return fail(errors.New("closed during the handshake"))
		}
		s.buf = s.buf[:len(s.buf)+k]
		if end := bytes.Index(s.buf, []byte("\r\n\r\n")); end >= 0 {
			if !bytes.HasPrefix(s.buf, []byte("HTTP/1.1 101 ")) {
				line, _, _ := bytes.Cut(s.buf, []byte("\r\n"))
				return fail(fmt.Errorf("handshake refused: %s", line))
			}
			s.buf = s.buf[:copy(s.buf, s.buf[end+4:])]
			break
		}
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		return fail(err)
	}
	return s, nil
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		k, err := syscall.Write(fd, b)
		if err == syscall.EINTR || err == syscall.EAGAIN {
			continue // a pong to a socket whose buffer is full: rare, and short
		}
		if err != nil {
			return err
		}
		b = b[k:]
	}
	return nil
}

// run reads ready sockets until stop.
func (l *wsLoop) run(stop *atomic.Bool, onReady func()) {
	events := make([]syscall.EpollEvent, 256)
	for !stop.Load() {
		k, err := syscall.EpollWait(l.epfd, events, 50)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			l.err = err
			return
		}
		for _, ev := range events[:k] {
			s := l.sockets[ev.Fd]
			if s == nil {
				continue
			}
			if err := l.read(s, onReady); err != nil {
				l.err = err
				return
			}
		}
	}
}

// read reads what s has and parses it; a socket that ends is closed and
// forgotten.
func (l *wsLoop) read(s *wsSocket, onReady func()) error {
	if cap(s.buf)-len(s.buf) < 1024 {
		s.buf = append(s.buf, make([]byte, cap(s.buf))...)[:len(s.buf)]
	}
	k, err := syscall.Read(s.fd, s.buf[len(s.buf):cap(s.buf)])
	at := time.Now().UnixNano()
	switch {
	case err == syscall.EAGAIN || err == syscall.EINTR:
		return nil
	case err != nil:
		return l.end(s, fmt.Errorf("socket ended: %w", err))
	case k == 0:
		return l.end(s, errors.New("socket closed without a close frame"))
	}
	s.buf = s.buf[:len(s.buf)+k]
	return l.parse(s, at, onReady)
}

// parse takes every whole frame off s.buf. A server's frames are not
// masked; a message may come in fragments.
func (l *wsLoop) parse(s *wsSocket, at int64, onReady func()) error {
	b := s.buf
	for len(b) >= 2 {
		fin, op := b[0]&0x80 != 0, b[0]&0x0f
		if b[1]&0x80 != 0 {
			return l.end(s, errors.New("the server masked a frame"))
		}
		size, head := uint64(b[1]&0x7f), 2
		switch size { // a longer length follows in 2 or 8 bytes
		case 126:
			head = 4
		case 127:
			head = 10
		}
		if len(b) < head {
			break // the rest of the header is still to come
		}
		switch head {
		case 4:
			size = uint64(binary.BigEndian.Uint16(b[2:]))
		case 10:
			size = binary.BigEndian.Uint64(b[2:])
		}
		if uint64(len(b)-head) < size {
			break // the rest of the frame is still to come
		}
		payload := b[head : head+int(size)]
		b = b[head+int(size):]
		switch op {
		case 0, 1, 2: // continuation, text, binary
			if !fin || len(s.msg) > 0 {
				s.msg = append(s.msg, payload...)
				if !fin {
					continue
				}
				payload, s.msg = s.msg, s.msg[:0]
			}
			if !s.ready { // the todos view that follows the (empty) backlog
				s.ready = true
				onReady()
				continue
			}
			if seq := seqOf(payload); seq > 0 {
				l.receipts = append(l.receipts, receipt{seq, at})
			}
		case 8: // close
			if len(payload) >= 2 && binary.BigEndian.Uint16(payload) == uint16(live.CodeTooSlow) {
				l.tooSlow++
			}
			return l.end(s, nil)
		case 9: // ping: a pong with its payload, masked with a zero key
			pong := append([]byte{0x8a, 0x80 | byte(len(payload)), 0, 0, 0, 0}, payload...)
			if err := writeAll(s.fd, pong); err != nil {
				return l.end(s, err)
			}
		}
	}
	s.buf = s.buf[:copy(s.buf, b)]
	return nil
}

// end closes s. A socket that ends before its first message fails the run;
// one the server closes later (too slow) is counted, not an error.
func (l *wsLoop) end(s *wsSocket, err error) error {
	delete(l.sockets, int32(s.fd))
	_ = syscall.Close(s.fd)
	if !s.ready {
		if err == nil {
			err = errors.New("closed by the server")
		}
		return fmt.Errorf("a socket ended before its first message: %w", err)
	}
	return nil
}

var seqField = []byte(`"seq":`)

// seqOf finds the event seq in a message without decoding it all: the
// load tool's clients must cost as little as they can.
func seqOf(b []byte) int64 {
	i := bytes.Index(b, seqField)
	if i < 0 {
		return 0
	}
	b = b[i+len(seqField):]
	j := bytes.IndexAny(b, ",}")
	n, _ := strconv.ParseInt(string(b[:j]), 10, 64)
	return n
}
