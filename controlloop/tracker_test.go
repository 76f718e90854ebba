package controlloop

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/flapdamp"
	"github.com/mcrib/mcrib/slotplan"
)

var t0 = time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)

func inst(id string, present bool) cachenodes.Instance {
	return cachenodes.Instance{Node: cachenodes.Node{ID: id, Addr: "127.0.0.1:" + id}, Present: present}
}

func members(in ...cachenodes.Instance) cachenodes.Membership {
	return cachenodes.Membership{Instances: in}
}

var errDown = errors.New("connection refused")

func TestDiscoveryFault(t *testing.T) {
	for _, tc := range []struct {
		n, prev  int
		havePrev bool
		fault    bool
	}{
		{0, 0, false, true},
		{0, 6, true, true},
		{2, 6, true, true},
		{3, 6, true, false},
		{5, 6, true, false},
		{1, 0, false, false},
		{1, 3, true, true},
		{2, 3, true, false},
	} {
		if got := DiscoveryFault(tc.n, tc.prev, tc.havePrev) != ""; got != tc.fault {
			t.Errorf("DiscoveryFault(%d, %d, %v) fault=%v, want %v", tc.n, tc.prev, tc.havePrev, got, tc.fault)
		}
	}
}

// step is one observation in a tracker scenario.
type step struct {
	at      time.Duration
	answer  *cachenodes.Membership
	probeID string
	stats   cachenodes.Stats
	err     error
	// noPass, when set, means no pass of the leader runs after the step
	// (the probes turn verdicts between passes).
	noPass bool
	// owed, when set, is the flushes document read at the step: whether
	// it holds an entry for "a" (a leader's, carried out meanwhile).
	owed *bool
	// want, checked after the step for node "a"; owes: the leader has
	// decided that it owes a flush, and the flush is not done yet
	// (trackerOwes).
	due, owes, reachable, present *bool
}

func b(v bool) *bool { return &v }

func runTracker(t *testing.T, cfg trackerConfig, holds bool, steps []step) {
	t.Helper()
	tr := newTracker(cfg)
	var entry *OwedFlush
	for i, s := range steps {
		now := t0.Add(s.at)
		if s.answer != nil {
			tr.observeMembership(*s.answer, now)
		}
		if s.owed != nil {
			var doc []OwedFlush
			if *s.owed {
				doc = []OwedFlush{{NodeID: "a"}}
			}
			tr.sawOwed(doc, now)
		}
		if s.probeID != "" {
			tr.observeProbe(s.probeID, s.stats, s.err, holds, now)
		}
		if _, ok := tr.nodes["a"]; !ok {
			t.Fatalf("step %d: node a not tracked", i)
		}
		if !s.noPass {
			entry = trackerOwes(tr, "a", entry, now)
			tr.judgedEnded()
		}
		var view slotplan.NodeView
		for _, v := range tr.views(now) {
			if v.ID == "a" {
				view = v
			}
		}
		check := func(name string, want *bool, got bool) {
			t.Helper()
			if want != nil && *want != got {
				t.Fatalf("step %d (t+%s): %s = %v, want %v", i, s.at, name, got, *want)
			}
		}
		check("due", s.due, view.Due)
		check("owes", s.owes, entry != nil)
		check("reachable", s.reachable, view.Reachable)
		check("present", s.present, view.Present)
	}
}

// trackerOwes plays the leader's part (owedflush.go) over tr for node id
// at now: the entry it owes (nil: none), decided when its flush is due
// and ended when it is done.
func trackerOwes(tr *tracker, id string, entry *OwedFlush, now time.Time) *OwedFlush {
	s := tr.nodes[id]
	if entry == nil && tr.flushDue(s, tr.massPending(), now) {
		e := tr.owedEntry(s, now)
		entry = &e
	}
	if entry != nil {
		if done, _ := tr.flushDone(*entry, s); done {
			return nil
		}
	}
	return entry
}

