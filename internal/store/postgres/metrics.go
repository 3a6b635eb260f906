package postgres

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Register registers the pool's state on reg, read from pgxpool's Stat at
// each scrape, and the appends that waited for a read lease.
func (p *Store) Register(reg prometheus.Registerer) error {
	waits := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "tack_append_lease_waits_total",
		Help: "Tries of appends refused while another instance held the session's read lease: each asked it to let go and tried again.",
	}, func() float64 { return float64(p.leaseWaits.Load()) })
	if err := reg.Register(waits); err != nil {
		return err
	}
	return reg.Register(poolCollector{p.Pool})
}

type poolCollector struct{ pool *pgxpool.Pool }

var (
	poolConns = prometheus.NewDesc("tack_db_pool_conns", "Connections of the Postgres pool by state: acquired (in use), idle, constructing.", []string{"state"}, nil)
	poolMax   = prometheus.NewDesc("tack_db_pool_max_conns", "The pool's size (-max-conns).", nil, nil)
	poolAcq   = prometheus.NewDesc("tack_db_pool_acquires_total", "Connections acquired from the pool.", nil, nil)
	poolEmpty = prometheus.NewDesc("tack_db_pool_empty_acquires_total", "Acquires that waited because the pool had no idle connection.", nil, nil)
	poolWait  = prometheus.NewDesc("tack_db_pool_acquire_seconds_total", "Time spent acquiring connections.", nil, nil)
	poolCanc  = prometheus.NewDesc("tack_db_pool_canceled_acquires_total", "Acquires canceled by their context.", nil, nil)
	poolNew   = prometheus.NewDesc("tack_db_pool_new_conns_total", "Connections the pool opened.", nil, nil)
)

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolConns, poolMax, poolAcq, poolEmpty, poolWait, poolCanc, poolNew} {
		ch <- d
	}
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	count := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(poolConns, float64(s.AcquiredConns()), "acquired")
	gauge(poolConns, float64(s.IdleConns()), "idle")
	gauge(poolConns, float64(s.ConstructingConns()), "constructing")
	gauge(poolMax, float64(s.MaxConns()))
	count(poolAcq, float64(s.AcquireCount()))
	count(poolEmpty, float64(s.EmptyAcquireCount()))
	count(poolWait, s.AcquireDuration().Seconds())
	count(poolCanc, float64(s.CanceledAcquireCount()))
	count(poolNew, float64(s.NewConnsCount()))
}
