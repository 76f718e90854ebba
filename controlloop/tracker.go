package controlloop

import (
	"fmt"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/flapdamp"
	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/slotplan"
)

// trackerConfig holds the time rules a tracker applies.
type trackerConfig struct {
	Hold       flapdamp.Hold
	FlushAfter time.Duration
	Damping    flapdamp.DampingConfig
	// ProbeInterval is how long a node's probes must fail without a break
	// before this process finds it unreachable (invariant 7): one dropped
	// SYN or one stalled round is not enough. Zero: the first failure.
	ProbeInterval time.Duration
	// Mass is the guard over unreachable slot holders: above its fraction
	// the episode is taken as the observer's fault.
	Mass flapdamp.MassGuard
	// LegacyFlush turns on the old path of revert.FollowerFlush: each
	// replica marks a returning slot holder for a flush from its own probe
	// timing (needsFlush), shows it and flushes it when it leads.
	LegacyFlush bool
	// Reverted are the fixes the simulation's self-test turned off
	// (revert.go); zero in production.
	Reverted revert.Set
}

// endedEpisode is an episode of unreachability that ended after this
// process's last pass.
type endedEpisode struct {
	since, until  time.Time
	observerFault bool
	// stale is staleEpisode as it stood when the episode ended.
	stale bool
}

// nodeState is everything observed of one node.
type nodeState struct {
	node        cachenodes.Node
	listed      bool
	present     bool
	maintenance bool
	absentSince time.Time

	probed bool
	// failingSince is when this process's probes of the node began to fail
	// without a break; zero after a success. localDown is set once they
	// failed for a whole probe interval: this process's own vote.
	failingSince time.Time
	// lastFailed is when this process's probe of the node last failed.
	lastFailed time.Time
	localDown  bool
	lastErr    string
	// reachable and unreachableSince are the pool's verdict: this
	// process's view and the other replicas' votes (see verdict).
	reachable        bool
	unreachableSince time.Time
	// downSince is when the last episode of unreachability began, kept
	// once the verdict turned back.
	downSince time.Time
	stats     cachenodes.Stats
	haveStats bool
	// statsAt is when stats were read; flushedSince counts the flushes
	// this process made of the node since (each raised its cmd_flush).
	statsAt      time.Time
	flushedSince uint64
	holdsSlot    bool
	// downStats are the last stats read before the verdict turned to
	// unreachable, at downStatsAt; restarted is set when a later reading
	// shows another process (a new pid or a reset uptime): it is empty,
	// nothing is stale. It stays set until the verdict turns again.
	downStats     cachenodes.Stats
	downStatsAt   time.Time
	haveDownStats bool
	restarted     bool
	// restarts counts the restarts of the node's memcached this process
	// saw (another pid, or an uptime that went back, from one reading to
	// the next): an incoming node or a warming's new holder that restarted
	// since it was marked lost its tombstones (announce.go).
	restarts uint64
	// downCounted is set when downStats count every flush a leader made
	// of the node before the episode (countsEveryFlush): only then is its
	// cmd_flush the base of an owed flush.
	downCounted bool
	// placedAt is when this process saw the node enter a slot, and
	// owedCleared when it saw the pool's owed flush of the node gone
	// (owedSeen: it is owed in the last flushes document read). A leader
	// flushes a node before the write that shows it (the placement, the
	// entry's removal), so a reading from before either, or taken while
	// an entry was owed, may not count that flush: it is no base for an
	// owed flush (its cmd_flush would pass at once).
	placedAt time.Time
	// flushedAt is when this process last flushed the node.
	flushedAt   time.Time
	owedCleared time.Time
	owedSeen    bool
	// answersSince is when the verdict last turned back to reachable (zero
	// while it never turned): a reading from then on shows the node as it
	// came back.
	answersSince time.Time
	// failures are the last stretches of this process's probes that failed
	// without a break, from the first failure to the last (restartClean).
	failures []failStretch
	// observerFault is set while the node was unreachable during a mass
	// episode (more than the guard's fraction of holders at once): taken as
	// the observer's fault, it costs the node neither slot nor contents.
	observerFault bool
	// ended is the node's last episode of unreachability, from the
	// verdict's turn back until this process's next pass: the probes turn
	// verdicts between passes, so an episode can end before a pass saw it
	// last long enough. The leader's next pass decides its flush as if it
	// had looked while the episode lasted (owedState.decide).
	ended *endedEpisode

	// needsFlush is the old path's mark (trackerConfig.LegacyFlush): set
	// when a slot holder answers again after being unreachable for longer
	// than the flush-after threshold, by this process's own timing.
	needsFlush bool
	// flushing is set while a flush of the node is under way.
	flushing bool
	// flushMark is cmd_flush when needsFlush was set: a higher count means
	// somebody (the leader, when this process follows) flushed it since.
	flushMark uint64

	penalty *flapdamp.Penalty
}

