package bench

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tack-dev/tack/internal/projection"
)

// plan is the todo list every call writes, one of five variants: item k in
// progress, those before it completed, those after it pending. Every call
// changes the list, so every call rewrites the projection row.
var plan = []string{
	"Read the failing test and the parser it exercises",
	"Find where the tokenizer drops the last byte",
	"Fix the off-by-one and add a regression test",
	"Run the whole suite and the linters",
	"Write the changelog entry",
}

func todoList(variant int) []projection.TodoInput {
	todos := make([]projection.TodoInput, len(plan))
	for i, content := range plan {
		status := projection.StatusPending
		switch {
		case i < variant:
			status = projection.StatusCompleted
		case i == variant:
			status = projection.StatusInProgress
		}
		todos[i] = projection.TodoInput{Content: content, Status: status}
	}
	return todos
}

// load drives todo_write over HTTP from a fixed set of clients, each on its
// own sessions, so that no two clients queue on one session's row lock.
type load struct {
	addr    string
	owned   [][][][]byte // each client's todo_write requests: [client][session][variant]
	clients int
}

type result struct {
	perSecond float64
	p50, p99  time.Duration
	cpu       cpuUsage
	tls       string // TLS on the measured Postgres connections (tlsOf)
	backends  activity
}

func newLoad(ctx context.Context, addr string, clients, sessions int) (*load, error) {
	l := &load{addr: addr, clients: clients, owned: make([][][][]byte, clients)}
	var bodies [][]byte
	for v := range plan {
		body, _ := json.Marshal(map[string]any{"todos": todoList(v)})
		bodies = append(bodies, body)
	}
	// Sessions are made through the API like any harness makes them: created,
	// then a turn opened, since todo_write needs an open turn.
	c := tack("http://" + addr)
	ids := make([]string, sessions)
	var (
		wg      sync.WaitGroup
		errOnce sync.Once
		err     error
	)
	for k := range clients {
		wg.Go(func() {
			for i := k; i < sessions; i += clients {
				id, e := createSession(ctx, c)
				if e == nil {
					e = c.Do(ctx, http.MethodPost, "/sessions/"+id+"/events", turnStart, nil)
				}
				if e != nil {
					errOnce.Do(func() { err = e })
					return
				}
				ids[i] = id
			}
		})
	}
	wg.Wait()
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		reqs := make([][]byte, len(bodies))
		for v, body := range bodies {
			reqs[v] = rawRequest(addr, "/sessions/"+id+"/tools/todo_write", body)
		}
		l.owned[i%clients] = append(l.owned[i%clients], reqs)
	}
	return l, nil
}

var turnStart = json.RawMessage(`{"events":[{"type":"turn/start","data":{}}]}`)

// run loads the server for warmup, then measures for duration.
func (l *load) run(ctx context.Context, warmup, duration time.Duration, db *database, serverPID int) (result, error) {
	var (
		measuring atomic.Bool
		calls     atomic.Int64
		stop      = make(chan struct{})
		wg        sync.WaitGroup
		errOnce   sync.Once
		firstErr  error
		latencies = make([][]time.Duration, l.clients)
	)
	for c := range l.clients {
		wg.Go(func() {
			own := l.owned[c]
			conn := &rawClient{addr: l.addr}
			defer conn.close()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				err := conn.do(ctx, own[i%len(own)][i%len(plan)], http.StatusOK)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				if measuring.Load() {
					calls.Add(1)
					latencies[c] = append(latencies[c], time.Since(start))
				}
			}
		})
	}
	finish := func() {
		close(stop)
		wg.Wait()
	}
	if err := sleep(ctx, warmup); err != nil {
		finish()
		return result{}, err
	}
	// The pool has opened its connections during the warmup.
	backends := db.serverBackends(ctx, serverPID)
	tls := db.tlsOf(ctx, backends)
	groups := []group{{"server", []int{serverPID}}, {"clients", []int{os.Getpid()}}, backends}
	before := sampleCPU(groups...)
	watch := db.watchActivity(ctx, backends.pids)
	measuring.Store(true)
	t0 := time.Now()
	err := sleep(ctx, duration)
	measuring.Store(false)
	elapsed := time.Since(t0)
	act := watch()
	after := sampleCPU(groups...)
	n := calls.Load()
	finish()
	if err != nil {
		return result{}, err
	}
	if firstErr != nil {
		return result{}, firstErr
	}
	all := slices.Concat(latencies...)
	slices.Sort(all)
	return result{
		perSecond: float64(n) / elapsed.Seconds(),
		p50:       percentile(all, 0.50).Round(10 * time.Microsecond),
		p99:       percentile(all, 0.99).Round(10 * time.Microsecond),
		cpu:       after.sub(before),
		tls:       tls,
		backends:  act,
	}, nil
}
