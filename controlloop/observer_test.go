package controlloop

import (
	"fmt"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/flapdamp"
)

// holdersMap returns a map whose slots hold the given nodes, in order.
func holdersMap(t *testing.T, ids ...string) *cachenodes.SlotMap {
	t.Helper()
	spec := cachenodes.SlotMapSpec{Pool: "p"}
	for _, id := range ids {
		spec.Slots = append(spec.Slots, cachenodes.Node{ID: id, Addr: "127.0.0.1:" + id})
	}
	m, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// observerTracker is a tracker over holders a, b, c, d (all present and
// probed once) with a 2s probe interval and the default mass fraction.
func observerTracker(t *testing.T) *tracker {
	t.Helper()
	tr := newTracker(trackerConfig{
		Hold:          flapdamp.Hold{Duration: 10 * time.Second},
		ProbeInterval: 2 * time.Second,
		Mass:          flapdamp.MassGuard{MaxAbsentFraction: 0.25},
		Damping:       flapdamp.DampingConfig{BurstWindow: 2 * time.Second}.WithDefaults(),
	})
	tr.observeMembership(members(inst("a", true), inst("b", true), inst("c", true), inst("d", true)), t0)
	tr.ensure(holdersMap(t, "a", "b", "c", "d"), t0)
	for _, id := range []string{"a", "b", "c", "d"} {
		tr.observeProbe(id, cachenodes.Stats{PID: 1, Uptime: time.Hour, CmdFlush: 3}, nil, true, t0)
	}
	return tr
}

var upStats = cachenodes.Stats{PID: 1, Uptime: 2 * time.Hour, CmdFlush: 3}

func TestUnreachableNeedsAWholeProbeInterval(t *testing.T) {
	tests := []struct {
		name    string
		fails   []time.Duration // failed probes of a, after t0
		okAt    time.Duration   // then a success
		wantBad bool            // unreachable before okAt
		flush   bool            // owes a flush after okAt
	}{
		{"one dropped SYN is no verdict", []time.Duration{time.Second}, 3 * time.Second, false, false},
		{"failures within one interval are no verdict", []time.Duration{time.Second, 2 * time.Second, 2900 * time.Millisecond}, 3 * time.Second, false, false},
		{"failures over a whole interval are", []time.Duration{time.Second, 3 * time.Second}, 5 * time.Second, true, true},
		{"a success in between starts over", []time.Duration{time.Second, 4 * time.Second, 5 * time.Second}, 6 * time.Second, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := observerTracker(t)
			var entry *OwedFlush
			for i, at := range tc.fails {
				tr.observeProbe("a", cachenodes.Stats{}, errDown, true, t0.Add(at))
				entry = trackerOwes(tr, "a", entry, t0.Add(at))
				if tc.name == "a success in between starts over" && i == 0 {
					tr.observeProbe("a", upStats, nil, true, t0.Add(at+time.Second))
					entry = trackerOwes(tr, "a", entry, t0.Add(at+time.Second))
				}
			}
			if got := !tr.nodes["a"].reachable; got != tc.wantBad {
				t.Fatalf("unreachable = %v, want %v", got, tc.wantBad)
			}
			tr.observeProbe("a", upStats, nil, true, t0.Add(tc.okAt))
			if entry = trackerOwes(tr, "a", entry, t0.Add(tc.okAt)); (entry != nil) != tc.flush {
				t.Fatalf("owes a flush: %v, want %v", entry != nil, tc.flush)
			}
		})
	}
}

