package live

import "github.com/prometheus/client_golang/prometheus"

// Register registers the hub's collectors, and its carrier's, on reg: they
// read the counters the hub keeps anyway, so a scrape costs the hot paths
// nothing.
func (h *Hub) Register(reg prometheus.Registerer) error {
	st := &h.stats
	labelled := func(name, help string, labels prometheus.Labels, v func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return float64(v()) })
	}
	counter := func(name, help string, v func() int64) prometheus.Collector { return labelled(name, help, nil, v) }
	const catchupHelp = "Catch-up reads from the store: by a session's topic after a notice, or by one socket for its backlog or a gap."
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tack_live_sockets", Help: "Open live websockets."},
			func() float64 { return float64(st.Connections.Load()) }),
		counter("tack_live_deliveries_total", "Messages written to live sockets.", st.Deliveries.Load),
		counter("tack_live_slow_closes_total", "Sockets closed for falling behind (close code 4008).", st.TooSlow.Load),
		labelled("tack_live_catchup_reads_total", catchupHelp, prometheus.Labels{"by": "topic"}, st.Fetches.Load),
		labelled("tack_live_catchup_reads_total", catchupHelp, prometheus.Labels{"by": "socket"}, st.SocketReads.Load),
		counter("tack_live_catchup_errors_total", "Catch-up reads that failed (a store error).", st.ReadErrors.Load),
		counter("tack_live_resyncs_total", "Resyncs of every session after the carrier (re)connected.", st.Resyncs.Load),
	}
	if p, ok := h.opts.Carrier.(*PGNotify); ok {
		cs = append(cs,
			counter("tack_live_notify_batches_total", "Rounds of NOTIFY sent, each naming every session changed since the last.", p.rounds.Load),
			counter("tack_live_notifications_total", "NOTIFY payloads sent.", p.sent.Load),
			counter("tack_live_listener_reconnects_total", "LISTEN connections made after the first one.", p.reconnects.Load),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tack_live_listener_up", Help: "1 while the LISTEN connection is up."},
				func() float64 {
					if p.listenerPID.Load() != 0 {
						return 1
					}
					return 0
				}),
		)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
