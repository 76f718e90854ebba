package controlloop

import (
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/flapdamp"
)

// TestTrackerRestartSeenLateVoidsTheFlush: the other replicas' votes turn
// the verdict to unreachable, so the flush is owed, and back to reachable
// before this replica's own probe has seen the node answer; its own probe
// then finds a new memcached (new pid, counters from zero). The node is
// empty: the flush must not stay owed, or it is flushed whenever it is
// carried out, long after the node filled again (found by the soak,
// e2e/soak_test.go).
func TestTrackerRestartSeenLateVoidsTheFlush(t *testing.T) {
	tr := newTracker(trackerConfig{Hold: flapdamp.Hold{Duration: time.Minute}})
	tr.observeMembership(members(inst("a", true), inst("b", true)), t0)
	tr.observeProbe("a", cachenodes.Stats{PID: 7, Uptime: time.Hour, CmdFlush: 5}, nil, true, t0)
	down := map[string]map[string]time.Time{"r2": {"a": t0.Add(time.Second)}, "r3": {"a": t0.Add(time.Second)}}
	tr.setPeers(down, t0.Add(time.Second))
	tr.observeProbe("a", cachenodes.Stats{}, errDown, true, t0.Add(time.Second))
	if tr.nodes["a"].reachable {
		t.Fatal("a is still reachable with every replica voting it down")
	}
	entry := trackerOwes(tr, "a", nil, t0.Add(time.Second))
	if entry == nil {
		t.Fatal("a owes no flush while the pool finds it unreachable")
	}
	tr.setPeers(map[string]map[string]time.Time{"r2": {}, "r3": {}}, t0.Add(5*time.Second))
	if !tr.nodes["a"].reachable {
		t.Fatal("a is not reachable again once the other replicas see it answer")
	}
	if entry = trackerOwes(tr, "a", entry, t0.Add(5*time.Second)); entry == nil {
		t.Fatal("the owed flush ended on a reading from before the node came back")
	}
	tr.observeProbe("a", cachenodes.Stats{PID: 8, Uptime: 4 * time.Second}, nil, true, t0.Add(6*time.Second))
	if trackerOwes(tr, "a", entry, t0.Add(6*time.Second)) != nil {
		t.Fatal("a restarted memcached (new pid, empty) still owes a flush")
	}
}

// TestVotesThatLagAFlushOweNone: the other replicas' votes lag their
// probes, so a slot holder this process flushed just after a pause can be
// voted unreachable, since a moment before that flush, just after it, and
// answer again before a pass looks. The flush emptied it after the
// failures the votes report: the episode owes nothing (the simulation's
// seed 222 flushed such a node twice). Votes that began after the flush
// are a new episode, and it owes its flush.
func TestVotesThatLagAFlushOweNone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		since time.Duration // the votes' moment; the flush is at 5s
		owes  bool
	}{
		{"votes from before the flush", 4 * time.Second, false},
		{"votes from after the flush", 5500 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTracker(trackerConfig{Hold: flapdamp.Hold{Duration: time.Minute}})
			tr.observeMembership(members(inst("a", true), inst("b", true)), t0)
			tr.observeProbe("a", cachenodes.Stats{PID: 7, Uptime: time.Hour, CmdFlush: 5}, nil, true, t0)
			tr.flushed("a", t0.Add(5*time.Second))
			tr.observeProbe("a", cachenodes.Stats{PID: 7, Uptime: time.Hour + 5*time.Second, CmdFlush: 6}, nil, true, t0.Add(5*time.Second))
			down := map[string]map[string]time.Time{"r2": {"a": t0.Add(tc.since)}, "r3": {"a": t0.Add(tc.since)}}
			tr.setPeers(down, t0.Add(6*time.Second))
			if tr.nodes["a"].reachable {
				t.Fatal("a is still reachable with the other two replicas voting it down")
			}
			tr.setPeers(map[string]map[string]time.Time{"r2": {}, "r3": {}}, t0.Add(7*time.Second))
			if got := trackerOwes(tr, "a", nil, t0.Add(7*time.Second)) != nil; got != tc.owes {
				t.Fatalf("owes a flush: %v, want %v", got, tc.owes)
			}
		})
	}
}