func TestReplicasVoteOnUnreachable(t *testing.T) {
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	tests := []struct {
		name      string
		localDown bool
		peers     map[string]map[string]time.Time
		want      bool
		since     time.Time
	}{
		{"alone, this process decides", true, nil, true, at(time.Second)},
		{"two peers reach it: no", true, map[string]map[string]time.Time{"r2": {}, "r3": {}}, false, time.Time{}},
		{"one of two peers agrees: yes, from the later vote", true, map[string]map[string]time.Time{"r2": {"a": at(2 * time.Second)}, "r3": {}}, true, at(2 * time.Second)},
		{"two peers agree though this process reaches it", false, map[string]map[string]time.Time{"r2": {"a": at(2 * time.Second)}, "r3": {"a": at(4 * time.Second)}}, true, at(4 * time.Second)},
		{"one of one peer against a reachable local view: no", false, map[string]map[string]time.Time{"r2": {"a": at(2 * time.Second)}}, false, time.Time{}},
		{"one of one peer with a local failure: yes", true, map[string]map[string]time.Time{"r2": {"a": at(2 * time.Second)}}, true, at(2 * time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := observerTracker(t)
			if tc.localDown {
				tr.observeProbe("a", cachenodes.Stats{}, errDown, true, at(time.Second))
				tr.observeProbe("a", cachenodes.Stats{}, errDown, true, at(3*time.Second))
			}
			tr.setPeers(tc.peers, at(5*time.Second))
			s := tr.nodes["a"]
			if got := !s.reachable; got != tc.want {
				t.Fatalf("unreachable = %v, want %v", got, tc.want)
			}
			if tc.want && !s.unreachableSince.Equal(tc.since) {
				t.Fatalf("unreachable since %v, want %v", s.unreachableSince, tc.since)
			}
			if got := tr.localVotes()["a"]; tc.localDown != !got.IsZero() {
				t.Fatalf("local vote %v, local failure %v", got, tc.localDown)
			}
		})
	}
}

func TestMassUnreachableIsTheObserversFault(t *testing.T) {
	tr := observerTracker(t)
	for _, id := range []string{"a", "b"} {
		tr.observeProbe(id, cachenodes.Stats{}, errDown, true, t0.Add(time.Second))
		tr.observeProbe(id, cachenodes.Stats{}, errDown, true, t0.Add(3*time.Second))
	}
	if tr.mass == "" {
		t.Fatal("2 of 4 holders unreachable at once: no mass episode")
	}
	for _, id := range []string{"a", "b"} {
		if trackerOwes(tr, id, nil, t0.Add(4*time.Second)) != nil {
			t.Fatalf("node %s owes a flush in an episode of the observer's fault", id)
		}
	}
	for _, id := range []string{"a", "b"} {
		tr.observeProbe(id, upStats, nil, true, t0.Add(5*time.Second))
		if trackerOwes(tr, id, nil, t0.Add(5*time.Second)) != nil {
			t.Fatalf("node %s owes a flush after an observer's fault", id)
		}
	}
	tr.ensure(holdersMap(t, "a", "b", "c", "d"), t0.Add(9*time.Second))
	if tr.mass != "" {
		t.Fatalf("mass episode %q outlived it by two probe intervals", tr.mass)
	}
	// A single node afterwards is judged on its own: flushed on return.
	tr.observeProbe("c", cachenodes.Stats{}, errDown, true, t0.Add(11*time.Second))
	tr.observeProbe("c", cachenodes.Stats{}, errDown, true, t0.Add(13*time.Second))
	if tr.mass != "" {
		t.Fatalf("one unreachable holder is a mass episode: %q", tr.mass)
	}
	if trackerOwes(tr, "c", nil, t0.Add(13*time.Second)) == nil {
		t.Fatal("a single unreachable node owes no flush")
	}
}

func TestMassEpisodeEndStartsTheClockOfTheStillUnreachable(t *testing.T) {
	tr := observerTracker(t)
	for _, id := range []string{"a", "b"} {
		tr.observeProbe(id, cachenodes.Stats{}, errDown, true, t0.Add(time.Second))
		tr.observeProbe(id, cachenodes.Stats{}, errDown, true, t0.Add(3*time.Second))
	}
	tr.observeProbe("a", upStats, nil, true, t0.Add(16*time.Second))
	if tr.mass == "" {
		t.Fatal("the episode ended at once when a holder came back; the others may be a moment behind")
	}
	tr.ensure(holdersMap(t, "a", "b", "c", "d"), t0.Add(20*time.Second))
	if tr.mass != "" {
		t.Fatal("the episode did not end when 1 of 4 remained unreachable for two probe intervals")
	}
	b := tr.nodes["b"]
	if !b.unreachableSince.Equal(t0.Add(20*time.Second)) || b.observerFault {
		t.Fatalf("b: unreachable since %v, observer fault %v; want its own clock from the episode's end", b.unreachableSince, b.observerFault)
	}
	if trackerOwes(tr, "b", nil, t0.Add(21*time.Second)) == nil {
		t.Fatal("b, unreachable on its own after the episode, owes no flush")
	}
}