// flushed records a flush of node id by this process.
func (t *tracker) flushed(id string, now time.Time) {
	if s, ok := t.nodes[id]; ok {
		s.flushedSince++
		s.flushedAt = now
	}
}

// healthy reports whether the node counts as up for flap damping: present
// in Consul and reachable by the pool's verdict.
func (s *nodeState) healthy() bool { return s.present && s.reachable }

// tracker folds Consul answers and probe results into per-node state. It
// takes time as an argument and does no I/O. It is not safe for concurrent
// use; the Loop guards it with its mutex.
type tracker struct {
	cfg   trackerConfig
	nodes map[string]*nodeState

	// accepted is the instance count of the last accepted Consul answer;
	// haveAnswer is false until the first one.
	accepted   int
	haveAnswer bool
	// fault describes the last answer taken as a fault of discovery; "" when
	// the last answer was accepted.
	fault string

	// events are the node transitions observed since the last drain, for
	// the log: an operator reads there why a node is held, flushed or moved.
	events []nodeEvent

	// penalties outlive a node's state: a spare that keeps dropping out of
	// Consul keeps its flap history while it is forgotten; an entry goes
	// once it has decayed (see prune).
	penalties map[string]*flapdamp.Penalty
	// peers are the other live replicas' votes: for each replica, the
	// nodes it cannot reach and since when (see verdict).
	peers map[string]map[string]time.Time
	// mass is the reason of the current mass episode of unreachable slot
	// holders (invariant 7), "" when there is none.
	mass string
	// massQuietSince is when the count of unreachable holders fell back to
	// the guard's fraction during an episode; the episode ends two probe
	// intervals later, so the holders coming back one by one after the
	// observer's fault all count as part of it.
	massQuietSince time.Time
	// localChanged is set when this process's own vote changed since
	// takeLocalChange.
	localChanged bool
}

// nodeEvent is one transition of one node.
type nodeEvent struct {
	Node   string
	Kind   mcribapi.EventKind
	Detail string
}

func (t *tracker) event(id string, kind mcribapi.EventKind, detail string) {
	t.events = append(t.events, nodeEvent{Node: id, Kind: kind, Detail: detail})
}

// drain returns and forgets the events observed so far.
func (t *tracker) drain() []nodeEvent {
	evs := t.events
	t.events = nil
	return evs
}

func newTracker(cfg trackerConfig) *tracker {
	return &tracker{cfg: cfg, nodes: make(map[string]*nodeState), penalties: make(map[string]*flapdamp.Penalty)}
}

// DiscoveryFault returns the reason an answer of n instances is a fault of
// discovery, given that the last accepted answer had prev instances (and
// havePrev is false before the first): an answer that lists no instance, or
// fewer than half of the previous one. It returns "" for an answer to take.
func DiscoveryFault(n, prev int, havePrev bool) string {
	switch {
	case n == 0:
		return "Consul listed no instance of the service: taken as a fault of discovery, nothing is replaced"
	case havePrev && 2*n < prev:
		return fmt.Sprintf("Consul listed %d instances, fewer than half of the %d before: taken as a fault of discovery, nothing is replaced", n, prev)
	}
	return ""
}

// state returns the node's state, creating it (absent since now) when new.
func (t *tracker) state(n cachenodes.Node, now time.Time) *nodeState {
	s, ok := t.nodes[n.ID]
	if !ok {
		p := t.penalties[n.ID]
		if p == nil {
			p = new(flapdamp.Penalty)
			t.penalties[n.ID] = p
		}
		s = &nodeState{node: n, absentSince: now, reachable: true, penalty: p}
		t.nodes[n.ID] = s
	}
	return s
}

// observeMembership takes one Consul answer. It returns false when the
// answer is a fault of discovery and was not taken.
func (t *tracker) observeMembership(m cachenodes.Membership, now time.Time) bool {
	if f := DiscoveryFault(len(m.Instances), t.accepted, t.haveAnswer); f != "" {
		t.fault = f
		return false
	}
	t.fault = ""
	t.accepted = len(m.Instances)
	t.haveAnswer = true
	listed := make(map[string]bool, len(m.Instances))
	for _, inst := range m.Instances {
		listed[inst.ID] = true
		s := t.state(inst.Node, now)
		s.node = inst.Node
		s.listed = true
		s.maintenance = inst.Maintenance
		// Maintenance is deliberate: it takes the node out but is no flap.
		t.setPresent(s, inst.Present && !inst.Maintenance, !inst.Maintenance, now)
	}
	for id, s := range t.nodes {
		if !listed[id] {
			s.listed = false
			s.maintenance = false
			t.setPresent(s, false, true, now)
		}
	}
	return true
}