func TestTrackerHoldAndFlush(t *testing.T) {
	cfg := trackerConfig{Hold: flapdamp.Hold{Duration: 10 * time.Second}}
	both := members(inst("a", true), inst("b", true))
	onlyB := members(inst("b", true))
	st := cachenodes.Stats{PID: 100, Uptime: time.Hour}
	later := cachenodes.Stats{PID: 100, Uptime: time.Hour + time.Minute}
	restarted := cachenodes.Stats{PID: 200, Uptime: time.Second}
	tests := []struct {
		name  string
		cfg   trackerConfig
		holds bool
		steps []step
	}{
		{"absent but reachable is never due", cfg, true, []step{
			{at: 0, answer: &both, present: b(true)},
			{at: time.Second, probeID: "a", stats: st, reachable: b(true)},
			{at: 2 * time.Second, answer: &onlyB, present: b(false), due: b(false)},
			{at: time.Hour, probeID: "a", stats: later, due: b(false), owes: b(false)},
		}},
		{"absent and unreachable for the hold is due", cfg, true, []step{
			{at: 0, answer: &both},
			{at: time.Second, probeID: "a", stats: st},
			{at: 2 * time.Second, answer: &onlyB},
			{at: 5 * time.Second, probeID: "a", err: errDown, reachable: b(false), due: b(false)},
			{at: 14 * time.Second, probeID: "a", err: errDown, due: b(false)},
			{at: 15 * time.Second, probeID: "a", err: errDown, due: b(true)},
		}},
		{"unreachable but present is never due", cfg, true, []step{
			{at: 0, answer: &both},
			{at: time.Second, probeID: "a", err: errDown, reachable: b(false)},
			{at: time.Hour, probeID: "a", err: errDown, due: b(false)},
		}},
		{"a slot holder unreachable owes a flush, still owed once it answers", cfg, true, []step{
			{at: 0, answer: &both},
			{at: time.Second, probeID: "a", stats: st},
			{at: 2 * time.Second, probeID: "a", err: errDown, owes: b(true)},
			{at: 3 * time.Second, probeID: "a", stats: later, reachable: b(true), owes: b(true)},
		}},
		{"a restarted memcached owes no flush", cfg, true, []step{
			{at: 0, answer: &both},
			{at: time.Second, probeID: "a", stats: st},
			{at: 2 * time.Second, probeID: "a", err: errDown, owes: b(true)},
			{at: 3 * time.Second, probeID: "a", stats: restarted, owes: b(false)},
		}},
		{"a memcached that restarted and then stopped answering again still owes its flush", cfg, true, []step{
			// It restarted at 3s unseen, took writes, and missed deletes
			// while it did not answer from 4s to 8s: not empty.
			{at: 0, answer: &both},
			{at: time.Second, probeID: "a", stats: st},
			{at: 2 * time.Second, probeID: "a", err: errDown, owes: b(true)},
			{at: 4 * time.Second, probeID: "a", err: errDown},
			{at: 8 * time.Second, probeID: "a", err: errDown},
			{at: 9 * time.Second, probeID: "a", stats: cachenodes.Stats{PID: 200, Uptime: 6 * time.Second}, reachable: b(true), owes: b(true)},
		}},
		{"a flush another leader made after the last reading is no owed flush's", cfg, true, []step{
			// Another leader owed a's flush and carried it out after this
			// process's last reading (cmd_flush 0): a new episode's flush is
			// not done by that one (cmd_flush 1 on return).
			{at: 0, answer: &both},
			{at: time.Second, probeID: "a", stats: st},
			{at: 1500 * time.Millisecond, owed: b(true)},
			{at: 2 * time.Second, owed: b(false)},
			{at: 3 * time.Second, probeID: "a", err: errDown, owes: b(true)},
			{at: 4 * time.Second, probeID: "a", err: errDown, owes: b(true)},
			{at: 5 * time.Second, probeID: "a", stats: cachenodes.Stats{PID: 100, Uptime: time.Hour, CmdFlush: 1}, reachable: b(true), owes: b(true)},
		}},
		{"decided from no reading, a memcached that started since owes nothing", cfg, true, []step{
			{at: 0, answer: &both},
			{at: 2 * time.Second, probeID: "a", err: errDown},
			{at: 3 * time.Second, probeID: "a", err: errDown, owes: b(true)},
			{at: 10 * time.Second, probeID: "a", stats: cachenodes.Stats{PID: 5, Uptime: 5 * time.Second}, reachable: b(true), owes: b(false)},
		}},
		{"decided from no reading, a memcached that ran all along still owes", cfg, true, []step{
			{at: 0, answer: &both},
			{at: 2 * time.Second, probeID: "a", err: errDown},
			{at: 3 * time.Second, probeID: "a", err: errDown, owes: b(true)},
			{at: 10 * time.Second, probeID: "a", stats: cachenodes.Stats{PID: 5, Uptime: time.Hour}, reachable: b(true), owes: b(true)},
		}},
		{"uptime reset counts as a restart", cfg, true, []step{
			{at: 0, answer: &both},
			{at: time.Second, probeID: "a", stats: st},
			{at: 2 * time.Second, probeID: "a", err: errDown, owes: b(true)},
			{at: 3 * time.Second, probeID: "a", stats: cachenodes.Stats{PID: 100, Uptime: time.Second}, owes: b(false)},
		}},
		{"a spare unreachable owes no flush", cfg, false, []step{
			{at: 0, answer: &both},
			{at: time.Second, probeID: "a", stats: st},
			{at: 2 * time.Second, probeID: "a", err: errDown, owes: b(false)},
			{at: 3 * time.Second, probeID: "a", stats: later, owes: b(false)},
		}},
		{"a short unreachability under --flush-after-unreachable keeps contents", trackerConfig{Hold: cfg.Hold, FlushAfter: 5 * time.Second}, true, []step{
			{at: 0, answer: &both},
			{at: time.Second, probeID: "a", stats: st},
			{at: 2 * time.Second, probeID: "a", err: errDown},
			{at: 7 * time.Second, probeID: "a", err: errDown, owes: b(false)},
			{at: 7500 * time.Millisecond, probeID: "a", stats: later, owes: b(false)},
			{at: time.Minute, probeID: "a", stats: later, owes: b(false)},
		}},
		{"a long unreachability over --flush-after-unreachable flushes", trackerConfig{Hold: cfg.Hold, FlushAfter: 5 * time.Second}, true, []step{
			{at: 0, answer: &both},
			{at: time.Second, probeID: "a", stats: st},
			{at: 2 * time.Second, probeID: "a", err: errDown},
			{at: 7001 * time.Millisecond, probeID: "a", err: errDown, owes: b(true)},
			{at: 8 * time.Second, probeID: "a", stats: later, owes: b(true)},
		}},
		{"an unreachability that ends between two passes still owes its flush", trackerConfig{Hold: cfg.Hold}, true, []step{
			{at: 0, answer: &both},
			{at: time.Second, probeID: "a", stats: st, reachable: b(true)},
			{at: 2 * time.Second, probeID: "a", err: errDown, reachable: b(false), noPass: true},
			{at: 2100 * time.Millisecond, probeID: "a", stats: later, reachable: b(true), owes: b(true)},
			{at: 3 * time.Second, probeID: "a", stats: cachenodes.Stats{PID: 100, Uptime: time.Hour + time.Minute + time.Second, CmdFlush: 1}, owes: b(false)},
		}},
		{"an episode the last pass saw end is not decided again by the next", trackerConfig{Hold: cfg.Hold, FlushAfter: 5 * time.Second}, true, []step{
			{at: 0, answer: &both},
			{at: time.Second, probeID: "a", stats: st},
			{at: 2 * time.Second, probeID: "a", err: errDown},
			{at: 3 * time.Second, probeID: "a", stats: later, owes: b(false)},
			{at: time.Minute, probeID: "a", stats: later, owes: b(false)},
		}},
		{"a long unreachability that ends between two passes owes its flush", trackerConfig{Hold: cfg.Hold, FlushAfter: 5 * time.Second}, true, []step{
			{at: 0, answer: &both},
			{at: time.Second, probeID: "a", stats: st},
			{at: 2 * time.Second, probeID: "a", err: errDown, owes: b(false)},
			{at: 7100 * time.Millisecond, probeID: "a", err: errDown, noPass: true},
			{at: 7500 * time.Millisecond, probeID: "a", stats: later, owes: b(true)},
		}},
		{"an empty answer is a fault and changes nothing", cfg, true, []step{
			{at: 0, answer: &both, present: b(true)},
			{at: time.Second, answer: &cachenodes.Membership{}, present: b(true)},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runTracker(t, tc.cfg, tc.holds, tc.steps) })
	}
}