func TestFollowerForgetsAFlushTheLeaderDid(t *testing.T) {
	tr := observerTracker(t)
	tr.observeProbe("a", cachenodes.Stats{}, errDown, true, t0.Add(time.Second))
	tr.observeProbe("a", cachenodes.Stats{}, errDown, true, t0.Add(3*time.Second))
	entry := trackerOwes(tr, "a", nil, t0.Add(3*time.Second))
	if entry == nil {
		t.Fatal("an unreachable holder owes no flush")
	}
	// The leader flushed a before this process saw it answer again.
	flushed := upStats
	flushed.CmdFlush++
	tr.observeProbe("a", flushed, nil, true, t0.Add(6*time.Second))
	if trackerOwes(tr, "a", entry, t0.Add(6*time.Second)) != nil {
		t.Fatal("the node owes a flush although cmd_flush shows it was flushed since it went away")
	}
}

func TestOneCrashIsOneFlap(t *testing.T) {
	tr := observerTracker(t)
	tr.observeProbe("a", cachenodes.Stats{}, errDown, true, t0.Add(time.Second))
	tr.observeProbe("a", cachenodes.Stats{}, errDown, true, t0.Add(3*time.Second))
	// Consul's check notices seconds later, beyond the burst window.
	tr.observeMembership(members(inst("a", false), inst("b", true), inst("c", true), inst("d", true)), t0.Add(9*time.Second))
	if got := tr.nodes["a"].penalty.Flaps(); got != 1 {
		t.Fatalf("one crash counted as %d flaps, want 1", got)
	}
	// Back, then absent again: a second flap.
	tr.observeProbe("a", cachenodes.Stats{PID: 2}, nil, true, t0.Add(20*time.Second))
	tr.observeMembership(members(inst("a", true), inst("b", true), inst("c", true), inst("d", true)), t0.Add(21*time.Second))
	tr.observeMembership(members(inst("a", false), inst("b", true), inst("c", true), inst("d", true)), t0.Add(30*time.Second))
	if got := tr.nodes["a"].penalty.Flaps(); got != 2 {
		t.Fatalf("two crashes counted as %d flaps, want 2", got)
	}
}

func TestPenaltyOutlivesASparesAbsence(t *testing.T) {
	cfg := flapdamp.DampingConfig{BurstWindow: time.Second}.WithDefaults()
	tr := newTracker(trackerConfig{Damping: cfg})
	now := t0
	for i := range 3 {
		tr.observeMembership(members(inst("b", true), inst("s", true)), now)
		tr.observeMembership(members(inst("b", true)), now.Add(5*time.Second))
		tr.prune(nil, now.Add(5*time.Second))
		if _, ok := tr.nodes["s"]; ok {
			t.Fatalf("round %d: the departed spare was not pruned", i)
		}
		now = now.Add(10 * time.Second)
	}
	tr.observeMembership(members(inst("b", true), inst("s", true)), now)
	if got := tr.nodes["s"].penalty.Flaps(); got != 3 {
		t.Fatalf("the spare carries %d flaps after 3 drop-outs, want 3", got)
	}
	for _, v := range tr.views(now) {
		if v.ID == "s" && !v.Suppressed {
			t.Fatalf("a spare that dropped out 3 times in 30s is not suppressed (penalty %.0f)", tr.nodes["s"].penalty.Value(now, cfg))
		}
	}
	// Long after, the history has decayed and is forgotten with the node.
	tr.observeMembership(members(inst("b", true)), now.Add(time.Second))
	tr.prune(nil, now.Add(24*time.Hour))
	if _, ok := tr.penalties["s"]; ok {
		t.Fatal("a decayed penalty of a forgotten node is kept forever")
	}
	if got := fmt.Sprint(len(tr.penalties)); got != "1" {
		t.Fatalf("%s penalties kept, want only b's", got)
	}
}
