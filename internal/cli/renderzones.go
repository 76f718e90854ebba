package cli

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// The readable forms of the zone documents: the zones of the status
// document, a zone's drain entry and the outcome of a replace.

// zoneName prints the zone of the nodes without one.
func zoneName(z string) string {
	if z == "" {
		return "(none)"
	}
	return z
}

// drainCell is a drain entry in one cell: "-" when the zone is not drained.
// A drain or return with slots left to move and nothing blocking it says
// when its next step is due at now, when that is still to come (steps
// are at least the step interval apart).
func drainCell(e *mcribapi.DrainEntry, now time.Time) string {
	if e == nil {
		return "-"
	}
	s := drainProgress(e)
	moving := e.State == mcribapi.DrainDraining || e.State == mcribapi.DrainReturning
	if moving && e.Blocked == "" && e.SlotsToMove > 0 && e.LastStepAt != nil {
		if next := e.LastStepAt.Add(e.Interval()); next.After(now) {
			s += "; next step in " + span(next.Sub(now))
		}
	}
	if e.Blocked != "" {
		s += "; blocked: " + e.Blocked
	}
	return s
}

// drainProgress says where a zone's drain or return stands in the words
// of what is left to do: "draining: 1 slot to move, 0 left of a baseline
// of 1", then "drained: 1 slot moved, 0 left of a baseline of 1";
// "returning: 2 slots to give back, 3 held of a baseline of 5".
func drainProgress(e *mcribapi.DrainEntry) string {
	state := orUnknown(e.State)
	if e.State == mcribapi.DrainPaused {
		state = "paused (an operator freeze holds it)"
	}
	held, base, target := e.Slots, e.BaselineSlots, e.TargetSlots
	if e.Returning {
		target = base
	}
	switch {
	case held > target:
		return fmt.Sprintf("%s: %s to move, %d left of a baseline of %d", state, slotCount(held-target), target, base)
	case held < target:
		return fmt.Sprintf("%s: %s to give back, %d held of a baseline of %d", state, slotCount(target-held), held, base)
	case e.Returning:
		return fmt.Sprintf("%s: back at its baseline of %s", state, slotCount(base))
	}
	return fmt.Sprintf("%s: %s moved, %d left of a baseline of %d", state, slotCount(base-held), held, base)
}

// slotCount is n slots in words: "1 slot", "3 slots".
func slotCount(n int) string {
	if n == 1 {
		return "1 slot"
	}
	return strconv.Itoa(n) + " slots"
}

// nodeStateCell is a node's state with its zone's drain and the slot it
// warms, when there are.
func nodeStateCell(n mcribapi.NodeStatus) string {
	s := orUnknown(n.State)
	if n.Warming != nil {
		s += " (slot " + strconv.Itoa(*n.Warming) + ")"
	}
	if n.Drained {
		s += ", drained"
	}
	return s
}

// printStatusZones writes the zones block of `mcrib status`; nothing when
// the server sent no zones (an older mcrib).
func printStatusZones(w io.Writer, s mcribapi.Status, now time.Time) {
	if len(s.Zones) == 0 {
		return
	}
	fmt.Fprintln(w, "\nzones:")
	printZones(w, s.Zones, "", now)
}
