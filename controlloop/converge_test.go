package controlloop

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/eventlog"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/slotplan"
)

// slotLoad drives the counters of one warming slot's two nodes: each
// interval B sees gets gets and hits a share of them, and A hits srcHits
// (B's misses it was forwarded, the rest missing there too).
type slotLoad struct {
	w                      *world
	source, holder         string
	sHits, sMiss, hH, hMis uint64
}

func (l *slotLoad) interval(gets uint64, holderRate float64, srcHits uint64) {
	hits := uint64(float64(gets) * holderRate)
	l.hH, l.hMis = l.hH+hits, l.hMis+gets-hits
	l.sHits += srcHits
	l.sMiss += gets - hits - min(srcHits, gets-hits)
	l.w.prober.setCounters(cacheNode(l.holder).Addr, l.hH, l.hMis)
	l.w.prober.setCounters(cacheNode(l.source).Addr, l.sHits, l.sMiss)
}

// statsRead advances the clock by one stats interval (5 s), probes, reads
// the stats as the boot limiter does, and runs a pass.
func (w *world) statsRead() {
	w.t.Helper()
	w.clk.Advance(5 * time.Second)
	w.probe()
	w.loop.HitCounters(context.Background())
	w.pass(mcribapi.OutcomeOK)
}

// convergeWorld is threeZones under --warm-for 30m and --warm-min 30s,
// with slot 4 (b2) moved warm to b3 by a replace: it returns the world,
// the event log and the time the move was written.
func convergeWorld(t *testing.T) (*world, *eventlog.Log, time.Time) {
	t.Helper()
	w := threeZones(t)
	w.loop.opts.WarmFor = 30 * time.Minute
	w.loop.opts.Converge = &slotplan.WarmRule{WarmMin: 30 * time.Second, StatsInterval: 5 * time.Second}
	log := eventlog.NewLog(eventlog.Options{Clock: w.clk})
	w.loop.opts.Events = eventlog.Recorder{Log: log}
	if _, err := w.loop.Replace(context.Background(), "b2", "retire it", "ops"); err != nil {
		t.Fatal(err)
	}
	w.serve()
	m, _ := w.store.stored()
	if ws := m.Warming(4); ws == nil || ws.NodeID != "b2" || m.Slot(4).ID != "b3" {
		t.Fatalf("no warming of slot 4 from b2 to b3: %+v", ws)
	}
	return w, log, w.clk.Now()
}

func warmEnds(log *eventlog.Log) []string {
	var out []string
	for _, e := range log.Since(0) {
		if e.Kind == mcribapi.EventWarmEnd {
			out = append(out, e.Reason)
		}
	}
	return out
}

