package dst

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/internal/revert"
)

// Violation is a rule the checker found broken.
type Violation struct {
	// Rule names the rule ("inv2-flush-undecided", …; see rules.go).
	Rule string
	// Fix is the fix of issue 18 whose absence explains the violation,
	// when the rule is one only that fix keeps; 0 otherwise.
	Fix revert.Fix
	// Message says what happened, in one sentence.
	Message string
	Seed    uint64
	Step    uint64
	At      time.Duration
	// Tolerate and Reverted are the run's, for the replay.
	Tolerate, Reverted revert.Set
	// Trace is the end of the run's trace.
	Trace []string
}

func (v *Violation) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dst: seed %d, step %d, at %.3fs simulated: rule %s broken: %s\n", v.Seed, v.Step, v.At.Seconds(), v.Rule, v.Message)
	if v.Fix != 0 {
		fmt.Fprintf(&b, "(the fix this rule proves: %s)\n", v.Fix)
	}
	fmt.Fprintf(&b, "replay: go test ./dst -run 'TestDST$' -dst.seed=%d -dst.duration=%v -dst.tolerate=%s -dst.reverted=%s -v\n",
		v.Seed, v.At.Truncate(time.Second)+time.Second, setFlag(v.Tolerate), setFlag(v.Reverted))
	b.WriteString("last events:\n")
	for _, l := range v.Trace {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// interval is a span of simulated time; end 0 while it lasts.
type interval struct{ from, to time.Duration }

// nodeTruth is what the checker knows of one memcached, from the
// simulation's ground truth and the pool's documents.
type nodeTruth struct {
	n *mcNode
	// cleanStep and cleanAt are the step and time of its last flush or
	// restart (it was empty then); cleans are the times of the recent ones.
	cleanStep uint64
	cleanAt   time.Duration
	cleans    []time.Duration
	// oweEnded is when an owed flush last ended by a flush or a restart: a
	// flush right after it is the leader retrying one whose answer it lost.
	oweEnded time.Duration
	// servedStep is the last step at which the stored map had it hold a
	// slot or warm one; served is whether it does now.
	servedStep uint64
	served     bool
	// disturbed lists the spans during which it may have failed to answer
	// some live replica (not running, or a link impaired); absent the
	// spans during which Consul did not list it present.
	disturbed, absent []interval
	// owe: the pool decided that it owes a flush, since oweSince, by
	// oweBy; forgotSince is when the leader last began to show it not
	// pending while it owes.
	owe         bool
	oweSince    time.Duration
	oweBy       string
	oweProc     *replicaProc
	oweFrozen   bool
	forgotSince time.Duration
	// flushFailedStep is the last step in which a flush of it got no
	// answer.
	flushFailedStep uint64
	// replacedAt is when an operator's replace of it was carried out.
	replacedAt time.Duration
	replaced   bool
}

// checker asserts the rules after every step and over the history.
type checker struct {
	w         *world
	violation *Violation
	nodes     map[string]*nodeTruth
	// order holds the nodes in the order they joined (by ID).
	order []*nodeTruth
	// truthSeen is the ground truth's version last recorded.
	truthSeen uint64
	// flushesIndex and flushes cache the stored flushes document.
	flushesIndex uint64
	flushes      map[string]bool
	// kvMap is the stored slot map as last read, kvIndex its ModifyIndex.
	kvMap   *cachenodes.SlotMap
	kvIndex uint64
	kvGen   uint64
	// served is the highest generation each replica served.
	served map[string]uint64
	// pending holds, for each live process, since when it shows each node
	// flush_pending (its status, refreshed after each of its steps).
	pending map[*replicaProc]map[string]time.Duration
	status  map[*replicaProc]controlloop.Status
	dirty   map[*replicaProc]bool
	// replacements are the times of the replacements the stored map shows.
	replacements []time.Duration
	hist         *history
	reads        int
	faults       int
	// lockHolder is the session holding the leader lock at the last step;
	// takeovers are when the lock changed hands.
	lockHolder string
	takeovers  []time.Duration
	// tolerated are the first violation of each tolerated rule.
	tolerated      []*Violation
	toleratedRules map[string]bool
	// lastDrained are the zones the drain document drained at the last
	// version of the stored map.
	lastDrained map[string]bool
}

func newChecker(w *world) *checker {
	return &checker{w: w, nodes: map[string]*nodeTruth{}, served: map[string]uint64{},
		pending: map[*replicaProc]map[string]time.Duration{}, status: map[*replicaProc]controlloop.Status{},
		dirty: map[*replicaProc]bool{}, hist: newHistory(), toleratedRules: map[string]bool{}}
}

// fail records a violation: the first one ends the run, unless it is
// one of a fix the run tolerates (Config.Tolerate), which is recorded
// (the first of each rule) and the run goes on.
func (c *checker) fail(rule string, fix revert.Fix, format string, args ...any) {
	if c.violation != nil {
		return
	}
	w := c.w
	msg := fmt.Sprintf(format, args...)
	v := &Violation{Rule: rule, Fix: fix, Message: msg, Seed: w.cfg.Seed, Step: w.step, At: w.now, Tolerate: w.cfg.Tolerate, Reverted: w.cfg.Reverted}
	if fix != 0 && w.cfg.Tolerate.Reverted(fix) {
		if !c.toleratedRules[rule] {
			c.toleratedRules[rule] = true
			w.tr.add(w.now, "TOLERATED %s: %s", rule, msg)
			v.Trace = w.tr.last()
			c.tolerated = append(c.tolerated, v)
		}
		return
	}
	w.tr.add(w.now, "VIOLATION %s: %s", rule, msg)
	v.Trace = w.tr.last()
	c.violation = v
}

func (c *checker) onNode(n *mcNode) {
	t := &nodeTruth{n: n, cleanStep: c.w.step, cleanAt: c.w.now, cleans: []time.Duration{c.w.now}}
	c.nodes[n.id] = t
	c.order = append(c.order, t)
}

func (c *checker) onRestart(n *mcNode) {
	if t := c.nodes[n.id]; t != nil {
		t.clean(c.w)
	}
}

// clean records that t's memcached is empty now (flushed or restarted).
func (t *nodeTruth) clean(w *world) {
	t.cleanStep, t.cleanAt = w.step, w.now
	t.cleans = append(t.cleans, w.now)
	if len(t.cleans) > 8 {
		t.cleans = t.cleans[1:]
	}
	if t.owe {
		t.oweEnded = w.now
	}
	t.owe, t.forgotSince = false, 0
}

// settledClean returns the last time t was clean that lies at least
// settle before now: a flush or restart more recent than that the pool
// may not have seen yet (its next probe reads the new counters).
func (t *nodeTruth) settledClean(now, settle time.Duration) time.Duration {
	for i := len(t.cleans) - 1; i >= 0; i-- {
		if t.cleans[i] <= now-settle {
			return t.cleans[i]
		}
	}
	if len(t.cleans) > 0 {
		return t.cleans[0]
	}
	return 0
}

func (c *checker) onStart(p *replicaProc) {
	c.pending[p] = map[string]time.Duration{}
	c.dirty[p] = true
}

func (c *checker) onStop(p *replicaProc) {
	delete(c.pending, p)
	delete(c.status, p)
	delete(c.dirty, p)
}

// onReplace notes that an operator's replace of n is asked of the leader.
func (c *checker) onReplace(n *mcNode) {
	if t := c.nodes[n.id]; t != nil {
		t.replaced, t.replacedAt = true, c.w.now
	}
}

// leader returns the process that leads by the ground truth: it believes
// it leads and its session holds the lock in Consul.
func (c *checker) leader() *replicaProc {
	lock := c.w.consul.kv[poolKeys.Leader()]
	for _, r := range c.w.replicas {
		if p := r.proc; p != nil && p.lead.leading && lock != nil && lock.session == p.lead.session {
			return p
		}
	}
	return nil
}

// onFlush checks a flush as memcached carries it out (invariants 2 and 7).
func (c *checker) onFlush(n *mcNode, p *replicaProc) {
	w := c.w
	t := c.nodes[n.id]
	holder := p.loop.SlotMap() != nil && p.loop.SlotMap().SlotOf(n.id) >= 0
	kind := "placement"
	if holder {
		kind = "returning"
	}
	w.tr.add(w.now, "%s flushes %s (%s)", p.name(), n.id, kind)
	if l := c.leader(); l != p {
		c.fail("inv7-flush-by-leader", 0, "%s flushed %s while it did not hold the leader lock", p.name(), n.id)
	}
	if holder {
		c.checkReturningFlush(t, p)
	}
	t.clean(w)
}

// checkReturningFlush checks the flush of a slot holder: the pool decided
// it, and the node may have missed something.
func (c *checker) checkReturningFlush(t *nodeTruth, p *replicaProc) {
	w := c.w
	since, seen := c.pending[p][t.n.id]
	settle := 2*probeInterval + 2*maxSkew
	switch {
	case c.storedFlush(t.n.id), t.owe:
	case t.oweEnded > 0 && w.now-t.oweEnded <= settle:
		// A retry of a decided flush whose answer was lost.
	case seen && since >= p.lead.termStart:
		// Decided by this leader during its term.
	case !seen && pendingIn(p.loop.Status(), t.n.id):
		// Decided by this leader in this very pass.
	case !seen:
		c.fail(ruleInv2Undecided, 0, "%s flushed slot holder %s, which neither the pool nor %s itself had found owing a flush", p.name(), t.n.id, p.name())
		return
	default:
		c.fail("inv2-flush-undecided", revert.FollowerFlush,
			"%s flushed slot holder %s, a flush the pool never decided: the leader of the moment showed none pending; %s had shown it pending since %.3fs, before its term began at %.3fs (a follower's own decision)",
			p.name(), t.n.id, p.name(), since.Seconds(), p.lead.termStart.Seconds())
		return
	}
	thr := max(probeInterval-2*maxSkew, w.flushAfter-2*probeInterval-2*maxSkew)
	from := t.settledClean(w.now, settle)
	if longest := longestIn(t.disturbed, from, w.now, probeInterval); longest < thr {
		c.fail("inv2-needless-flush", 0,
			"%s flushed %s, whose memcached answered throughout since it was last clean at %.3fs (its longest disturbance %v, under the %v a decision needs)",
			p.name(), t.n.id, from.Seconds(), longest, thr)
	}
}

// pendingIn reports whether st shows node id flush_pending.
func pendingIn(st controlloop.Status, id string) bool {
	for _, ns := range st.Nodes {
		if ns.ID == id {
			return ns.FlushPending
		}
	}
	return false
}

// storedFlush reports whether the flushes document in KV holds an entry
// for id.
func (c *checker) storedFlush(id string) bool {
	e := c.w.consul.kv[poolKeys.Flushes()]
	if e == nil {
		return false
	}
	if e.modifyIndex != c.flushesIndex {
		c.flushesIndex, c.flushes = e.modifyIndex, map[string]bool{}
		var doc struct {
			Flushes []struct {
				NodeID string `json:"node_id"`
			} `json:"flushes"`
		}
		if json.Unmarshal(e.value, &doc) == nil {
			for _, f := range doc.Flushes {
				c.flushes[f.NodeID] = true
			}
		}
	}
	return c.flushes[id]
}

// longestIn returns the longest span of spans (merging those less than gap
// apart) that overlaps [from, to].
func longestIn(spans []interval, from, to, gap time.Duration) time.Duration {
	var best, curFrom, curTo time.Duration
	have := false
	flush := func() {
		if have && curTo >= from && curFrom <= to {
			best = max(best, curTo-curFrom)
		}
	}
	for _, s := range spans {
		end := s.to
		if end == 0 {
			end = to
		}
		if have && s.from-curTo < gap {
			curTo = max(curTo, end)
			continue
		}
		flush()
		curFrom, curTo, have = s.from, end, true
	}
	flush()
	return best
}

// afterStep runs the rules that can be checked after every step.
func (c *checker) afterStep(string) {
	if c.violation != nil {
		return
	}
	c.groundTruth()
	c.checkKV()
	c.checkReplicas()
	c.checkOwed()
}

// groundTruth records, for every node, whether it may fail to answer a
// live replica now and whether Consul lists it present.
func (c *checker) groundTruth() {
	w := c.w
	if w.truth == c.truthSeen {
		return
	}
	c.truthSeen = w.truth
	for _, t := range c.order {
		id := t.n.id
		disturbed := t.n.proc != running
		for _, r := range w.replicas {
			if r.proc != nil && !disturbed {
				disturbed = w.net.impaired(r.host.name, t.n.host.name)
			}
		}
		t.disturbed = track(t.disturbed, disturbed, w.now)
		s := w.consul.services[id]
		a := w.consul.agents[t.n.host.name]
		present := s != nil && s.listed && s.passing && !s.maintenance && a != nil && a.serfOK
		t.absent = track(t.absent, !present, w.now)
	}
}

// track opens or closes the last span of spans.
func track(spans []interval, on bool, now time.Duration) []interval {
	open := len(spans) > 0 && spans[len(spans)-1].to == 0
	switch {
	case on && !open:
		spans = append(spans, interval{from: now})
	case !on && open:
		spans[len(spans)-1].to = max(now, spans[len(spans)-1].from+time.Millisecond)
	}
	return spans
}

// lastSpanStart returns when the last span of spans began, merging spans
// less than gap apart; 0 when there is none.
func lastSpanStart(spans []interval, gap time.Duration) time.Duration {
	if len(spans) == 0 {
		return 0
	}
	from := spans[len(spans)-1].from
	for i := len(spans) - 2; i >= 0 && from-spans[i].to < gap; i-- {
		from = spans[i].from
	}
	return from
}

// setFlag is a Set as the test flags take it.
func setFlag(s revert.Set) string {
	if s == 0 {
		return "none"
	}
	return s.String()
}
