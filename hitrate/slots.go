package hitrate

// Slots is what one stats reading knows of the slots behind its counters
// (the pool's, or one zone's): how many there are, how many have no live
// holder, and how many served slots' holders could not be read. A slot
// with no live holder (vacant, or its holder unreachable by the pool's
// verdict) serves no hit: every get of its keys goes to the database, so
// Meter counts its share of the gets as misses (see Meter.Observe). A
// served slot whose holder's counters could not be read is only left out:
// the slots read stand for it.
//
// The zero value knows nothing of slots and counts every get the counters
// show as all there is, as before the slots were counted. Slots is a
// plain value.
type Slots struct {
	// Total is the number of slots, n (a resize's twins included).
	Total int
	// Unserved is how many of them have no live holder, u.
	Unserved int
	// Unreadable is how many served slots' holders could not be read
	// (unreachable by this process, or not probed yet); they are left out.
	Unreadable int
}

// servedShare returns (n − u) ÷ n, the share of the applications' gets
// that reach a live holder: 1 when Total is 0 (nothing known of slots),
// and never below 0 or above 1.
func (s Slots) servedShare() float64 {
	if s.Total <= 0 || s.Unserved <= 0 {
		return 1
	}
	return max(float64(s.Total-min(s.Unserved, s.Total))/float64(s.Total), 0)
}
