package storetest

import (
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy is a TCP proxy between a test's server and its Postgres that can
// take the database away and give it back, without stopping the Postgres
// that other tests share.
type Proxy struct {
	target string
	ln     net.Listener

	mu      sync.Mutex
	flowing *sync.Cond // signalled when stalled or closed change
	cut     bool
	stalled bool
	// refused closes new connections at once instead of holding them.
	refused bool
	// repliesStalled holds only what the target sends back.
	repliesStalled bool
	closed         bool
	// conns are both ends of every forwarded connection; held are the
	// connections accepted while cut, which get no byte until Restore
	// closes them.
	conns map[net.Conn]struct{}
	held  map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewProxy listens on 127.0.0.1:0 and forwards every connection to target
// (host:port) until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{target: target, ln: ln, conns: map[net.Conn]struct{}{}, held: map[net.Conn]struct{}{}}
	p.flowing = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut takes the database away: every forwarded connection is closed, and
// new connections are accepted but black-holed — they hear nothing, like a
// host that has dropped off the network, so a client learns of the outage
// only through its own connect timeout, the slowest way it can.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Refuse takes the database away as a host whose Postgres is down does:
// every forwarded connection is closed, and new ones are closed at once,
// so a client learns of the outage straight away (where Cut leaves it to
// its connect timeout).
func (p *Proxy) Refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut, p.refused = true, true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Stall takes the database away as a network partition does: forwarded
// connections stay open but carry nothing (their bytes wait in the proxy),
// and new connections are black-holed as by Cut. Only a client's own
// deadlines get it out of a query on a stalled connection.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut, p.stalled = true, true
}

// StallReplies holds what the database sends back while what clients send
// still reaches it, as a one-way partition does: statements sent run and
// commit, and their clients hear nothing until their deadlines. It is how
// a commit comes to race its request's time-out.
func (p *Proxy) StallReplies() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.repliesStalled = true
}

// Restore gives the database back: stalled connections carry their bytes
// on, the black-holed ones are closed (their clients have given up on them
// or are told to now) and new ones are forwarded again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut, p.stalled, p.repliesStalled, p.refused = false, false, false, false
	p.flowing.Broadcast()
	for c := range p.held {
		_ = c.Close()
	}
	clear(p.held)
}

// Close stops the proxy and closes every connection through it.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.flowing.Broadcast()
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	for c := range p.held {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		switch {
		case p.closed, p.refused:
			_ = c.Close()
		case p.cut:
			p.held[c] = struct{}{}
		default:
			p.wg.Add(1)
			go p.forward(c)
		}
		p.mu.Unlock()
	}
}

// forward pipes one client connection to the target and back.
func (p *Proxy) forward(client net.Conn) {
	defer p.wg.Done()
	upstream, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	p.mu.Lock()
	if p.cut || p.closed {
		// Cut while dialing: this connection never got through.
		p.mu.Unlock()
		_ = client.Close()
		_ = upstream.Close()
		return
	}
	p.conns[client] = struct{}{}
	p.conns[upstream] = struct{}{}
	p.mu.Unlock()

	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn, reply bool) {
		p.copy(dst, src, reply)
		// One direction ending ends the connection: a half-open link to
		// Postgres is of no use to anybody.
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go pipe(upstream, client, false)
	go pipe(client, upstream, true)
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, upstream)
	p.mu.Unlock()
}

// copy forwards src to dst until either fails, holding bytes while stalled
// (and a reply's bytes while replies are stalled).
func (p *Proxy) copy(dst, src net.Conn, reply bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for (p.stalled || reply && p.repliesStalled) && !p.closed {
				p.flowing.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// ProxiedSchemaURL creates a fresh, empty schema for the test like SchemaURL
// and returns a database URL that reaches it through a Proxy, with the proxy.
// Creating and dropping the schema go straight to Postgres.
func ProxiedSchemaURL(t testing.TB) (string, *Proxy) {
	t.Helper()
	raw := SchemaURL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "5432"
	}
	p := NewProxy(t, net.JoinHostPort(host, port))
	u.Host = p.Addr()
	return u.String(), p
}

// Port is the proxy's port.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }
