package dst

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/mcribapi"
)

// Violation is a rule the checker found broken.
type Violation struct {
	// Rule names the rule ("inv2-flush-undecided", …; see rules.go).
	Rule string
	// Fix is the known fix whose absence explains the violation,
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

// checker asserts the rules after every step and over the history.
type checker struct {
	w *world
	// limits is the history of the stored boot limit (boot.go).
	limits    []limitAt
	violation *Violation
	nodes     map[string]*nodeTruth
	// order holds the nodes in the order they joined (by ID).
	order []*nodeTruth
	// truthSeen is the ground truth's version last recorded.
	truthSeen uint64
	// flushesIndex and flushes cache the stored flushes document.
	flushesIndex uint64
	flushes      map[string]flushEntry
	// flushFirst is when the checker first saw each stored entry.
	flushFirst map[string]time.Duration
	// kvMap is the stored slot map as last read, kvIndex its ModifyIndex.
	kvMap   *cachenodes.SlotMap
	kvIndex uint64
	// served is the highest generation each replica served.
	served map[string]uint64
	// pending holds, for each live process, since when it shows each node
	// flush_pending (its status, refreshed after each of its steps).
	pending map[*replicaProc]map[string]time.Duration
	status  map[*replicaProc]mcribapi.Status
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
	// resize is what the resize rules follow (resizecheck.go).
	resize resizeTruth
	// incoming are the stored map's announces, by slot, with when each
	// was first stored (announcecheck.go).
	incoming map[int]incomingTruth
	// protected holds the nodes the stored map names a slot's incoming
	// node or, while the slot has a warming object, its holder, with when
	// each was first stored (v5check.go).
	protected map[protection]time.Duration
	// lostFlushWrite is, per process, when a write of the flushes
	// document it sent was carried out and its answer lost (lostwrite.go).
	lostFlushWrite map[*replicaProc]time.Duration
}

func newChecker(w *world) *checker {
	return &checker{w: w, nodes: map[string]*nodeTruth{}, served: map[string]uint64{},
		pending: map[*replicaProc]map[string]time.Duration{}, status: map[*replicaProc]mcribapi.Status{},
		dirty: map[*replicaProc]bool{}, flushFirst: map[string]time.Duration{}, hist: newHistory(), toleratedRules: map[string]bool{}}
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

func (c *checker) onStart(p *replicaProc) {
	c.pending[p] = map[string]time.Duration{}
	c.dirty[p] = true
}

func (c *checker) onStop(p *replicaProc) {
	delete(c.lostFlushWrite, p)
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

// setFlag is a Set as the test flags take it.
func setFlag(s revert.Set) string {
	if s == 0 {
		return "none"
	}
	return s.String()
}