func TestTrackerShrunkenAnswerIsAFault(t *testing.T) {
	tr := newTracker(trackerConfig{})
	all := members(inst("a", true), inst("b", true), inst("c", true), inst("d", true), inst("e", true), inst("f", true))
	if !tr.observeMembership(all, t0) {
		t.Fatal("the first answer was refused")
	}
	if tr.observeMembership(members(inst("a", true), inst("b", true)), t0.Add(time.Second)) {
		t.Fatal("an answer with 2 of 6 instances was taken")
	}
	if tr.fault == "" || !tr.nodes["c"].present {
		t.Fatalf("fault %q, c present %v: the shrunken answer changed the view", tr.fault, tr.nodes["c"].present)
	}
	if !tr.observeMembership(members(inst("a", true), inst("b", true), inst("c", true)), t0.Add(2*time.Second)) {
		t.Fatal("an answer with 3 of 6 instances was refused")
	}
	if tr.fault != "" || tr.nodes["d"].present {
		t.Fatalf("fault %q, d present %v after an accepted answer", tr.fault, tr.nodes["d"].present)
	}
}

func TestTrackerMaintenanceIsNotAbsentForTheGuard(t *testing.T) {
	tr := newTracker(trackerConfig{})
	m := members(inst("a", true), inst("b", false), inst("c", true), inst("d", true))
	m.Instances[2].Maintenance = true
	m.Instances[2].Present = false
	tr.observeMembership(m, t0)
	sm, err := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{Slots: []cachenodes.Node{
		m.Instances[0].Node, m.Instances[1].Node, m.Instances[2].Node, m.Instances[3].Node,
	}})
	if err != nil {
		t.Fatal(err)
	}
	serving, absent := tr.absentHolders(sm)
	if serving != 4 || absent != 1 {
		t.Fatalf("absentHolders = %d, %d; want 4 serving, 1 absent (maintenance does not count)", serving, absent)
	}
}