// TestWarmingEndsAtConvergence: a warming ends (ended_at) at the first
// pass after the stats read that completes the convergence window, not
// while the warm source still serves over 2% of the new holder's gets;
// the event gives the figures, the status B's hit rate.
func TestWarmingEndsAtConvergence(t *testing.T) {
	w, log, moved := convergeWorld(t)
	load := &slotLoad{w: w, source: "b2", holder: "b3"}
	w.statsRead() // the baseline
	// A minute cold: B hits 60%, A hits 30% of B's gets for it.
	for w.clk.Now().Sub(moved) < time.Minute {
		load.interval(1000, 0.6, 300)
		w.statsRead()
		if m, _ := w.store.stored(); m.Warming(4).Ended() {
			t.Fatalf("the warming ended at %s while cold", w.clk.Now().Sub(moved))
		}
	}
	if n := w.node("b3"); n.WarmHitRate == nil || *n.WarmHitRate != 0.6 {
		t.Fatalf("b3's warm_hit_rate %v, want 0.6", n.WarmHitRate)
	}
	if n := w.node("a1"); n.WarmHitRate != nil {
		t.Fatalf("a1, whose slot does not warm, has a warm_hit_rate %v", *n.WarmHitRate)
	}
	// Then warm: A hits 1% of B's gets. The window (30 s) is all warm six
	// reads later: at the pass after the sixth, not the fifth.
	warmFrom := w.clk.Now()
	for i := 1; ; i++ {
		load.interval(1000, 0.97, 10)
		w.statsRead()
		m, _ := w.store.stored()
		ended := m.Warming(4).Ended()
		if i < 6 && ended {
			t.Fatalf("ended %s into the warm reads, before a whole window of them", w.clk.Now().Sub(warmFrom))
		}
		if ended {
			if !m.Warming(4).EndedAt.Equal(w.clk.Now()) {
				t.Fatalf("ended_at %v, want the pass's %v", m.Warming(4).EndedAt, w.clk.Now())
			}
			break
		}
		if i >= 6 {
			t.Fatalf("not ended %s into the warm reads", w.clk.Now().Sub(warmFrom))
		}
	}
	ends := warmEnds(log)
	if len(ends) != 1 || !strings.Contains(ends[0], "converged") || !strings.Contains(ends[0], "at most 1.00% of the new holder's gets") || !strings.Contains(ends[0], "97.0%") {
		t.Fatalf("warm end events %q, want one that converged, with both rates", ends)
	}
	// The object goes 12 s later, as for any ended warming.
	w.after(cachenodes.WarmWriteGrace)
	if m, _ := w.store.stored(); m.AnyWarming() {
		t.Fatalf("the converged warming's object is still there 12 s after ended_at")
	}
}

// TestQuietWarmingEndsAtWarmMin: a slot whose new holder sees under 100
// gets an interval converges at --warm-min, never before.
func TestQuietWarmingEndsAtWarmMin(t *testing.T) {
	w, log, moved := convergeWorld(t)
	load := &slotLoad{w: w, source: "b2", holder: "b3"}
	for {
		load.interval(40, 0.5, 20)
		w.statsRead()
		m, _ := w.store.stored()
		since := w.clk.Now().Sub(moved)
		if since < 30*time.Second && m.Warming(4).Ended() {
			t.Fatalf("a quiet warming ended %s after its move, before --warm-min", since)
		}
		if since >= 30*time.Second {
			if !m.Warming(4).Ended() {
				t.Fatalf("a quiet warming still warms %s after its move", since)
			}
			break
		}
	}
	if ends := warmEnds(log); len(ends) != 1 || !strings.Contains(ends[0], "under 100 gets") {
		t.Fatalf("warm end events %q", ends)
	}
}

// TestDrainedWarmingLastsTwoMinutes: a warming whose warm source is in a
// drained zone ends 2 minutes after its move, converged or not.
func TestDrainedWarmingLastsTwoMinutes(t *testing.T) {
	w := threeZones(t)
	w.loop.opts.WarmFor = 30 * time.Minute
	w.loop.opts.Converge = &slotplan.WarmRule{WarmMin: 30 * time.Second, StatsInterval: 5 * time.Second}
	w.drain("az-b", 100, 50, time.Hour)
	w.pass(mcribapi.OutcomeOK)
	w.serve()
	moved := w.clk.Now()
	m, _ := w.store.stored()
	slot := -1
	for i := range m.NumSlots() {
		if ws := m.Warming(i); ws != nil {
			slot = i
		}
	}
	if slot < 0 {
		t.Fatalf("the drain step moved nothing warm")
	}
	load := &slotLoad{w: w, source: m.Warming(slot).NodeID, holder: m.Slot(slot).ID}
	for {
		load.interval(1000, 0.5, 400) // cold throughout
		w.statsRead()
		m, _ := w.store.stored()
		since := w.clk.Now().Sub(moved)
		ended := m.Warming(slot) != nil && m.Warming(slot).Ended()
		if since < 2*time.Minute && ended {
			t.Fatalf("the drained zone's warming ended %s after its move", since)
		}
		if since >= 2*time.Minute {
			if !ended {
				t.Fatalf("the drained zone's warming goes on %s after its move", since)
			}
			break
		}
	}
}
