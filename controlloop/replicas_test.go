package controlloop

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/leader"
	"github.com/mcrib/mcrib/mcribapi"
)

// skewedClock is the shared fake clock read by a host whose clock is off
// by skew; its timers run on the fake's time.
type skewedClock struct {
	*clock.Fake
	skew time.Duration
}

func (c skewedClock) Now() time.Time { return c.Fake.Now().Add(c.skew) }

// replica is one mcrib process of a pool: its own loop, leader handle,
// view of the nodes (prober) and clock, over the pool's shared store.
type replica struct {
	t      *testing.T
	id     string
	loop   *Loop
	lead   *fakeLeader
	prober *fakeProber
	clk    clock.Clock
}

// pool is several replicas of one pool over one fakeStore and one fake
// clock, driven by hand as Run would drive each: answers, probe rounds
// and passes.
type pool struct {
	t      *testing.T
	clk    *clock.Fake
	store  *fakeStore
	listed []string
	opts   func(*Options)
}

// newPool returns a pool whose store holds a map of generation 3 over
// slots, with spares; opts, when set, adjusts every replica's options.
func newPool(t *testing.T, slots, spares []string, opts func(*Options)) *pool {
	t.Helper()
	p := &pool{t: t, clk: clock.NewFake(assignNow), store: &fakeStore{}, opts: opts}
	m := slotMapOf(t, 3, slots, spares)
	p.store.mu.Lock()
	p.store.putLocked(m)
	p.store.mu.Unlock()
	p.listed = append(append([]string{}, slots...), spares...)
	return p
}

// replica starts a replica named id whose clock is off by skew; it has
// taken the pool's answer and probed every node once.
func (p *pool) replica(id string, skew time.Duration) *replica {
	p.t.Helper()
	return p.replicaWith(id, skew, nil)
}

// replicaWith is replica with opts adjusting its options after the pool's.
func (p *pool) replicaWith(id string, skew time.Duration, opts func(*Options)) *replica {
	p.t.Helper()
	r := &replica{t: p.t, id: id, lead: &fakeLeader{store: p.store, member: leader.NewLease("", "s-"+id)}, prober: &fakeProber{}, clk: skewedClock{p.clk, skew}}
	o := Options{
		Pool: assignPool, KVPrefix: "mcrib", NumSlots: p.numSlots(),
		Hold: time.Minute, ProbeInterval: time.Second, FlushAfterUnreachable: 10 * time.Second,
		MaxAbsentFraction: 0.5, MaxReplacementsPerMinute: 10, ReplicaID: id,
		Store: p.store, Discovery: &fakeDiscovery{}, Leadership: r.lead, Prober: r.prober, Clock: r.clk, Metrics: &fakeMetrics{},
	}
	if p.opts != nil {
		p.opts(&o)
	}
	if opts != nil {
		opts(&o)
	}
	loop, err := New(o)
	if err != nil {
		p.t.Fatal(err)
	}
	r.loop = loop
	r.answer(p.listed...)
	r.probe()
	return r
}

func (p *pool) numSlots() int {
	m, _ := p.store.stored()
	return m.NumSlots()
}

// answer hands r's loop a Consul answer listing ids, all present.
func (r *replica) answer(ids ...string) {
	var m cachenodes.Membership
	for _, id := range ids {
		m.Instances = append(m.Instances, cachenodes.Instance{Node: cacheNode(id), Present: true})
	}
	r.loop.onAnswer(m)
}

func (r *replica) probe() { r.loop.probeRound(context.Background()) }

// pass runs one pass of r and fails the test unless its outcome is want.
func (r *replica) pass(want mcribapi.Outcome) {
	r.t.Helper()
	res, err := r.loop.Reconcile(context.Background())
	if res.Outcome != want {
		r.t.Fatalf("replica %s: pass: outcome %q (%v), want %q", r.id, res.Outcome, err, want)
	}
}

// down makes r's view of the nodes ids unreachable (down) or reachable.
func (r *replica) down(on bool, ids ...string) {
	for _, id := range ids {
		r.prober.setDown(cacheNode(id).Addr, on)
	}
}

// lead makes r the leader: it takes the lock; every other replica that
// led steps down (its next pass follows).
func (p *pool) lead(r *replica, others ...*replica) {
	for _, o := range others {
		o.lead.mu.Lock()
		o.lead.lease = leader.Lease{}
		o.lead.mu.Unlock()
	}
	lease := leader.NewLease("mcrib/p/leader", "lead-"+r.id)
	p.store.mu.Lock()
	p.store.holder, p.store.leaderID = lease, r.id
	p.store.mu.Unlock()
	r.lead.mu.Lock()
	r.lead.lease = lease
	r.lead.mu.Unlock()
}

