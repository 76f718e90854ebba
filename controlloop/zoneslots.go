package controlloop

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/slotplan"
)

// How many slots each zone holds, and the sentences the drains answer
// with (drain.go, drainops.go).

// movedSlots returns a zone's moved_slots after a pass: was, with the
// slots its drain steps moved off it in the pass (off), less the slots it
// holds in next (given back) and those next does not have; ascending,
// without repeats, nil when none.
func movedSlots(was, off []int, next *cachenodes.SlotMap, zone string) []int {
	var out []int
	for _, i := range slices.Concat(was, off) {
		if next != nil && i < next.NumSlots() && next.Slot(i).AZ != zone {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// slotList writes slots as "slot 3" or "slots 3, 5 and 9".
func slotList(slots []int) string {
	parts := make([]string, len(slots))
	for i, s := range slots {
		parts[i] = strconv.Itoa(s)
	}
	if len(parts) == 1 {
		return "slot " + parts[0]
	}
	return "slots " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// spareWarning says, for a drain entry that still moves toMove slots off
// its zone (draining) or back to it (returning) with spares ready spares
// outside the drained zones, that the drain takes the last of them or
// that none is left; "" when neither. A return takes no spare outside
// the zone (it frees one with each step), so it is told so, without the
// advice to undrain a zone.
func spareWarning(draining, returning bool, toMove, spares int) string {
	switch {
	case spares == 0 && returning:
		return "the pool has no ready spare outside the drained zones until the return frees one: each return step leaves the node that gives its slot back a spare once its warming ends; meanwhile a node that fails leaves its slot vacant (" + slotplan.SpareHelp(false) + ")"
	case spares == 0:
		return lastSpareSentence(true)
	case !draining || toMove < spares:
		return ""
	case toMove == spares:
		return fmt.Sprintf("the drain takes the pool's last ready spare: %s to move onto the %s outside the drained zones; afterwards a node that fails leaves its slot vacant (%s)",
			countOf(toMove, "slot"), countOf(spares, "ready spare"), slotplan.SpareHelp(true))
	}
	return fmt.Sprintf("the drain takes the pool's last ready spare: %s to move and only %s outside the drained zones; the rest wait for a spare, and a node that fails leaves its slot vacant (%s)",
		countOf(toMove, "slot"), countOf(spares, "ready spare"), slotplan.SpareHelp(true))
}

// countOf is n things in words: "1 slot", "3 slots".
func countOf(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// zoneSlots counts the slots each zone holds in m; a slot and its twin
// count once.
func zoneSlots(m *cachenodes.SlotMap) map[string]int {
	out := map[string]int{}
	if m == nil {
		return out
	}
	for i := range m.NumSlots() {
		if n := m.Slot(i); !n.IsZero() && !m.IsTwin(i) {
			out[n.AZ]++
		}
	}
	return out
}

// zoneSlotsAnnounced counts the slots each zone holds in m as zoneSlots
// does, a slot announced to another node counting for that node's zone
// (as this process knows it).
func (t *tracker) zoneSlotsAnnounced(m *cachenodes.SlotMap) map[string]int {
	out := zoneSlots(m)
	if m == nil || !m.AnyIncoming() {
		return out
	}
	for i := range m.NumSlots() {
		ni := m.Incoming(i)
		if ni == nil || m.IsTwin(i) {
			continue
		}
		s := t.nodes[ni.NodeID]
		if s == nil {
			continue
		}
		if n := m.Slot(i); !n.IsZero() {
			out[n.AZ]--
		}
		out[s.node.AZ]++
	}
	return out
}

// announcedIn reports whether a slot of m is announced to a node of zone,
// or away from a holder of it: a step of its drain or return is still to
// serve.
func (t *tracker) announcedIn(m *cachenodes.SlotMap, zone string) bool {
	if m == nil || !m.AnyIncoming() {
		return false
	}
	for i := range m.NumSlots() {
		ni := m.Incoming(i)
		if ni == nil || m.IsTwin(i) {
			continue
		}
		if m.Slot(i).AZ == zone {
			return true
		}
		if s := t.nodes[ni.NodeID]; s != nil && s.node.AZ == zone {
			return true
		}
	}
	return false
}

// knownZones returns the zones of the nodes the tracker knows (those
// Consul lists) and of the slot holders of m.
func (t *tracker) knownZones(m *cachenodes.SlotMap) map[string]bool {
	out := map[string]bool{}
	for _, s := range t.nodes {
		out[s.node.AZ] = true
	}
	if m != nil {
		for i := range m.NumSlots() {
			if n := m.Slot(i); !n.IsZero() {
				out[n.AZ] = true
			}
		}
	}
	return out
}
