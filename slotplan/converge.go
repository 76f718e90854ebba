package slotplan

import (
	"fmt"
	"time"
)

// When a warming is over because its new holder is warm (docs/api.md,
// "Converged"). A warming's new holder B no longer needs its warm source
// A once, in every stats interval of the last WarmRule.Window, A's hits
// (less those of the leader's copy) were under ConvergedShare of B's
// gets; for a split, whose A also serves slot s, once B's own hit rate
// was within ConvergedRateGap of slot s's, or above it (a new holder
// warmer than slot s, as after a split of a full cache, needs A no more
// than one as warm). An interval in which B saw
// fewer than QuietGets gets says nothing either way and passes, so a
// quiet slot converges at --warm-min. No warming converges before
// --warm-min has passed since its move. A warming whose warm source is
// in a drained zone lasts at most DrainedWarmFor (or --warm-for, when
// shorter).

// The figures of the convergence rule.
const (
	// ConvergedShare is the share of B's gets that A's hits must stay
	// under in every interval of the window.
	ConvergedShare = 0.02
	// ConvergedRateGap is how close a split's B's hit rate must come to
	// slot s's in every interval of the window (from below: a B above
	// slot s's has caught up).
	ConvergedRateGap = 0.02
	// QuietGets is the fewest gets B must see in an interval for the
	// interval to be judged: under it the interval passes.
	QuietGets = 100
	// MinConvergeWindow is the shortest window of the rule; it is
	// 3 stats intervals when those are longer.
	MinConvergeWindow = 30 * time.Second
	// DrainedWarmFor is the longest warming from a warm source in a
	// drained zone.
	DrainedWarmFor = 2 * time.Minute
)

// WarmInterval is one stats interval of a warming slot: the increase,
// between two stats reads, of the counters of its warm source A and its
// new holder B.
type WarmInterval struct {
	// Start and End are the times of the two reads.
	Start, End time.Time
	// HolderGets and HolderHits are B's gets (cmd_get) and hits.
	HolderGets, HolderHits uint64
	// SourceGets and SourceHits are A's gets and hits, less the leader's
	// copy's: for a split, slot s's own and those B forwarded to it.
	SourceGets, SourceHits uint64
}

// quiet reports whether B saw too few gets in iv for it to be judged.
func (iv WarmInterval) quiet() bool { return iv.HolderGets < QuietGets }

// sourceShare returns A's hits as a share of B's gets (0 when B saw none).
func (iv WarmInterval) sourceShare() float64 { return ratio(iv.SourceHits, iv.HolderGets) }

// holderRate returns B's own hit rate.
func (iv WarmInterval) holderRate() float64 { return ratio(iv.HolderHits, iv.HolderGets) }

// sourceRate returns A's hit rate (for a split: slot s's).
func (iv WarmInterval) sourceRate() float64 { return ratio(iv.SourceHits, iv.SourceGets) }

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// WarmHistory is what the loop read of one warming slot: when its move
// was written (or, for a warming another leader wrote, when this process
// first saw it), whether it is a split, and its stats intervals since,
// oldest first.
type WarmHistory struct {
	Start     time.Time
	Split     bool
	Intervals []WarmInterval
}

// LastHolderRate returns B's hit rate over the last interval, and false
// when there is none or B saw no get in it.
func (h *WarmHistory) LastHolderRate() (float64, bool) {
	if h == nil || len(h.Intervals) == 0 {
		return 0, false
	}
	iv := h.Intervals[len(h.Intervals)-1]
	return iv.holderRate(), iv.HolderGets > 0
}

// WarmRule is the convergence rule with its flags. The zero value never
// converges a warming (WarmMin 0 and a StatsInterval of 0 still judge:
// only a nil history never converges).
type WarmRule struct {
	// WarmMin is --warm-min: no warming converges sooner after its move.
	WarmMin time.Duration
	// StatsInterval is --stats-interval, the length of an interval.
	StatsInterval time.Duration
}

