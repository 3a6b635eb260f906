package live

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tack-dev/tack/internal/store/postgres"
)

// Carrier carries change notices between server instances that share one
// database. A notice only says "session S now ends at seq N": the events
// themselves are always read from the store, so a carrier may coalesce,
// delay or even lose notices as long as it calls Resync after a loss it
// cannot rule out (a reconnect). A store without peers (SQLite) runs with
// no carrier at all.
type Carrier interface {
	// Announce records a local change for the other instances. It never blocks.
	Announce(sessionID string, lastSeq int64)
	// Run carries notices until ctx ends: other instances' changes go to
	// sink.Changed, and sink.Resync is called after every (re)connect.
	Run(ctx context.Context, sink Sink) error
}

// Sink receives what a Carrier brings; *Hub is one.
type Sink interface {
	Changed([]Change)
	Resync()
}

// PGNotifyOptions configure a PGNotify carrier.
type PGNotifyOptions struct {
	Logger *slog.Logger
	// Channel is the LISTEN/NOTIFY channel. By default it is "tack_live",
	// named apart by the connection's search_path when one is set: channels
	// are per database, and instances serving other schemas of it (tests do)
	// have nothing to tell each other.
	Channel string
	// Interval is the least time between two NOTIFYs of this instance
	// (default 5ms): changes made meanwhile share one notification.
	Interval time.Duration
	// Sweep is how often every subscribed session is read again from the
	// store whatever the notices said (default 30s): the net under a process
	// that died between its commit and its NOTIFY.
	Sweep time.Duration
	// After times the carrier's waits: the Interval between two rounds,
	// the Sweep and the backoffs before a reconnect or a retried round
	// (default time.After). A test hands in a clock of its own and moves
	// it, rather than wait any of them in real time.
	After func(time.Duration) <-chan time.Time
}

// maxPayload keeps each notification well under Postgres's 8000-byte limit.
const maxPayload = 6000

// PGNotify carries notices through Postgres LISTEN/NOTIFY (the store's
// NotifyConn), off the append path: Announce only records the session's new
// last seq in memory, and a flusher sends at most one NOTIFY per Interval,
// on its own connection, naming every session changed since the last one. A
// pg_notify inside each append transaction would serialize commits on the
// notify queue lock.
type PGNotify struct {
	cc       *pgx.ConnConfig
	log      *slog.Logger
	channel  string
	interval time.Duration
	sweep    time.Duration
	after    func(time.Duration) <-chan time.Time
	instance string

	mu      sync.Mutex
	pending map[string]int64
	wake    chan struct{}

	listenerPID atomic.Uint32
	sent        atomic.Int64
	// rounds counts notify rounds sent (each one batch of changed
	// sessions), reconnects the LISTEN connections made after the first.
	rounds     atomic.Int64
	reconnects atomic.Int64
}

// NewPGNotify returns a carrier that connects with cc (two connections:
// one to LISTEN, one to NOTIFY).
func NewPGNotify(cc *pgx.ConnConfig, opts PGNotifyOptions) *PGNotify {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Channel == "" {
		opts.Channel = postgres.Channel("tack_live", cc)
	}
	if opts.Interval <= 0 {
		opts.Interval = 5 * time.Millisecond
	}
	if opts.Sweep <= 0 {
		opts.Sweep = 30 * time.Second
	}
	if opts.After == nil {
		opts.After = time.After
	}
	return &PGNotify{
		cc: cc, log: opts.Logger, channel: opts.Channel, interval: opts.Interval, sweep: opts.Sweep,
		after:    opts.After,
		instance: rand.Text()[:10],
		pending:  map[string]int64{},
		wake:     make(chan struct{}, 1),
	}
}

// ListenerPID is the backend pid of the LISTEN connection, 0 while down.
func (p *PGNotify) ListenerPID() uint32 { return p.listenerPID.Load() }

// Sent is how many notifications this instance has sent.
func (p *PGNotify) Sent() int64 { return p.sent.Load() }

// Announce implements Carrier.
func (p *PGNotify) Announce(sessionID string, lastSeq int64) {
	p.mu.Lock()
	if cur, ok := p.pending[sessionID]; !ok || lastSeq > cur {
		p.pending[sessionID] = lastSeq
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run implements Carrier.
func (p *PGNotify) Run(ctx context.Context, sink Sink) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); p.flush(ctx) }()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-p.after(p.sweep):
				sink.Resync()
			}
		}
	}()
	p.listen(ctx, sink)
	wg.Wait()
	return nil
}

// notice is the payload of one notification.
type notice struct {
	From    string   `json:"f"`
	Changes []Change `json:"c"`
}

func (p *PGNotify) connect(ctx context.Context, name string) (*postgres.NotifyConn, error) {
	return postgres.ConnectNotify(ctx, p.cc, name, p.channel)
}

// listen keeps a LISTEN connection up, reconnecting with a backoff capped at
// one second, and resyncs the sink after each connect: notices sent while it
// was down are lost, the events are not.
func (p *PGNotify) listen(ctx context.Context, sink Sink) {
	retry := backoff{after: p.after}
	first := true
	for ctx.Err() == nil {
		conn, err := p.connect(ctx, "tack-live-listen")
		if err == nil {
			if err = conn.Listen(ctx); err != nil {
				conn.Close()
			}
		}
		if err != nil {
			if ctx.Err() == nil {
				p.log.Warn("live: listen connection failed; retrying", "err", err)
			}
			retry.wait(ctx)
			continue
		}
		retry.reset()
		if !first {
			p.reconnects.Add(1)
		}
		first = false
		p.listenerPID.Store(conn.PID())
		sink.Resync()
		err = p.receive(ctx, conn, sink)
		p.listenerPID.Store(0)
		conn.Close()
		if ctx.Err() == nil {
			p.log.Warn("live: listen connection lost; reconnecting", "err", err)
		}
	}
}

