package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// ThroughputConfig is a run of Throughput.
type ThroughputConfig struct {
	LiveConfig
	Writers  int           // concurrent writers, one session each
	Duration time.Duration // length of each run
	Rounds   int           // off/on pairs
}

// Throughput measures append throughput with live fanout off and on:
// writers append single events as fast as they can, each to its own
// session, with the live hub off and on (on: the hub, the NOTIFY carrier and
// one subscriber reading every session). Rounds alternate off and on so that
// a noisy neighbour hurts both alike. It prints each round and the ratios to
// out.
func Throughput(ctx context.Context, cfg ThroughputConfig, out io.Writer) error {
	return cfg.inFreshSchema(ctx, func(schema string) error { return throughput(ctx, cfg, schema, out) })
}

func throughput(ctx context.Context, cfg ThroughputConfig, schema string, out io.Writer) error {
	fmt.Fprintf(out, "throughput: %d writers, one session each, single-event appends over HTTP, %s a run\n", cfg.Writers, cfg.Duration)
	var off, on, ratios []float64
	var cpuOff, cpuOn time.Duration
	var nOff, nOn int64
	for r := range cfg.Rounds {
		var pair [2]float64
		for i, withLive := range []bool{false, true} {
			cpu0 := cpuTime()
			n, secs, err := throughputRun(ctx, cfg, schema, withLive)
			if err != nil {
				return err
			}
			cpu := cpuTime() - cpu0
			pair[i] = float64(n) / secs
			if withLive {
				on, cpuOn, nOn = append(on, pair[i]), cpuOn+cpu, nOn+n
			} else {
				off, cpuOff, nOff = append(off, pair[i]), cpuOff+cpu, nOff+n
			}
		}
		ratios = append(ratios, pair[1]/pair[0])
		fmt.Fprintf(out, "round %2d  off %6.0f/s  on %6.0f/s  on/off %.2f\n", r+1, pair[0], pair[1], pair[1]/pair[0])
	}
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	slices.Sort(ratios)
	fmt.Fprintf(out, "mean off %.0f/s, on %.0f/s: ratio of means %.2f, median of round ratios %.2f\n",
		mean(off), mean(on), mean(on)/mean(off), ratios[len(ratios)/2])
	fmt.Fprintf(out, "CPU of this process (server and clients) per append: off %.0fus, on %.0fus\n",
		float64(cpuOff.Microseconds())/float64(nOff), float64(cpuOn.Microseconds())/float64(nOn))
	return nil
}

func throughputRun(ctx context.Context, cfg ThroughputConfig, schema string, withLive bool) (int64, float64, error) {
	srv, err := cfg.startLiveInstance(ctx, schema, withLive, nil)
	if err != nil {
		return 0, 0, err
	}
	defer srv.stop()
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	tc := tack(srv.url)
	ids := make([]string, cfg.Writers)
	var readers sync.WaitGroup
	for i := range ids {
		if ids[i], err = createSession(ctx, tc); err != nil {
			return 0, 0, err
		}
		if withLive {
			c, _, err := websocket.Dial(cctx, strings.Replace(srv.url, "http", "ws", 1)+"/sessions/"+ids[i]+"/live", nil)
			if err != nil {
				return 0, 0, err
			}
			readers.Go(func() {
				defer c.CloseNow()
				for {
					if _, _, err := c.Read(cctx); err != nil {
						return
					}
				}
			})
		}
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(cfg.Duration)
	start := time.Now()
	errc := make(chan error, cfg.Writers)
	for _, id := range ids {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if err := appendMessage(ctx, tc, id); err != nil {
					errc <- err
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stop()
	readers.Wait()
	select {
	case err := <-errc:
		return 0, 0, err
	default:
	}
	return n.Load(), elapsed.Seconds(), nil
}
