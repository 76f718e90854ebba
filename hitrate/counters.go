package hitrate

import "time"

// Counters are one memcached node's cumulative counters from "stats":
// get_hits, get_misses, pid and uptime. PID and Uptime let Meter tell a
// restart (the counters start again from zero) from a decrease; a zero PID
// means unknown. Counters is a plain value.
type Counters struct {
	Hits   uint64
	Misses uint64
	PID    int64
	Uptime time.Duration
	// WarmSourceOf, when set, names the node (a key of the same reading)
	// whose slot this node warms as its warm source: the two are counted
	// as the one slot applications read (warmpair.go), and this node's
	// own gets are not counted again. Empty for a slot holder.
	WarmSourceOf string
	// HoldsSlot, on a warm source, marks one that holds a slot of its own:
	// a split's source, slot s's holder, whose gets are its slot's and
	// those forwarded to it (warmpair.go, splitView). Its own gets then
	// count, less those forwarded.
	HoldsSlot bool
	// Planned marks a node whose slot a planned move (a drain or return
	// step, a replace, a maintenance move) touched recently: it warms, or
	// moved or ended its warming a short while ago. A meter that leaves
	// planned moves out (Meter.LeavesOutPlanned) keeps its counters as the
	// baseline of the next interval and counts nothing of it.
	Planned bool
}

// maxGetsPerSecond bounds the gets one memcached can have counted per
// second of uptime; a restarted node reporting more is not believed.
const maxGetsPerSecond = 1e8

// delta returns the hits and misses counted between prev and cur. A new
// pid, a smaller uptime or a smaller counter means memcached restarted (or
// its stats were reset): everything it counted since then is new.
func delta(prev, cur Counters) (hits, misses uint64) {
	restarted := (prev.PID != 0 && cur.PID != 0 && prev.PID != cur.PID) ||
		cur.Uptime < prev.Uptime || cur.Hits < prev.Hits || cur.Misses < prev.Misses
	if restarted {
		// Everything counted since the restart is new, unless the counters
		// are beyond what the node can have served in its uptime (a
		// corrupt reply): then this reading is only a new baseline.
		if float64(cur.Hits)+float64(cur.Misses) > maxGetsPerSecond*max(cur.Uptime.Seconds(), 1) {
			return 0, 0
		}
		return cur.Hits, cur.Misses
	}
	return cur.Hits - prev.Hits, cur.Misses - prev.Misses
}