func (p *PGNotify) receive(ctx context.Context, conn *postgres.NotifyConn, sink Sink) error {
	for {
		payload, err := conn.Wait(ctx)
		if err != nil {
			return err
		}
		var nt notice
		if err := json.Unmarshal([]byte(payload), &nt); err != nil {
			p.log.Warn("live: ignoring a malformed notification", "err", err)
			continue
		}
		if nt.From != p.instance {
			sink.Changed(nt.Changes)
		}
	}
}

// flush sends what Announce recorded, at most one round of notifications
// per interval. A failed round is put back and retried after a backoff.
// Its connection is opened at once, not at the first change, so that no
// notice waits for a connect; a broken one is opened again at the next
// round. When ctx ends, what is still recorded goes out in one last round
// (see finalFlush): the changes of an instance's last moments would
// otherwise reach the other instances only at their next sweep.
func (p *PGNotify) flush(ctx context.Context) {
	var conn *postgres.NotifyConn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	conn, err := p.connect(ctx, "tack-live-notify")
	if err != nil {
		conn = nil
		if ctx.Err() == nil {
			p.log.Warn("live: notify connection failed; retrying at the first change", "err", err)
		}
	}
	retry := backoff{after: p.after}
	for {
		select {
		case <-ctx.Done():
			p.finalFlush(&conn)
			return
		case <-p.wake:
		}
		batch := p.take()
		if len(batch) == 0 {
			continue
		}
		if err := p.round(ctx, &conn, batch); err != nil {
			p.requeue(batch)
			if ctx.Err() == nil {
				p.log.Warn("live: notify failed; retrying", "err", err)
			}
			retry.wait(ctx)
			continue
		}
		p.rounds.Add(1)
		retry.reset()
		select {
		case <-ctx.Done():
		case <-p.after(p.interval):
		}
	}
}

// finalFlushTimeout bounds the last round of notifications on shutdown.
const finalFlushTimeout = 2 * time.Second

// finalFlush sends what is still recorded, within finalFlushTimeout, on the
// notifier's connection or, when that one fails, on a fresh one.
func (p *PGNotify) finalFlush(conn **postgres.NotifyConn) {
	batch := p.take()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), finalFlushTimeout)
	defer cancel()
	err := p.round(ctx, conn, batch)
	if err != nil && ctx.Err() == nil {
		err = p.round(ctx, conn, batch) // once more, on a fresh connection
	}
	if err != nil {
		p.log.Warn("live: last notify before shutdown failed; other instances see these changes at their next sweep",
			"sessions", len(batch), "err", err)
	}
}

// take empties what Announce recorded.
func (p *PGNotify) take() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	batch := p.pending
	p.pending = make(map[string]int64, len(batch))
	return batch
}

// round sends batch on *conn, opening it first when there is none; a
// connection that failed is closed and cleared, to be opened again.
func (p *PGNotify) round(ctx context.Context, conn **postgres.NotifyConn, batch map[string]int64) error {
	var err error
	if *conn == nil {
		*conn, err = p.connect(ctx, "tack-live-notify")
		if err != nil {
			*conn = nil
			return err
		}
	}
	if err = p.send(ctx, *conn, batch); err != nil {
		(*conn).Close()
		*conn = nil
	}
	return err
}

func (p *PGNotify) send(ctx context.Context, conn *postgres.NotifyConn, batch map[string]int64) error {
	for _, payload := range payloads(p.instance, batch) {
		if err := conn.Notify(ctx, payload); err != nil {
			return err
		}
		p.sent.Add(1)
	}
	return nil
}

// payloads splits a batch into notifications of at most maxPayload bytes.
func payloads(from string, batch map[string]int64) []string {
	var out []string
	nt := notice{From: from}
	size := 0
	for id, seq := range batch {
		quoted, _ := json.Marshal(id)
		entry := len(quoted) + 30 // {"s":…,"q":…}, with room for any int64
		if size+entry > maxPayload && len(nt.Changes) > 0 {
			b, _ := json.Marshal(nt)
			out = append(out, string(b))
			nt.Changes, size = nil, 0
		}
		nt.Changes = append(nt.Changes, Change{Session: id, LastSeq: seq})
		size += entry
	}
	if len(nt.Changes) > 0 {
		b, _ := json.Marshal(nt)
		out = append(out, string(b))
	}
	return out
}

func (p *PGNotify) requeue(batch map[string]int64) {
	p.mu.Lock()
	for id, seq := range batch {
		if cur, ok := p.pending[id]; !ok || seq > cur {
			p.pending[id] = seq
		}
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// backoff paces retries against the database: 50 ms, doubling up to one
// second, back to 50 ms after a success. It waits on after, the carrier's
// clock.
type backoff struct {
	d     time.Duration
	after func(time.Duration) <-chan time.Time
}

const minBackoff, maxBackoff = 50 * time.Millisecond, time.Second

// wait sleeps the current delay, or until ctx ends, then doubles the delay;
// it reports false when ctx ended.
func (b *backoff) wait(ctx context.Context) bool {
	b.d = max(b.d, minBackoff)
	wait := b.after(b.d)
	b.d = min(2*b.d, maxBackoff)
	select {
	case <-ctx.Done():
		return false
	case <-wait:
		return true
	}
}

func (b *backoff) reset() { b.d = minBackoff }

var _ Carrier = (*PGNotify)(nil)
