package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/cachenodes"
)

// The soak's invariant checks (docs/invariants.md), made
// after every fault once the pool has settled, and a monitor that watches
// the stored map's generation between checks.

// placementLine, moveLine, announceLine and returnLine are mcrib's log
// lines of a flush: a spare flushed as part of its placement, or of a
// move (a warm or cold move: a drain or return step, a replace, a
// maintenance move, a split), or of the announce of a move (which flushes
// the incoming node, docs/api.md "Announce, then serve"), and a slot
// holder flushed on its return (a flush owed by the pool, or one a
// replica decided alone).
var (
	placementLine = regexp.MustCompile(`msg="slot placement" .*node=(\S+) .*flushed=(true|false)`)
	moveLine      = regexp.MustCompile(`msg="slot move" .*? to=(\S+)`)
	announceLine  = regexp.MustCompile(`msg="slot move announced" .*? to=(\S+)`)
	returnLine    = regexp.MustCompile(`msg="flushed a node that (?:owed a flush|was unreachable), before it serves again" node=(\S+)`)
)

// soakTouch is what the faults of one step did to a node's memcached.
type soakTouch struct {
	stopped   bool          // paused, killed or cut off: clients lost it too
	restarted bool          // killed and started again: empty, counters reset
	absent    bool          // its Consul check failed too (killed or cut off; a paused memcached still accepts connections)
	down      time.Duration // for how long
}

// soakSureUnreachable is how long a node must have been stopped for every
// replica to have counted it unreachable (a whole probe interval of failed
// probes, and the probes' timeouts): it is then flushed on its return.
const soakSureUnreachable = 3 * time.Second

// soakSurelyKept is how long a node may be absent and unreachable and still
// be sure to keep its slot: --hold less a probe interval and a margin.
const soakSurelyKept = soakHold - 2*time.Second

// soakChecker holds what the previous check saw.
type soakChecker struct {
	p        *hostsPool
	prev     *cachenodes.SlotMap
	flush    map[string]uint64 // cmd_flush at the previous check
	pid      map[string]int64
	logAt    map[*replica]int // how much of each replica's output was read
	checks   int
	causes   map[string]int // flushes by cause
	vacant   int            // checks that found a vacant slot
	problems []string
}

func newSoakChecker(p *hostsPool) *soakChecker {
	c := &soakChecker{p: p, flush: map[string]uint64{}, pid: map[string]int64{},
		logAt: map[*replica]int{}, causes: map[string]int{}}
	c.prev = p.slotMap()
	c.baseline()
	for _, r := range p.replicas {
		c.logAt[r] = len(r.Output())
	}
	return c
}

// baseline reads every node's cmd_flush and pid.
func (c *soakChecker) baseline() {
	for _, n := range c.p.nodes {
		st := mustStats(c.p.t, n.mc.Addr)
		c.flush[n.id], c.pid[n.id] = st.CmdFlush, st.PID
	}
}

func (c *soakChecker) violate(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.problems = append(c.problems, msg)
	c.p.t.Errorf("VIOLATION: %s", msg)
}

// newLogs returns, per node, the placement flushes and the return flushes
// logged by any replica since the previous check; a placement logged
// without a flush is a violation.
func (c *soakChecker) newLogs() (placed, returned map[string]int) {
	placed, returned = map[string]int{}, map[string]int{}
	for _, r := range c.p.replicas {
		out := r.Output()
		from := c.logAt[r]
		if from > len(out) {
			from = 0
		}
		c.logAt[r] = len(out)
		for _, line := range strings.Split(out[from:], "\n") {
			if m := placementLine.FindStringSubmatch(line); m != nil {
				if m[2] != "true" {
					c.violate("%s placed %s without a flush: %s", r.name, m[1], line)
				}
				placed[m[1]]++
			} else if m := moveLine.FindStringSubmatch(line); m != nil {
				placed[m[1]]++
			} else if m := announceLine.FindStringSubmatch(line); m != nil {
				placed[m[1]]++
			} else if m := returnLine.FindStringSubmatch(line); m != nil {
				returned[m[1]]++
			}
		}
	}
	return placed, returned
}

