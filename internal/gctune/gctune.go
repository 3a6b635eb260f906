// Package gctune sets Tack's default garbage-collection target.
package gctune

import "runtime/debug"

// Percent is the GC target Tack runs with when GOGC is not set: the heap may
// grow to five times what is live between collections, where Go's default
// is twice. A Tack server's live heap is small (pool connections, the live
// hub's topics and queues, the requests in flight: a few MB to tens of MB),
// while every request allocates its JSON and SQL buffers anew, so at the
// default the collector runs often and its marking takes CPU from the
// requests and from Postgres beside them. At 400 the collector runs about a
// third as often for a heap a few tens of MB larger (docs/performance.md,
// "todo_write throughput", has the figures).
const Percent = 400

// Apply sets Percent unless GOGC is set in the environment, which the
// runtime has then already applied; GOMEMLIMIT, when set, still bounds the
// heap whatever the target. It reports the target in force.
func Apply(getenv func(string) string) string {
	if v := getenv("GOGC"); v != "" {
		return v
	}
	debug.SetGCPercent(Percent)
	return "400 (default; set GOGC to change)"
}
