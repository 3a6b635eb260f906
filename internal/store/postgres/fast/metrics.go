package fast

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Register registers the pool's state, the append cache's misses and the
// read leases' counts.
func (f *Store) Register(reg prometheus.Registerer) error {
	misses := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "tack_append_cache_misses_total",
		Help: "Appends whose cached state was stale (another instance or request had appended): each ran the locking way, and its session runs it for a second.",
	}, func() float64 { return float64(f.cache.misses.Load()) })
	if err := reg.Register(misses); err != nil {
		return err
	}
	if l := f.leases; l != nil {
		for _, c := range []struct {
			name, help string
			n          func() int64
		}{
			{"tack_read_lease_reads_total", "Todo list reads answered from memory under a read lease.", l.served.Load},
			{"tack_read_leases_taken_total", "Read leases this instance took.", l.taken.Load},
			{"tack_read_leases_revoked_total", "Read leases another instance asked this one to let go, so as to write.", l.revoked.Load},
		} {
			if err := reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help}, func() float64 { return float64(c.n()) })); err != nil {
				return err
			}
		}
	}
	return f.Store.Register(reg)
}