func (r *replica) node(id string) mcribapi.NodeStatus {
	r.t.Helper()
	for _, n := range r.loop.Status().Nodes {
		if n.ID == id {
			return n
		}
	}
	r.t.Fatalf("replica %s: node %s not in the status", r.id, id)
	return mcribapi.NodeStatus{}
}

// flushes returns the flushes r's view of the nodes saw, by node ID.
func (r *replica) flushes() map[string]int {
	got := map[string]int{}
	for addr, n := range r.prober.flushCounts() {
		got[strings.TrimSuffix(addr, ".cache:11211")] = n
	}
	return got
}

// owedIDs returns the node IDs of the stored flushes document.
func (p *pool) owedIDs() []string {
	var out []string
	for _, e := range p.store.storedFlushes(p.t) {
		out = append(out, e.NodeID)
	}
	return out
}

// TestFollowerDecidesNoFlush: a follower never decides a flush. With
// --flush-after-unreachable 10s, slot holder a is unreachable for 9.5s by
// the leader's view, 10.5s by a follower that saw it answer a second later.
// Only the leader decides, while a is unreachable, and it decides nothing:
// no entry, the follower shows no flush_pending, and at the next failover
// nobody flushes a node that served warm. (The follower used to decide from
// its own probe timing, show flush_pending: true forever and flush a at the
// next failover.)
func TestFollowerDecidesNoFlush(t *testing.T) {
	p := newPool(t, []string{"a", "b"}, []string{"c"}, nil)
	l, f := p.replica("l:7070", 0), p.replica("f:7070", 0)
	p.lead(l)
	l.pass(mcribapi.OutcomeOK)
	f.pass(mcribapi.OutcomeFollower)

	l.down(true, "a")
	f.down(true, "a")
	step := func(d time.Duration, passF bool) {
		p.clk.Advance(d)
		l.probe()
		f.probe()
		l.pass(mcribapi.OutcomeOK)
		if passF {
			f.pass(mcribapi.OutcomeFollower)
		}
	}
	step(0, true)
	for range 9 {
		step(time.Second, true) // up to 9s: unreachable for both
	}
	if f.node("a").Reachable || l.node("a").Reachable {
		t.Fatal("a is reachable for the pool at 9s")
	}
	l.down(false, "a")
	step(500*time.Millisecond, false) // 9.5s: a answers the leader
	// The follower sees a answer only at 10.5s and passes then, before it
	// read the leader's new vote.
	p.clk.Advance(time.Second)
	f.down(false, "a")
	f.probe()
	f.pass(mcribapi.OutcomeFollower)
	l.probe()
	l.pass(mcribapi.OutcomeOK)
	f.pass(mcribapi.OutcomeFollower)

	if got := p.owedIDs(); len(got) != 0 {
		t.Fatalf("flushes owed %v after a 9.5s blip: the leader decided while it was within --flush-after-unreachable", got)
	}
	if n := f.node("a"); n.FlushPending || n.State != mcribapi.NodeServing {
		t.Fatalf("the follower shows a with flush_pending %v, state %s; want no pending flush, serving", n.FlushPending, n.State)
	}
	// A routine failover: the follower leads, and flushes nothing.
	p.lead(f, l)
	for range 3 {
		p.clk.Advance(time.Second)
		f.probe()
		l.probe()
		f.pass(mcribapi.OutcomeOK)
		l.pass(mcribapi.OutcomeFollower)
	}
	if got, lf := f.flushes(), l.flushes(); len(got)+len(lf) != 0 {
		t.Fatalf("the new leader flushed %v (old leader's view %v): a node that served warm throughout", got, lf)
	}
}