// setPresent records presence; a healthy node going absent counts as a
// flap when flap is true (maintenance is no flap).
func (t *tracker) setPresent(s *nodeState, present, flap bool, now time.Time) {
	wasHealthy := s.healthy()
	switch {
	case present:
		if !s.absentSince.IsZero() && s.probed {
			t.event(s.node.ID, mcribapi.EventNodePresent, "Consul lists it with every check passing again after "+now.Sub(s.absentSince).Round(time.Millisecond).String())
		}
		s.absentSince = time.Time{}
	case s.absentSince.IsZero():
		s.absentSince = now
		if s.present {
			why := "Consul no longer lists it"
			switch {
			case s.maintenance:
				why = "Consul maintenance mode"
			case s.listed:
				why = "a Consul check is not passing"
			}
			t.event(s.node.ID, mcribapi.EventNodeAbsent, why)
		}
	}
	s.present = present
	if wasHealthy && !s.healthy() && flap {
		s.penalty.Flap(now, t.cfg.Damping)
	}
}

// ensure makes sure every slot holder of m has a state, so that a holder
// Consul does not list counts as absent from now on, and records which
// nodes hold a slot.
func (t *tracker) ensure(m *cachenodes.SlotMap, now time.Time) {
	if m == nil {
		return
	}
	for _, n := range m.Slots() {
		if !n.IsZero() {
			t.state(n, now)
		}
	}
	if m.AnyWarming() || m.AnyIncoming() {
		// A warm source is probed like a holder: its warming ends when it
		// stops answering; so is an incoming node: its announce is dropped
		// when it stops answering.
		for i := range m.NumSlots() {
			if w := m.Warming(i); w != nil {
				t.state(w.Node(), now)
			}
			if in := m.Incoming(i); in != nil {
				t.state(in.Node(), now)
			}
		}
	}
	for id, s := range t.nodes {
		s.holdsSlot = m.SlotOf(id) >= 0
	}
	if t.mass != "" {
		t.checkMass(now)
	}
}

// prune forgets nodes that neither Consul lists nor m holds in a slot. Their
// flap penalties stay until they have decayed below one flap's hundredth,
// so a spare that keeps dropping out of Consul keeps its history.
func (t *tracker) prune(m *cachenodes.SlotMap, now time.Time) {
	for id, s := range t.nodes {
		if !s.listed && (m == nil || (m.SlotOf(id) < 0 && (!m.AnyWarming() || m.WarmingOf(id) < 0) && (!m.AnyIncoming() || m.IncomingOf(id) < 0))) {
			delete(t.nodes, id)
		}
	}
	floor := t.cfg.Damping.WithDefaults().Penalty / 100
	for id, p := range t.penalties {
		if _, tracked := t.nodes[id]; !tracked && p.Value(now, t.cfg.Damping) < floor {
			delete(t.penalties, id)
		}
	}
}

// views returns the decision view of every tracked node at now.
func (t *tracker) views(now time.Time) []slotplan.NodeView {
	out := make([]slotplan.NodeView, 0, len(t.nodes))
	for _, s := range t.nodes {
		out = append(out, slotplan.NodeView{
			Node:        s.node,
			Listed:      s.listed,
			Present:     s.present,
			Maintenance: s.maintenance,
			Reachable:   s.reachable,
			Due:         t.cfg.Hold.Due(s.absentSince, s.unreachableSince, now),
			DueSoon:     t.dueSoon(s, now),
			Suppressed:  s.penalty.Suppressed(now, t.cfg.Damping),
		})
	}
	return out
}

// dueSoon reports whether s's hold runs out within AnnounceLead: a
// replacement after the hold is announced then, so that it serves as the
// hold ends (docs/api.md, "Announce, then serve").
func (t *tracker) dueSoon(s *nodeState, now time.Time) bool {
	left, counting := t.cfg.Hold.Remaining(s.absentSince, s.unreachableSince, now)
	return counting && left <= cachenodes.AnnounceLead
}

// absentHolders counts the slot holders of m that Consul does not list as
// present, leaving out those in maintenance (taken out on purpose).
func (t *tracker) absentHolders(m *cachenodes.SlotMap) (serving, absent int) {
	if m == nil {
		return 0, 0
	}
	for i, n := range m.Slots() {
		if n.IsZero() || m.IsTwin(i) {
			continue // a twin's holder is slot s's, counted there
		}
		serving++
		if s, ok := t.nodes[n.ID]; ok && !s.present && !s.maintenance {
			absent++
		}
	}
	return serving, absent
}

// failStretch is a stretch of a node's probes that failed without a
// break: from the first failure to the last.
type failStretch struct{ from, to time.Time }

// maxFailStretches is how many of a node's stretches of failed probes a
// tracker keeps.
const maxFailStretches = 8