func TestTrackerFlapsCollapseBursts(t *testing.T) {
	tr := newTracker(trackerConfig{Damping: flapdamp.DampingConfig{BurstWindow: time.Second}.WithDefaults()})
	tr.observeMembership(members(inst("a", true), inst("b", true)), t0)
	tr.observeProbe("a", cachenodes.Stats{PID: 1}, nil, true, t0)
	// One failure: unreachable, then absent, within one probe interval.
	tr.observeProbe("a", cachenodes.Stats{}, errDown, true, t0.Add(100*time.Millisecond))
	tr.observeMembership(members(inst("a", false), inst("b", true)), t0.Add(300*time.Millisecond))
	if got := tr.nodes["a"].penalty.Flaps(); got != 1 {
		t.Fatalf("one failure counted as %d flaps, want 1", got)
	}
	tr.observeMembership(members(inst("a", true), inst("b", true)), t0.Add(5*time.Second))
	tr.observeProbe("a", cachenodes.Stats{PID: 1}, nil, true, t0.Add(5*time.Second))
	tr.observeMembership(members(inst("a", false), inst("b", true)), t0.Add(10*time.Second))
	if got := tr.nodes["a"].penalty.Flaps(); got != 2 {
		t.Fatalf("two failures counted as %d flaps, want 2", got)
	}
}