// check runs every invariant check against the settled pool, after the
// step e.
func (c *soakChecker) check(e soakEffect) {
	p, step, touched := c.p, e.what, e.touched
	c.checks++
	// mcrib never exits on its own.
	for _, r := range p.replicas {
		if r.Exited() {
			c.violate("after %s: %s exited on its own (exit %d)", step, r.name, r.ExitCode())
		}
	}
	sm := p.slotMap()
	// No node and no address in two places (a twin names slot s's node);
	// generation never goes back.
	seenID, seenAddr := map[string]string{}, map[string]string{}
	place := func(where string, n cachenodes.Node) {
		if n.IsZero() {
			return
		}
		if w, ok := seenID[n.ID]; ok {
			c.violate("after %s: node %s both in %s and in %s (generation %d)", step, n.ID, w, where, sm.Generation())
		}
		if w, ok := seenAddr[n.Addr]; ok {
			c.violate("after %s: address %s both in %s and in %s (generation %d)", step, n.Addr, w, where, sm.Generation())
		}
		seenID[n.ID], seenAddr[n.Addr] = where, where
	}
	for i, n := range sm.Slots() {
		if !sm.IsTwin(i) {
			place(fmt.Sprintf("slot %d", i), n)
		}
	}
	for _, n := range sm.Spares() {
		place("the spares", n)
	}
	if sm.Generation() < c.prev.Generation() {
		c.violate("after %s: generation went back from %d to %d", step, c.prev.Generation(), sm.Generation())
	}
	was := func(i int) cachenodes.Node { return c.prev.Slot(i) }
	switch n, prevN := sm.NumSlots(), c.prev.NumSlots(); {
	case n == 2*prevN:
		// A resize's first write: slot s + N was a twin of slot s.
		was = func(i int) cachenodes.Node { return c.prev.Slot(i % prevN) }
	case n != prevN:
		c.violate("after %s: the slot count went from %d to %d", step, prevN, n)
		c.prev = sm
		return
	}
	placed, returned := c.newLogs()
	for _, n := range placed {
		c.causes["placement"] += n
	}
	for _, n := range returned {
		c.causes["return"] += n
	}
	// Every placement preceded by a flush; a slot leaves a node only when
	// the step stopped its memcached, or a planned move took it (a split
	// takes a twin from slot s's holder).
	newly := map[string]bool{}
	for i := range sm.NumSlots() {
		was, now := was(i), sm.Slot(i)
		if was.ID == now.ID {
			continue
		}
		split := i >= c.prev.NumSlots() || c.prev.IsTwin(i)
		switch tw := touched[was.ID]; {
		case was.IsZero(), split, e.anyMove, e.moves[was.ID]:
		case !tw.stopped:
			c.violate("after %s: slot %d moved from %s to %q although %s's memcached never stopped answering", step, i, was.ID, now.ID, was.ID)
		case !tw.absent:
			c.violate("after %s: slot %d moved from %s to %q although %s never failed its Consul check (only paused)", step, i, was.ID, now.ID, was.ID)
		case tw.down < soakSurelyKept:
			c.violate("after %s: slot %d moved from %s to %q although %s was down only %v (--hold %v)", step, i, was.ID, now.ID, was.ID, tw.down, soakHold)
		}
		if now.IsZero() {
			continue
		}
		newly[now.ID] = true
		if placed[now.ID] == 0 {
			c.violate("after %s: %s placed into slot %d with no placement flush logged", step, now.ID, i)
		}
	}
	// cmd_flush: every flush explained by a placement or by the node's own
	// fault; the counters of a restarted memcached start again.
	for _, n := range p.nodes {
		st, err := stats(p.t, n.mc.Addr)
		if err != nil {
			c.violate("after %s: %s does not answer stats after the pool settled: %v", step, n.id, err)
			continue
		}
		if st.PID == c.pid[n.id] {
			rose := st.CmdFlush - c.flush[n.id]
			if newly[n.id] && rose == 0 {
				c.violate("after %s: %s placed but its cmd_flush stayed %d", step, n.id, st.CmdFlush)
			}
			tn := touched[n.id]
			held := c.prev.SlotOf(n.id) >= 0 && sm.SlotOf(n.id) >= 0
			if held && tn.stopped && !tn.restarted && tn.down >= soakSureUnreachable && rose == 0 && returned[n.id] == 0 {
				c.violate("after %s: %s held its slot through %v of unreachability and was not flushed on its return (cmd_flush %d)",
					step, n.id, tn.down, st.CmdFlush)
			}
			if rose > uint64(placed[n.id]) && !tn.stopped {
				c.violate("after %s: %s flushed (cmd_flush %d → %d, %d placement(s)) although its memcached never stopped answering",
					step, n.id, c.flush[n.id], st.CmdFlush, placed[n.id])
			}
		} else if !touched[n.id].restarted {
			c.violate("after %s: %s's memcached restarted (pid %d → %d) though no fault restarted it", step, n.id, c.pid[n.id], st.PID)
		}
		c.flush[n.id], c.pid[n.id] = st.CmdFlush, st.PID
	}
	for _, n := range sm.Slots() {
		if n.IsZero() {
			c.vacant++
			break
		}
	}
	c.prev = sm
}

