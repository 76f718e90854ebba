package controlloop

import (
	"cmp"
	"slices"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// Status returns the loop's view now: the status document but for its
// hit_rate and boot_limit, which the server adds from the boot limiter.
func (l *Loop) Status() mcribapi.Status {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	_, leading := l.lead.Lease()
	st := mcribapi.Status{
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
		Nodes:                []mcribapi.NodeStatus{},
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
			}
			if l.tr.unserved(n) {
				st.SlotsUnserved++
			}
		}
	}
	var drained map[string]*mcribapi.DrainEntry
	if l.drains.doc != nil {
		drained = l.drains.doc.Zones
	}
	for id, s := range l.tr.nodes {
		ns := mcribapi.NodeStatus{
			ID: id, Addr: s.node.Addr, AZ: s.node.AZ,
			Consul:     mcribapi.ConsulAbsent,
			Reachable:  s.reachable,
			Flaps:      s.penalty.Flaps(),
			Suppressed: s.penalty.Suppressed(now, l.opts.Damping),
		}
		switch {
		case s.maintenance:
			ns.Consul = mcribapi.ConsulMaintenance
		case s.present:
			ns.Consul = mcribapi.ConsulPresent
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
			if t := l.current.TwinSlot(slot); t >= 0 {
				ns.Twin = &t
			}
			if w := l.current.WarmingOf(id); w >= 0 {
				// The holder of slot s warms the node its twin split to.
				ns.Warming = &w
				if wm := l.current.Warming(w); wm != nil {
					until := wm.ReadsUntil().UTC()
					ns.WarmingUntil, ns.WarmingEnded = &until, wm.Ended()
				}
			}
			if ni := l.current.Incoming(slot); ni != nil {
				ns.IncomingNode = ni.NodeID
			}
			if l.current.Warming(slot) != nil {
				if r, ok := l.warmth.holderRate(slot); ok {
					ns.WarmHitRate = &r
				}
				ns.CopiedKeys, ns.CopiedBytes = l.copies.copied(id)
			}
			if d, counting := l.tr.cfg.Hold.Remaining(s.absentSince, s.unreachableSince, now); counting {
				secs := d.Seconds()
				until := now.Add(d).UTC()
				ns.HoldRemainingSeconds, ns.HeldUntil = &secs, &until
			}
		}
		owes := l.owed.owes(id)
		if l.tr.cfg.LegacyFlush && slot >= 0 && s.needsFlush {
			owes = true // the old path (revert.FollowerFlush): this process's own mark
		}
		ns.FlushPending = owes
		ns.State = stateName(s, slot >= 0, owes)
		if slot < 0 && l.current != nil && l.current.AnyWarming() {
			if w := l.current.WarmingOf(id); w >= 0 {
				// It keeps state warming until its warming object is
				// removed, ended or not.
				ns.Warming, ns.State = &w, mcribapi.NodeWarming
				if wm := l.current.Warming(w); wm != nil && !wm.Until.IsZero() {
					until := wm.ReadsUntil().UTC()
					ns.WarmingUntil, ns.WarmingEnded = &until, wm.Ended()
				}
			}
		}
		if slot < 0 && l.current != nil && l.current.AnyIncoming() {
			if i := l.current.IncomingOf(id); i >= 0 {
				ns.Incoming = &i
				if ni := l.current.Incoming(i); ni != nil {
					at := ni.ServesAt.UTC()
					ns.ServesAt = &at
				}
				if ns.State != mcribapi.NodeFlushing && ns.State != mcribapi.NodeDown {
					ns.State = mcribapi.NodeIncoming
				}
			}
		}
		_, ns.Drained = drained[s.node.AZ]
		ns.Roll = rollStateOf(l.rolls.entry, id)
		st.Nodes = append(st.Nodes, ns)
	}
	slices.SortFunc(st.Nodes, func(a, b mcribapi.NodeStatus) int { return cmp.Compare(a.ID, b.ID) })
	st.Zones = l.zones.statuses(st.Nodes, l.drainsLocked(now))
	st.ZoneAlert = l.zones.alert
	if r := l.resizeAnswerLocked(now); r.Resize != nil {
		st.Resize = r.Resize
	}
	st.Roll = l.rolls.answer().Roll
	if l.current != nil {
		nodes, spares := l.capacityCountsLocked(now)
		st.Capacity = l.capacity.status(l.current.NumSlots(), nodes, spares, now)
	}
	st.GetsPerSecond, st.Flags = l.gets.perSecond(), l.poolFlags()
	return st
}

// unserved reports whether a slot held by n (the zero Node: vacant)
// has no live holder: vacant, or its holder unreachable by the pool's
// verdict. The status's slots_unserved and the hit rate (HitCounters)
// count the same slots.
func (t *tracker) unserved(n cachenodes.Node) bool {
	if n.IsZero() {
		return true
	}
	s, ok := t.nodes[n.ID]
	return ok && !s.reachable
}

// stateName names the state of a node for the status document: a slot
// holder that owes a flush is flushing, not serving, until the flush is
// done (held while it is absent from Consul).
func stateName(s *nodeState, holdsSlot, owes bool) mcribapi.NodeState {
	switch {
	case s.flushing:
		return mcribapi.NodeFlushing
	case holdsSlot && !s.present:
		return mcribapi.NodeHeld
	case holdsSlot && owes:
		return mcribapi.NodeFlushing
	case holdsSlot:
		return mcribapi.NodeServing
	case s.reachable && s.probed && s.listed && s.present && !s.maintenance:
		return mcribapi.NodeSpare
	}
	return mcribapi.NodeDown
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