// Window returns how far back the rule looks: max(MinConvergeWindow,
// 3 × StatsInterval).
func (r WarmRule) Window() time.Duration { return max(MinConvergeWindow, 3*r.StatsInterval) }

// Convergence is the rule's verdict on one warming.
type Convergence struct {
	// Converged is true when the warming is over: B is warm.
	Converged bool
	// At is the end of the last interval judged: the stats read that
	// completed the condition, when Converged.
	At time.Time
	// Quiet is true when every interval of the window passed for lack of
	// gets.
	Quiet bool
	// SourceShare is the highest share of B's gets that A's hits made in
	// an interval of the window (not a split); HolderRate the lowest of
	// B's hit rates, SourceRate slot s's in that interval (a split).
	SourceShare, HolderRate, SourceRate float64
}

// Why says, in a few words for the event, why the warming converged,
// with the figures.
func (c Convergence) Why(r WarmRule, split bool) string {
	switch {
	case c.Quiet:
		return fmt.Sprintf("converged: its new holder saw under %d gets an interval over the last %s, so it ended at --warm-min", QuietGets, r.Window())
	case split:
		return fmt.Sprintf("converged: over the last %s the new holder's hit rate was at least %.1f%% against slot s's %.1f%%, within %.2f", r.Window(), 100*c.HolderRate, 100*c.SourceRate, ConvergedRateGap)
	}
	return fmt.Sprintf("converged: over the last %s the warm source's hits were at most %.2f%% of the new holder's gets (its hit rate at least %.1f%%)", r.Window(), 100*c.SourceShare, 100*c.HolderRate)
}

// Judge returns the verdict on h as of its last interval: converged when
// that interval ends at least WarmMin after h.Start and every interval of
// the window before it (those ending after its end less Window) passes,
// the window covered from no later than one StatsInterval after its
// start, or after h.Start when the window begins before it (the
// intervals before the move are not the warming's). An interval passes when B saw under QuietGets gets, or (not a
// split) A's hits were under ConvergedShare of B's gets, or (a split) B's
// hit rate was within ConvergedRateGap of A's or above it. Intervals that began
// before h.Start are not judged. A nil h or one without intervals is not
// converged.
func (r WarmRule) Judge(h *WarmHistory) Convergence {
	if h == nil || len(h.Intervals) == 0 {
		return Convergence{}
	}
	at := h.Intervals[len(h.Intervals)-1].End
	v := Convergence{At: at, Quiet: true, HolderRate: 1, SourceRate: 1}
	if at.Sub(h.Start) < r.WarmMin {
		return v
	}
	from := at.Add(-r.Window())
	earliest := at
	for i := len(h.Intervals) - 1; i >= 0; i-- {
		iv := h.Intervals[i]
		if !iv.End.After(from) || iv.Start.Before(h.Start) {
			break
		}
		earliest = iv.Start
		if iv.quiet() {
			continue
		}
		v.Quiet = false
		if h.Split {
			if iv.holderRate()-iv.sourceRate() < -ConvergedRateGap {
				return Convergence{At: at}
			}
			if iv.holderRate() < v.HolderRate {
				v.HolderRate, v.SourceRate = iv.holderRate(), iv.sourceRate()
			}
			continue
		}
		if iv.sourceShare() >= ConvergedShare {
			return Convergence{At: at}
		}
		v.SourceShare = max(v.SourceShare, iv.sourceShare())
		v.HolderRate = min(v.HolderRate, iv.holderRate())
	}
	if earliest.Sub(later(from, h.Start)) > r.StatsInterval {
		return Convergence{At: at} // the window (since the move) is not covered yet
	}
	v.Converged = true
	return v
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// DrainedCap returns how long a warming from a warm source in a drained
// zone lasts at most: min(warmFor, DrainedWarmFor).
func DrainedCap(warmFor time.Duration) time.Duration { return min(warmFor, DrainedWarmFor) }
