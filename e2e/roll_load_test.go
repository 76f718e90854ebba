package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcclient"
	"github.com/mcrib/mcrib/mcribapi"
)

// rollExit is how a `mcrib roll` run in the background ended.
type rollExit struct {
	code int
	out  string
	err  error
}

// goRollCLI runs `mcrib roll` with args against addr in the background, as
// rollCLI does, and sends how it ended.
func goRollCLI(t *testing.T, addr string, limit time.Duration, args ...string) <-chan rollExit {
	t.Helper()
	bin := mcribBinary(t)
	done := make(chan rollExit, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		code, out, err := runRollCLI(ctx, bin, addr, args...)
		done <- rollExit{code: code, out: out, err: err}
	}()
	return done
}

// rollWatcher polls GET /v1/roll on whichever live replica answers, every
// 200 ms, and keeps each node's states in the order first seen and the last
// entry read.
type rollWatcher struct {
	apis func() []*apiClient

	mu     sync.Mutex
	states map[string][]mcribapi.RollNodeState
	roll   []mcribapi.RollState // the roll's states, each change
	last   *mcribapi.RollEntry
	stop   chan struct{}
	done   chan struct{}
}

func watchRoll(t *testing.T, apis func() []*apiClient) *rollWatcher {
	w := &rollWatcher{apis: apis, states: map[string][]mcribapi.RollNodeState{}, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	t.Cleanup(w.close)
	return w
}

func (w *rollWatcher) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

func (w *rollWatcher) run() {
	defer close(w.done)
	which := 0
	for {
		select {
		case <-w.stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
		apis := w.apis()
		if len(apis) == 0 {
			continue
		}
		code, body := apis[which%len(apis)].get("/v1/roll")
		doc, err := decodeAs[mcribapi.RollDoc](body, "GET /v1/roll")
		if code != 200 || err != nil {
			which++
			continue
		}
		w.observe(doc.Roll)
	}
}

// observe notes the entry e.
func (w *rollWatcher) observe(e *mcribapi.RollEntry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e == nil {
		return
	}
	w.last = e
	if n := len(w.roll); n == 0 || w.roll[n-1] != e.State {
		w.roll = append(w.roll, e.State)
	}
	for _, n := range e.Nodes {
		s := w.states[n.NodeID]
		if len(s) == 0 || s[len(s)-1] != n.State {
			w.states[n.NodeID] = append(s, n.State)
		}
	}
}

// entry returns the last entry seen (nil: none yet).
func (w *rollWatcher) entry() *mcribapi.RollEntry {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last.Clone()
}

// wentBack returns, for each node whose state went back (a node that left
// moving, released or restarted and showed an earlier state after it),
// the states seen; nil when no node did.
func (w *rollWatcher) wentBack() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	rank := map[mcribapi.RollNodeState]int{mcribapi.RollWaiting: 0, mcribapi.RollMoving: 1, mcribapi.RollReleased: 2,
		mcribapi.RollRestarted: 3, mcribapi.RollSkipped: 3}
	var out []string
	for id, s := range w.states {
		for i := 1; i < len(s); i++ {
			if rank[s[i]] <= rank[s[i-1]] {
				out = append(out, fmt.Sprintf("%s went %v", id, s))
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// rollStates returns the roll's states as seen, each change.
func (w *rollWatcher) rollStates() []mcribapi.RollState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.roll)
}

// eventLog collects the roll's events of every replica, polling each
// live replica's GET /v1/events?since=N every 300 ms (events are each
// replica's own, in memory).
type eventLog struct {
	ms []*mcrib

	mu     sync.Mutex
	events map[string][]mcribapi.Event // by replica address
	stop   chan struct{}
	done   chan struct{}
}

func collectEvents(t *testing.T, ms ...*mcrib) *eventLog {
	l := &eventLog{ms: ms, events: map[string][]mcribapi.Event{}, stop: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	t.Cleanup(l.close)
	return l
}

func (l *eventLog) close() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
}

func (l *eventLog) run() {
	defer close(l.done)
	since := map[string]uint64{}
	for {
		for _, m := range l.ms {
			if m.Exited() {
				continue
			}
			a := newAPIClient(m.Addr, 2*time.Second)
			an, err := a.typed.Events(context.Background(), since[m.Addr])
			if err != nil {
				continue
			}
			l.mu.Lock()
			for _, e := range an.Doc {
				if e.Seq > since[m.Addr] {
					since[m.Addr] = e.Seq
					l.events[m.Addr] = append(l.events[m.Addr], e)
				}
			}
			l.mu.Unlock()
		}
		select {
		case <-l.stop:
			return
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// count returns, for each node, how many events of kind the replicas
// told about it, all replicas together.
func (l *eventLog) count(kind mcribapi.EventKind) map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, es := range l.events {
		for _, e := range es {
			if e.Kind == kind {
				out[e.Node]++
			}
		}
	}
	return out
}

// slotHolders returns, for each slot of the first map of samples, the
// holders it had, in order, each change once.
func slotHolders(samples []mapSample) map[int][]string {
	out := map[int][]string{}
	for _, s := range samples {
		for i := range s.m.NumSlots() {
			h := out[i]
			if id := s.m.Slot(i).ID; len(h) == 0 || h[len(h)-1] != id {
				out[i] = append(h, id)
			}
		}
	}
	return out
}

// TestRollEveryNodeAcrossALeaderKill rolls every node of a pool of three
// zones (six memcached, four slots) under two replicas with `mcrib roll
// --all --exec` against the follower, the command killing and starting
// each real memcached again, while a cache-aside load reads through an
// mcclient following both replicas and four clients (one following Consul
// KV, three the HTTP API over both replicas) set, delete and get a shared
// key space, judged by the stale-read check across generations. Once the
// first holder's slot has moved (it warms on its spare, the holder not
// yet released), the leader is killed with kill -9. The survivor carries
// the roll on from the stored document: every node is restarted exactly
// once (the command ran once for it, one restart told, its pid new), no
// node's state goes back, each slot moves once (from its holder to the
// roll's `to`, nowhere else), the load's hit rate holds (each holder's
// keys warm on its spare before it restarts) and no read is stale.
func TestRollEveryNodeAcrossALeaderKill(t *testing.T) {
	const slots = 4
	p := newZonedPool(t, []string{"a", "b", "c"}, 2)
	fl := flags(append(withToken(t), "--slots", fmt.Sprint(slots), "--hold", "60s",
		"--warm-for", "30s", "--warm-min", "2s", "--flush-after-unreachable", "30s")...)
	r1 := startMcrib(t, p.consul.HTTPAddr, fl...)
	before := filled(t, p, r1, slots)
	r2 := startMcrib(t, p.consul.HTTPAddr, fl...)
	lead := zLeader(t, 15*time.Second, r1, r2)
	survivor := r1
	if lead == r1 {
		survivor = r2
	}
	testenv.Eventually(t, 15*time.Second, "the follower serving the map", func() bool {
		sm := survivor.slotMap()
		return sm != nil && sm.Generation() == before.Generation()
	})
	pids := map[string]int64{}
	for id, n := range p.nodes {
		pids[id] = mustStats(t, n.Addr).PID
	}
	apis := liveAPIs(r1, r2)
	w := watchMap(t, apis)
	rw := watchRoll(t, apis)
	ev := collectEvents(t, r1, r2)

	// The cache-aside load, through a client following both replicas.
	f, err := mcclient.NewHTTPFollower(mcclient.HTTPFollowerOptions{URLs: []string{"http://" + lead.Addr, "http://" + survivor.Addr}, WaitTime: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := followingClient(t, f, growClientTimeout)
	testenv.Eventually(t, 10*time.Second, "the load's client has the map", func() bool { return c.SlotMap() != nil })
	load := startMeasuredLoad(t, "roll", c, 6000, 400, 3*time.Second, 6*time.Second)
	defer load.stop()
	clients, stopClients := startSoakClients(t, soakClientsOptions{replicas: []*replica{{mcrib: lead, name: "leader"}, {mcrib: survivor, name: "follower"}},
		consul: p.consul.Client, http: soakHTTPClients, seed: 30})
	defer stopClients()

	r := newRestarter(t, p)
	rollAt := time.Since(load.started)
	start := time.Now()
	cli := goRollCLI(t, survivor.Addr, 6*time.Minute, "--all", "--reason", "memcached 1.6.38", "--restart-timeout", "1m", "--exec", r.command())

	// The first holder's slot moved to its spare: the leader dies while it
	// warms there, before the holder is released.
	var first mcribapi.RollNode
	if !within(2*time.Minute, func() bool {
		e := rw.entry()
		if e == nil {
			return false
		}
		for _, n := range e.Nodes {
			if n.State == mcribapi.RollMoving && n.To != "" {
				if sm := w.latest(); sm != nil && n.Slot != nil && sm.Slot(*n.Slot).ID == n.To {
					first = n
					return true
				}
			}
		}
		return false
	}) {
		t.Fatalf("no holder's slot moved within 2 minutes: roll %+v, map %s", rw.entry(), describeMap(w.latest()))
	}
	t.Logf("%s's slot %d moved to %s %v into the roll; kill -9 of the leader %s", first.NodeID, *first.Slot, first.To, time.Since(start).Round(time.Millisecond), lead.Addr)
	lead.Kill(t)
	if zLeader(t, 30*time.Second, survivor) != survivor {
		t.Fatal("the survivor does not lead")
	}

	var out rollExit
	select {
	case out = <-cli:
	case <-time.After(6 * time.Minute):
		t.Fatalf("mcrib roll --all --exec did not end within 6 minutes: roll %+v", rw.entry())
	}
	took := time.Since(start)
	if out.err != nil || out.code != 0 {
		t.Fatalf("mcrib roll --all --exec: exit %d (%v)\n%s", out.code, out.err, out.out)
	}
	t.Logf("the roll done in %v", took.Round(time.Second))
	// The load and the clients run on a moment on the final map.
	final := w.waitMap(t, 20*time.Second, "the final map without warmings", func(m *cachenodes.SlotMap) bool { return !m.WarmsAt(time.Now()) && !m.AnyIncoming() })
	time.Sleep(3 * time.Second)
	for _, v := range stopClients() {
		t.Error(v)
	}
	for _, line := range clients.summary() {
		t.Log(line)
	}
	load.stop()

	// Every node restarted exactly once.
	order := r.restarted()
	for _, id := range p.ids {
		if n := strings.Count(out.out, "running for "+id+" "); n != 1 {
			t.Errorf("the command ran %d times for %s", n, id)
		}
		if n := slices.Index(order, id); n < 0 || slices.Index(order[n+1:], id) >= 0 {
			t.Errorf("%s restarted other than once: %v", id, order)
		}
		if st := mustStats(t, p.nodes[id].Addr); st.PID == pids[id] {
			t.Errorf("node %s still runs pid %d", id, st.PID)
		}
	}
	for id, n := range ev.count(mcribapi.EventRollRestarted) {
		if n != 1 {
			t.Errorf("%d roll restarted events told of %s (the replicas' events together)", n, id)
		}
	}
	for id, n := range ev.count(mcribapi.EventRollRelease) {
		if n != 1 {
			t.Errorf("%d roll release events told of %s (the replicas' events together)", n, id)
		}
	}
	if back := rw.wentBack(); len(back) > 0 {
		t.Errorf("node states went back across the takeover: %s", strings.Join(back, "; "))
	}
	e := rw.entry()
	if e == nil || e.State != mcribapi.RollDone || e.Count(mcribapi.RollRestarted) != len(p.nodes) {
		t.Fatalf("the roll as last seen: %+v", e)
	}

	// Each slot moved once: from its holder to the roll's to.
	holders := slotHolders(w.since(start.Add(-time.Second)))
	for _, n := range e.Nodes {
		s := before.SlotOf(n.NodeID)
		if s < 0 {
			if n.Slot != nil {
				t.Errorf("spare %s shows slot %d in the roll", n.NodeID, *n.Slot)
			}
			continue
		}
		if want := []string{n.NodeID, n.To}; fmt.Sprint(holders[s]) != fmt.Sprint(want) {
			t.Errorf("slot %d had the holders %v during the roll, want %v (one move, to the roll's to)", s, holders[s], want)
		}
	}
	if final.Generation() != before.Generation()+slots {
		t.Errorf("generation %d after the roll, was %d: each of the %d slots moves once", final.Generation(), before.Generation(), slots)
	}
	if bad := w.invalid(); len(bad) > 0 {
		t.Errorf("%d invalid slot maps seen, first: %s", len(bad), bad[0])
	}

	// The load: the holders' keys warmed on their spares before each
	// restart, so that the hit rate holds (a cold move would lose a quarter
	// of the keys at once).
	win := load.window(rollAt, rollAt+took)
	reads, misses, extra, lowest, _ := windowFigures(win, load.steady)
	low5 := lowestOver(win, 5)
	t.Logf("the load during the roll: steady %s, lowest %s (5 s) and %s (1 s), %d misses of %d reads (%.0f above the steady rate)",
		pct(load.steady), pct(low5), pct(lowest), misses, reads, extra)
	if low5 < load.steady-0.05 {
		t.Errorf("the load's lowest hit rate over 5 s %s is more than 5 points below the steady %s", pct(low5), pct(load.steady))
	}
}

// TestRollPausedByAMassUnreachability rolls every node of a pool of three
// zones (six memcached, four slots) with `mcrib roll --all --exec`, and
// stops (SIGSTOP) the memcached of the two holders not yet rolled once
// the first holder's turn has come: three of four slot holders unreachable
// at once is the observer's fault, an automatic freeze. The roll goes to
// paused, naming the freeze, and nothing moves or is released while it
// holds; once the three answer again the freeze lifts and the roll goes on
// to done, every node restarted once and each slot moved once. Four
// clients (one following Consul KV, three the HTTP API) judged by the
// stale-read check across generations run throughout.
func TestRollPausedByAMassUnreachability(t *testing.T) {
	const slots = 4
	p := newZonedPool(t, []string{"a", "b", "c"}, 2)
	m := startMcrib(t, p.consul.HTTPAddr, flags(append(withToken(t), "--slots", fmt.Sprint(slots), "--hold", "60s",
		"--warm-for", "30s", "--warm-min", "2s", "--flush-after-unreachable", "30s")...)...)
	before := filled(t, p, m, slots)
	apis := liveAPIs(m)
	w := watchMap(t, apis)
	rw := watchRoll(t, apis)
	clients, stopClients := startSoakClients(t, soakClientsOptions{replicas: []*replica{{mcrib: m, name: "mcrib"}},
		consul: p.consul.Client, http: soakHTTPClients, seed: 31})
	defer stopClients()

	r := newRestarter(t, p)
	start := time.Now()
	cli := goRollCLI(t, m.Addr, 6*time.Minute, "--all", "--reason", "kernel patch", "--restart-timeout", "1m", "--exec", r.command())

	// The first holder's turn: the two other holders stop answering.
	var first string
	if !within(2*time.Minute, func() bool {
		e := rw.entry()
		if e == nil {
			return false
		}
		for _, n := range e.Nodes {
			if n.State == mcribapi.RollMoving {
				first = n.NodeID
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no holder's turn within 2 minutes: roll %+v", rw.entry())
	}
	var stopped []string
	for s := range slots {
		if id := before.Slot(s).ID; id != first {
			stopped = append(stopped, id)
			p.nodes[id].Pause(t)
		}
	}
	t.Logf("%s moving %v into the roll: SIGSTOP of %v", first, time.Since(start).Round(time.Millisecond), stopped)
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			for _, id := range stopped {
				p.nodes[id].Resume(t)
			}
		}
	}
	defer resume()
	var paused *mcribapi.RollEntry
	if !within(20*time.Second, func() bool {
		st, err := m.api.status()
		e := rw.entry()
		if err == nil && st.AutoFrozen && e != nil && e.State == mcribapi.RollPaused {
			paused = e
			return true
		}
		return false
	}) {
		st, _ := m.api.status()
		t.Fatalf("the roll not paused by an automatic freeze within 20 s: auto_frozen %v (%q), roll %+v", st.AutoFrozen, st.AutoFreezeReason, rw.entry())
	}
	if !strings.Contains(paused.Blocked, "automatic freeze") || !strings.Contains(paused.Blocked, "unreachable") {
		t.Errorf("the paused roll's blocked: %q; want the automatic freeze named, with the unreachable holders", paused.Blocked)
	}
	// While the freeze holds, the roll stays paused: no slot changes hands
	// and no node is released.
	held := w.latest()
	steady(t, 4*time.Second, "while the automatic freeze holds the roll", func() string {
		e := rw.entry()
		if e == nil || e.State != mcribapi.RollPaused {
			return fmt.Sprintf("the roll %+v, want paused", e)
		}
		for i, n := range e.Nodes {
			if n.State != paused.Nodes[i].State {
				return fmt.Sprintf("%s went from %s to %s", n.NodeID, paused.Nodes[i].State, n.State)
			}
		}
		if sm := w.latest(); !sm.SameSlots(held) {
			return "slots changed hands: " + describeMap(sm)
		}
		return ""
	})
	resume()
	lifted := time.Now()
	var out rollExit
	select {
	case out = <-cli:
	case <-time.After(5 * time.Minute):
		t.Fatalf("mcrib roll --all --exec did not end within 5 minutes of the freeze lifting: roll %+v", rw.entry())
	}
	if out.err != nil || out.code != 0 {
		t.Fatalf("mcrib roll --all --exec: exit %d (%v)\n%s", out.code, out.err, out.out)
	}
	t.Logf("the roll done %v after the holders answered again (%v in all); roll states %v", time.Since(lifted).Round(time.Second),
		time.Since(start).Round(time.Second), rw.rollStates())
	if !strings.Contains(out.out, "roll paused: an automatic freeze pauses it") {
		t.Errorf("mcrib roll --exec did not show the pause:\n%s", out.out)
	}
	for _, v := range stopClients() {
		t.Error(v)
	}
	for _, line := range clients.summary() {
		t.Log(line)
	}
	states := rw.rollStates()
	if i := slices.Index(states, mcribapi.RollPaused); i < 0 || !slices.Contains(states[i:], mcribapi.RollRolling) || states[len(states)-1] != mcribapi.RollDone {
		t.Errorf("the roll's states %v; want paused, then rolling again, then done", states)
	}
	order := r.restarted()
	for _, id := range p.ids {
		if n := slices.Index(order, id); n < 0 || slices.Index(order[n+1:], id) >= 0 {
			t.Errorf("%s restarted other than once: %v", id, order)
		}
	}
	if back := rw.wentBack(); len(back) > 0 {
		t.Errorf("node states went back: %s", strings.Join(back, "; "))
	}
	e := rw.entry()
	holders := slotHolders(w.since(start.Add(-time.Second)))
	for _, n := range e.Nodes {
		if s := before.SlotOf(n.NodeID); s >= 0 {
			if want := []string{n.NodeID, n.To}; fmt.Sprint(holders[s]) != fmt.Sprint(want) {
				t.Errorf("slot %d had the holders %v during the roll, want %v (one move, to the roll's to)", s, holders[s], want)
			}
		}
	}
}