func TestTrackerMaintenanceIsNoFlap(t *testing.T) {
	tr := newTracker(trackerConfig{Damping: flapdamp.DampingConfig{BurstWindow: time.Second}.WithDefaults()})
	for i := range 5 {
		at := t0.Add(time.Duration(i) * 10 * time.Second)
		in := members(inst("a", true), inst("b", true))
		tr.observeMembership(in, at)
		in.Instances[0].Maintenance, in.Instances[0].Present = true, false
		tr.observeMembership(in, at.Add(5*time.Second))
	}
	if got := tr.nodes["a"].penalty.Flaps(); got != 0 {
		t.Fatalf("maintenance counted %d flaps, want 0", got)
	}
	if !tr.nodes["a"].maintenance || tr.nodes["a"].present {
		t.Fatalf("node a: maintenance %v present %v", tr.nodes["a"].maintenance, tr.nodes["a"].present)
	}
}

// TestTrackerSeesAnotherProcessFlush: a flush owed by a returning slot
// holder ends when cmd_flush shows it was flushed (by the leader, when
// this process follows), so a later takeover does not flush a warm node
// again.
func TestTrackerSeesAnotherProcessFlush(t *testing.T) {
	tr := newTracker(trackerConfig{Hold: flapdamp.Hold{Duration: time.Minute}})
	tr.observeMembership(members(inst("a", true), inst("b", true)), t0)
	up := cachenodes.Stats{PID: 7, Uptime: time.Hour, CmdFlush: 2}
	tr.observeProbe("a", up, nil, true, t0)
	tr.observeProbe("a", cachenodes.Stats{}, errDown, true, t0.Add(time.Second))
	entry := trackerOwes(tr, "a", nil, t0.Add(time.Second))
	if entry == nil || entry.CmdFlush != 2 || entry.PID != 7 || !entry.StartedAt.Equal(t0.Add(-time.Hour)) || !entry.Since.Equal(t0.Add(time.Second)) {
		t.Fatalf("an unreachable slot holder owes %+v, want a flush from cmd_flush 2, pid 7, started an hour before t0", entry)
	}
	up.Uptime += 2 * time.Second
	tr.observeProbe("a", up, nil, true, t0.Add(2*time.Second))
	if entry = trackerOwes(tr, "a", entry, t0.Add(2*time.Second)); entry == nil {
		t.Fatal("the owed flush went without a flush")
	}
	up.CmdFlush++
	tr.observeProbe("a", up, nil, true, t0.Add(4*time.Second))
	if entry = trackerOwes(tr, "a", entry, t0.Add(4*time.Second)); entry != nil {
		t.Fatal("cmd_flush rose but the node still owes a flush")
	}
}

// TestTrackerEventsTellWhy: the transitions an operator reads in the log.
func TestTrackerEventsTellWhy(t *testing.T) {
	tr := newTracker(trackerConfig{Hold: flapdamp.Hold{Duration: time.Minute}})
	tr.observeMembership(members(inst("a", true), inst("b", true)), t0)
	st := cachenodes.Stats{PID: 7, Uptime: time.Hour}
	tr.observeProbe("a", st, nil, true, t0)
	tr.drain()
	tr.observeMembership(members(inst("b", true), inst("a", false)), t0.Add(time.Second))
	tr.observeProbe("a", cachenodes.Stats{}, errDown, true, t0.Add(2*time.Second))
	st.Uptime += 3 * time.Second
	tr.observeProbe("a", st, nil, true, t0.Add(3*time.Second))
	tr.observeMembership(members(inst("b", true), inst("a", true)), t0.Add(4*time.Second))
	var got []string
	for _, e := range tr.drain() {
		got = append(got, e.Node+" "+string(e.Kind)+": "+e.Detail)
	}
	want := []string{
		"a node absent: a Consul check is not passing",
		"a node unreachable: connection refused",
		"a node reachable: answers probes again after 1s",
		"a node present: Consul lists it with every check passing again after 3s",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(tr.drain()) != 0 {
		t.Fatal("drain did not forget the events")
	}
}