// genMonitor polls the stored slot map every 100ms and records a
// violation when its generation goes back, when a slot changes hands while
// an operator freeze is confirmed in force, or when more slots are taken
// from their holders in a minute than --max-replacements-per-minute allows
// (a twin's split, and the steps of a drain or its return, which keep
// their own pace, are not counted).
type genMonitor struct {
	mu        sync.Mutex
	last      uint64
	prev      *cachenodes.SlotMap
	evictions []soakEviction      // slots seen taken from their holders
	frozen    *cachenodes.SlotMap // the map when an operator freeze was confirmed; nil: none
	draining  bool                // a drain or its return under way: moves not counted
	bad       []string
}

// planned starts (on) or ends the time of a drain and its return, whose
// steps the ceiling does not count.
func (g *genMonitor) planned(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.draining = on
}

func (g *genMonitor) run(ctx context.Context, c *api.Client) {
	kv := c.KV()
	for ctx.Err() == nil {
		pair, _, err := kv.Get("mcrib/default/slotmap", (&api.QueryOptions{}).WithContext(ctx))
		if err == nil && pair != nil {
			if sm, err := cachenodes.ParseSlotMap(pair.Value); err != nil {
				g.record("the stored slot map does not parse: %v", err)
			} else {
				g.observe(sm)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (g *genMonitor) observe(sm *cachenodes.SlotMap) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gen := sm.Generation()
	if gen < g.last {
		g.bad = append(g.bad, fmt.Sprintf("the stored generation went back from %d to %d", g.last, gen))
	}
	if g.frozen != nil && !sm.SameSlots(g.frozen) {
		g.bad = append(g.bad, fmt.Sprintf("a slot changed hands under an operator freeze (generation %d %v → %d %v)",
			g.frozen.Generation(), g.frozen.Slots(), gen, sm.Slots()))
		g.frozen = sm
	}
	g.last = max(g.last, gen)
	if g.prev != nil && sm.NumSlots() == g.prev.NumSlots() && !g.draining {
		now := time.Now()
		for i := range sm.NumSlots() {
			if was := g.prev.Slot(i); !was.IsZero() && was.ID != sm.Slot(i).ID && !g.prev.IsTwin(i) {
				g.evictions = append(g.evictions, soakEviction{at: now,
					what: fmt.Sprintf("slot %d: %s → %q (generation %d)", i, was.ID, sm.Slot(i).ID, gen)})
				g.ceiling(now)
			}
		}
	}
	g.prev = sm
}

// soakEviction is a slot seen taken from its holder.
type soakEviction struct {
	at   time.Time
	what string // "slot 3: mc-04 → mc-06 (generation 7)"
}

// soakCeiling is mcrib's default --max-replacements-per-minute; the
// monitor sees a change up to 100ms late, hence the slack on the window.
const soakCeiling = 2

// ceiling records a violation when the evictions of the last minute (less
// the monitor's polling slack) exceed soakCeiling; g.mu is held.
func (g *genMonitor) ceiling(now time.Time) {
	var recent []string
	for _, e := range g.evictions {
		if now.Sub(e.at) < time.Minute-time.Second {
			recent = append(recent, fmt.Sprintf("%s at %s", e.what, e.at.UTC().Format("15:04:05.0")))
		}
	}
	if len(recent) > soakCeiling {
		g.bad = append(g.bad, fmt.Sprintf("%d slots taken from their holders within a minute (--max-replacements-per-minute %d): %s",
			len(recent), soakCeiling, strings.Join(recent, "; ")))
	}
}

// evicted returns how many slots the monitor saw taken from their holders.
func (g *genMonitor) evicted() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.evictions)
}

func (g *genMonitor) record(format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.bad = append(g.bad, fmt.Sprintf(format, args...))
}

// freeze starts (sm != nil) or ends (sm == nil) the watch of a freeze.
func (g *genMonitor) freeze(sm *cachenodes.SlotMap) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.frozen = sm
}

// take returns the violations seen since the last call.
func (g *genMonitor) take() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.bad
	g.bad = nil
	return out
}