// TestOwedFlushSurvivesARestartDuringAFreeze: a slot holder unreachable
// for longer than --flush-after-unreachable owes a flush, stored with the
// map; an operator freeze holds the flush back; mcrib restarts meanwhile.
// The restarted process reads the owed flush from the store, shows it,
// and carries it out after the unfreeze (it used to forget it, and the
// node served the values whose deletes it missed).
func TestOwedFlushSurvivesARestartDuringAFreeze(t *testing.T) {
	p := newPool(t, []string{"a", "b"}, []string{"c"}, nil)
	l := p.replica("l:7070", 0)
	p.lead(l)
	l.pass(mcribapi.OutcomeOK)
	l.down(true, "a")
	for range 12 {
		l.probe()
		l.pass(mcribapi.OutcomeOK)
		p.clk.Advance(time.Second)
	}
	if n := l.node("a"); !n.FlushPending {
		t.Fatalf("a owes no flush after 11s of unreachability")
	}
	if _, err := l.loop.Freeze(context.Background(), "incident", "ops"); err != nil {
		t.Fatal(err)
	}
	l.down(false, "a")
	l.probe()
	l.pass(mcribapi.OutcomeOK)
	if got := l.flushes(); len(got) != 0 {
		t.Fatalf("flushed %v under an operator freeze", got)
	}

	// The process restarts, the freeze still on: a new loop, the same node.
	r := p.replica("l:7070", 0)
	r.prober = l.prober
	r.loop.opts.Prober = l.prober
	if err := r.loop.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := r.node("a"); !n.FlushPending {
		t.Fatalf("the restarted process shows a with flush_pending false")
	}
	if owed := p.store.storedFlushes(t); len(owed) != 1 || owed[0].NodeID != "a" || owed[0].PID != 1 || owed[0].Since.IsZero() || owed[0].StartedAt.IsZero() {
		t.Fatalf("stored flushes %+v, want a's entry with its pid, start and episode", owed)
	}
	p.lead(r, l)
	r.probe()
	r.pass(mcribapi.OutcomeOK)
	if n := r.node("a"); !n.FlushPending || n.State != mcribapi.NodeFlushing || len(r.flushes()) != 0 {
		t.Fatalf("frozen, after the restart: a flush_pending %v, state %s, flushes %v; want it pending, not done", n.FlushPending, n.State, r.flushes())
	}
	if err := r.loop.Unfreeze(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.clk.Advance(time.Second)
	r.probe()
	r.pass(mcribapi.OutcomeOK)
	if got := r.flushes(); !maps.Equal(got, map[string]int{"a": 1}) {
		t.Fatalf("after the unfreeze the restarted process flushed %v, want a once", got)
	}
	if got := p.owedIDs(); len(got) != 0 {
		t.Fatalf("flushes still owed after the flush: %v", got)
	}
	if n := r.node("a"); n.FlushPending || n.State != mcribapi.NodeServing {
		t.Fatalf("after the flush: a flush_pending %v, state %s", n.FlushPending, n.State)
	}
	r.pass(mcribapi.OutcomeOK)
	if got := r.flushes(); !maps.Equal(got, map[string]int{"a": 1}) {
		t.Fatalf("the next pass flushed again: %v", got)
	}
}

// TestFailoverKeepsTheFlushCount: a failover in the middle of an episode
// does not restart the count of --flush-after-unreachable: the new leader,
// which followed the episode through the votes, decides 10s after the
// episode began, while the node is still unreachable, not 10s after it
// took over.
func TestFailoverKeepsTheFlushCount(t *testing.T) {
	p := newPool(t, []string{"a", "b"}, []string{"c"}, nil)
	l, f := p.replica("l:7070", 0), p.replica("f:7070", 0)
	p.lead(l)
	l.pass(mcribapi.OutcomeOK)
	f.pass(mcribapi.OutcomeFollower)
	l.down(true, "a")
	f.down(true, "a")
	step := func() {
		l.probe()
		f.probe()
		for _, r := range []*replica{l, f} {
			_, _ = r.loop.Reconcile(context.Background())
		}
		p.clk.Advance(time.Second)
	}
	for range 6 {
		step()
	}
	p.lead(f, l) // at 6s
	for range 7 {
		step()
	}
	owed := p.store.storedFlushes(t)
	if len(owed) != 1 || owed[0].NodeID != "a" {
		t.Fatalf("flushes owed %+v 13s into the episode, 7s after the failover; want a's, decided by the new leader", owed)
	}
	if start := owed[0].Since.Sub(assignNow); start > 3*time.Second {
		t.Fatalf("the episode counts from %s, want its start (the failover was at 6s)", start)
	}
	// It answers: the new leader flushes it, once.
	l.down(false, "a")
	f.down(false, "a")
	step()
	step()
	if got := f.flushes(); !maps.Equal(got, map[string]int{"a": 1}) {
		t.Fatalf("the new leader flushed %v, want a once", got)
	}
}

// TestCeilingCountsTwinReplacementsAfterATakeover: two hold-expired
// holders replaced in one pass are stored as two replacements at one
// instant; a new leader adopts both, so within the minute it replaces
// nothing more under a ceiling of 2 (it used to adopt them as one, and
// replaced a third).
func TestCeilingCountsTwinReplacementsAfterATakeover(t *testing.T) {
	p := newPool(t, []string{"a", "b", "c", "d"}, []string{"e", "f", "g"}, func(o *Options) {
		o.MaxReplacementsPerMinute, o.MaxAbsentFraction = 2, 0.9
	})
	l := p.replica("l:7070", 0)
	p.lead(l)
	l.pass(mcribapi.OutcomeOK)
	p.listed = []string{"d", "e", "f", "g"}
	l.answer(p.listed...)
	l.down(true, "a", "b", "c")
	l.probe()
	p.clk.Advance(61 * time.Second)
	l.probe()
	l.pass(mcribapi.OutcomeOK)
	m, _ := p.store.stored()
	if m.Incoming(0) == nil || m.Incoming(1) == nil || m.Incoming(2) != nil {
		t.Fatalf("slots %v: want a's and b's replacements announced in one pass, c held back by the ceiling of 2", slotIDs(m))
	}
	p.store.mu.Lock()
	stored := slices.Clone(p.store.replacements)
	p.store.mu.Unlock()
	if len(stored) != 2 || !stored[0].Equal(stored[1]) {
		t.Fatalf("replacement times stored %v, want two at one instant", stored)
	}

	// A new leader, whose hold has run out for c too.
	n := p.replicaWith("n:7070", 0, func(o *Options) { o.Hold = 0 })
	n.down(true, "a", "b", "c")
	n.pass(mcribapi.OutcomeFollower)
	p.lead(n, l)
	for range 2 {
		p.clk.Advance(time.Second)
		n.probe()
	}
	n.pass(mcribapi.OutcomeOK)
	p.clk.Advance(30 * time.Second)
	n.probe()
	n.pass(mcribapi.OutcomeOK)
	if m, _ := p.store.stored(); m.Slot(2).ID != "c" || m.Incoming(2) != nil || m.Slot(0).ID == "a" || m.Slot(1).ID == "b" {
		t.Fatalf("slots %v: the new leader replaced c within the minute of two replacements (ceiling 2), or did not serve a's and b's", slotIDs(m))
	}
	if got := n.loop.Status().ReplacementsBlocked; got != 1 {
		t.Fatalf("%d replacements blocked, want c's", got)
	}
	p.clk.Advance(30 * time.Second)
	n.probe()
	n.pass(mcribapi.OutcomeOK)
	if m, _ := p.store.stored(); m.Incoming(2) == nil {
		t.Fatalf("slots %v: c's replacement not announced once the minute passed", slotIDs(m))
	}
	p.clk.Advance(cachenodes.AnnounceLead)
	n.probe()
	n.pass(mcribapi.OutcomeOK)
	if m, _ := p.store.stored(); m.Slot(2).ID == "c" {
		t.Fatalf("slots %v: c not replaced 12s after its announce", slotIDs(m))
	}
}

// TestLeaderDeletesGoneVoteKeys: the vote key of a replica whose session
// is gone is deleted by the leader, with check-and-set on its version, so
// it is no longer read every pass; a replica that took its key again
// between the read and the delete keeps it; followers delete nothing.
func TestLeaderDeletesGoneVoteKeys(t *testing.T) {
	p := newPool(t, []string{"a", "b"}, []string{"c"}, nil)
	l, f := p.replica("l:7070", 0), p.replica("f:7070", 0)
	p.lead(l)
	p.store.mu.Lock()
	p.store.goneVotes = map[string]uint64{"old:7070": 7, "back:7070": 8}
	p.store.mu.Unlock()
	f.pass(mcribapi.OutcomeFollower)
	p.store.mu.Lock()
	deletes := p.store.voteDeletes
	p.store.mu.Unlock()
	if deletes != 0 {
		t.Fatalf("a follower deleted %d vote keys", deletes)
	}
	// back:7070 acquires its key again after the leader's read: its
	// version moves on, and the delete must miss it.
	l.loop.store = racingStore{fakeStore: p.store, afterRead: func(s *fakeStore) { s.goneVotes["back:7070"] = 9 }}
	l.pass(mcribapi.OutcomeOK)
	p.store.mu.Lock()
	left, deletes := maps.Clone(p.store.goneVotes), p.store.voteDeletes
	p.store.mu.Unlock()
	if deletes != 1 || !maps.Equal(left, map[string]uint64{"back:7070": 9}) {
		t.Fatalf("after the leader's pass: %d deletes, keys left %v; want old:7070 deleted and back:7070 kept", deletes, left)
	}
}

// racingStore is a fakeStore whose Read lets afterRead change the store
// (mu held) once the snapshot is taken.
type racingStore struct {
	*fakeStore
	afterRead func(s *fakeStore)
}

func (r racingStore) Read(ctx context.Context) (Snapshot, error) {
	st, err := r.fakeStore.Read(ctx)
	r.fakeStore.mu.Lock()
	r.afterRead(r.fakeStore)
	r.fakeStore.mu.Unlock()
	return st, err
}
