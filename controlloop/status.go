package controlloop

import (
	"cmp"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// Status is the loop's part of the status document (CONTRACT.md section
// 3). The API adds hit_rate and boot_limit from the boot limiter.
type Status struct {
	Pool                 string       `json:"pool"`
	Leader               bool         `json:"leader"`
	LeaderID             string       `json:"leader_id"`
	Frozen               bool         `json:"frozen"`
	Freeze               *FreezeDoc   `json:"freeze"`
	AutoFrozen           bool         `json:"auto_frozen"`
	AutoFreezeReason     string       `json:"auto_freeze_reason"`
	Generation           uint64       `json:"generation"`
	LastReconcileAt      *time.Time   `json:"last_reconcile_at"`
	ConsulReachable      bool         `json:"consul_reachable"`
	HitRate              float64      `json:"hit_rate"`
	BootLimit            any          `json:"boot_limit"`
	Nodes                []NodeStatus `json:"nodes"`
	DiscoveryFault       bool         `json:"discovery_fault"`
	DiscoveryFaultReason string       `json:"discovery_fault_reason"`
	ReplacementsBlocked  int          `json:"replacements_blocked"`
	LastError            string       `json:"last_error"`
	VacantSlots          int          `json:"vacant_slots"`
	// NumSlots is the number of slots of the map this process knows (0
	// before it knows one): slots_unserved out of it is the share of the
	// keys that reach no memcached.
	NumSlots int `json:"num_slots"`
	// SlotsUnserved counts the slots whose keys reach no memcached: vacant,
	// or held by a node unreachable by the pool's verdict (section 7). The
	// hit rate counts only the gets that reached a memcached; this is the
	// share of the keys it leaves out.
	SlotsUnserved int `json:"slots_unserved"`
	// CorruptDocuments names the documents in Consul KV that do not parse
	// ("slotmap", "freeze"); absent when none.
	CorruptDocuments []string `json:"corrupt_documents,omitempty"`
	// Zones has one entry per zone known, by zone name (section 7).
	Zones []ZoneStatus `json:"zones"`
	// ZoneAlert names each zone more than half of whose slot holders, and
	// at least two of them, are unreachable, with the command that would
	// drain it; "" when none.
	ZoneAlert string `json:"zone_alert,omitempty"`
}

// NodeStatus is one node of the status document. Slot is null for a node
// without a slot; AbsentSince is null while Consul lists it as present.
type NodeStatus struct {
	ID          string     `json:"id"`
	Addr        string     `json:"addr"`
	AZ          string     `json:"az"`
	Slot        *int       `json:"slot"`
	Consul      string     `json:"consul"`
	Reachable   bool       `json:"reachable"`
	State       string     `json:"state"`
	AbsentSince *time.Time `json:"absent_since"`
	Flaps       int        `json:"flaps"`
	Suppressed  bool       `json:"suppressed"`
	// HoldRemainingSeconds counts down while a slot holder is absent and
	// unreachable (0: due for replacement); null while it is not counting.
	HoldRemainingSeconds *float64 `json:"hold_remaining_seconds"`
	// HeldUntil is when the slot of a held node goes to a spare if the
	// node does not return: the end of its hold, while the hold counts
	// down (the node absent from Consul and unreachable); null otherwise.
	// Past it, the replacement is due and waits only for a spare, the
	// replacement ceiling or a freeze.
	HeldUntil *time.Time `json:"held_until"`
	// FlushPending is true while the flushes document names the node
	// (invariant 2): its flush was decided and is not done yet, whatever it
	// waits for (the node to answer, a freeze, the leader's next pass).
	FlushPending bool `json:"flush_pending"`
	// Drained is true while the node's zone is drained.
	Drained bool `json:"drained"`
	// Warming is the slot this node still serves as the warm source of,
	// else null.
	Warming *int `json:"warming"`
	// WarmingUntil is when that warming ends at the latest (the slot map's
	// until, on the clock of the leader that wrote it), else null; the
	// node is a spare again after it (a drained one, in a drained zone).
	WarmingUntil *time.Time `json:"warming_until"`
}

// Status returns the loop's view now.
func (l *Loop) Status() Status {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	_, leading := l.lead.Lease()
	st := Status{
		Pool:                 l.opts.Pool,
		Leader:               leading,
		LeaderID:             l.leaderID,
		Frozen:               l.freeze.doc != nil,
		Freeze:               l.freeze.doc,
		AutoFrozen:           l.freeze.auto != "",
		AutoFreezeReason:     l.freeze.auto,
		ConsulReachable:      l.health.consulErr == nil,
		DiscoveryFault:       l.tr.fault != "",
		DiscoveryFaultReason: l.tr.fault,
		ReplacementsBlocked:  l.health.blocked,
		Nodes:                []NodeStatus{},
	}
	if st.LeaderID == "" {
		st.LeaderID = l.lead.LeaderID()
	}
	if l.health.passErr != nil {
		st.LastError = l.health.passErr.Error()
	} else if len(l.health.corrupt) > 0 {
		st.LastError = corruptMessage(l.health.corrupt)
	}
	if len(l.health.corrupt) > 0 {
		st.CorruptDocuments = slices.Clone(l.health.corrupt)
	}
	if !l.health.lastPass.IsZero() {
		t := l.health.lastPass.UTC()
		st.LastReconcileAt = &t
	}
	if l.current != nil {
		st.Generation = l.current.Generation()
		st.NumSlots = l.current.NumSlots()
		for _, n := range l.current.Slots() {
			if n.IsZero() {
				st.VacantSlots++
				st.SlotsUnserved++
			} else if s, ok := l.tr.nodes[n.ID]; ok && !s.reachable {
				st.SlotsUnserved++
			}
		}
	}
	var drained map[string]*DrainEntry
	if l.drains.doc != nil {
		drained = l.drains.doc.Zones
	}
	for id, s := range l.tr.nodes {
		ns := NodeStatus{
			ID: id, Addr: s.node.Addr, AZ: s.node.AZ,
			Consul:     ConsulAbsent,
			Reachable:  s.reachable,
			Flaps:      s.penalty.Flaps(),
			Suppressed: s.penalty.Suppressed(now, l.opts.Damping),
		}
		switch {
		case s.maintenance:
			ns.Consul = ConsulMaintenance
		case s.present:
			ns.Consul = ConsulPresent
		}
		if !s.absentSince.IsZero() {
			t := s.absentSince.UTC()
			ns.AbsentSince = &t
		}
		slot := -1
		if l.current != nil {
			slot = l.current.SlotOf(id)
		}
		if slot >= 0 {
			ns.Slot = &slot
			if d, counting := l.tr.cfg.Hold.Remaining(s.absentSince, s.unreachableSince, now); counting {
				secs := d.Seconds()
				until := now.Add(d).UTC()
				ns.HoldRemainingSeconds, ns.HeldUntil = &secs, &until
			}
		}
		owes := l.owesLocked(id)
		if l.tr.cfg.LegacyFlush && slot >= 0 && s.needsFlush {
			owes = true // the old path (revert.FollowerFlush): this process's own mark
		}
		ns.FlushPending = owes
		ns.State = stateName(s, slot >= 0, owes)
		if slot < 0 && l.current != nil && l.current.AnyWarming() {
			if w := l.current.WarmingOf(id); w >= 0 {
				ns.Warming, ns.State = &w, StateWarming
				if wm := l.current.Warming(w); wm != nil && !wm.Until.IsZero() {
					until := wm.Until.UTC()
					ns.WarmingUntil = &until
				}
			}
		}
		_, ns.Drained = drained[s.node.AZ]
		st.Nodes = append(st.Nodes, ns)
	}
	slices.SortFunc(st.Nodes, func(a, b NodeStatus) int { return cmp.Compare(a.ID, b.ID) })
	st.Zones = l.zonesLocked(st.Nodes, now)
	for i := range st.Zones {
		_, st.Zones[i].Alert = l.zones.alerting[st.Zones[i].Zone]
	}
	st.ZoneAlert = l.zones.alert
	return st
}

// stateName names the state of a node for the status document: a slot
// holder that owes a flush is flushing, not serving, until the flush is
// done (held while it is absent from Consul).
func stateName(s *nodeState, holdsSlot, owes bool) string {
	switch {
	case s.flushing:
		return StateFlushing
	case holdsSlot && !s.present:
		return StateHeld
	case holdsSlot && owes:
		return StateFlushing
	case holdsSlot:
		return StateServing
	case s.reachable && s.probed && s.listed && s.present && !s.maintenance:
		return StateSpare
	}
	return StateDown
}

// SlotMap returns the current slot map, or nil before one is known.
func (l *Loop) SlotMap() *cachenodes.SlotMap {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.current
}

// ServingAddrs returns the addresses of the nodes that hold a slot now.
func (l *Loop) ServingAddrs() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]string)
	if l.current == nil {
		return out
	}
	for _, n := range l.current.Slots() {
		if !n.IsZero() {
			out[n.ID] = n.Addr
		}
	}
	return out
}
