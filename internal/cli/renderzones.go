package cli

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// The readable forms of the zone documents: the zones of the status
// document, a zone's drain entry and the outcome of a replace.

// printZones writes one line per zone, then the zone alert when there is
// one; now tells when a drain's next step is due.
func printZones(w io.Writer, zones []mcribapi.ZoneStatus, alert string, now time.Time) {
	if len(zones) == 0 {
		fmt.Fprintln(w, "no zones")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ZONE\tNODES\tSLOTS\tUNREACHABLE\tABSENT\tHIT RATE\tDRAIN")
		for _, z := range zones {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\n", zoneName(z.Zone), z.Nodes, z.Slots, z.Unreachable, z.Absent,
				knownHitRate(true, z.HitRate), drainCell(z.Drain, now))
		}
		tw.Flush()
	}
	if alert != "" {
		fmt.Fprintf(w, "\nALERT: %s\n", alert)
	}
}

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

// printDrainEntry writes a zone's drain entry as PUT or DELETE
// /v1/drain/{zone} answered it; nil means the zone has no entry any more.
func printDrainEntry(w io.Writer, zone string, e *mcribapi.DrainEntry, now time.Time) {
	if e == nil {
		fmt.Fprintf(w, "zone %s: not drained (it holds its slots again)\n", zone)
		return
	}
	if e.Returning && e.Slots >= e.BaselineSlots {
		fmt.Fprintf(w, "zone %s: back at its baseline of %s; its drain entry goes at the next pass\n", zone, slotCount(e.BaselineSlots))
		return
	}
	fmt.Fprintf(w, "zone %s: %s\n", zone, drainCell(e, now))
	fmt.Fprintf(w, "  pace: %d%% of the zone's slots in steps of %d%% every %s\n", e.Percent, e.StepPercent, orUnknown(e.StepInterval))
	fmt.Fprintf(w, "  reason: %s (by %s, %s)\n", orUnknown(e.Reason), orUnknown(e.By), whenText(e.At, now))
	if e.Warning != "" {
		fmt.Fprintf(w, "  warning: %s\n", e.Warning)
	}
}

// printReplace writes the outcome of a replace.
func printReplace(w io.Writer, r mcribapi.ReplaceAnswer) {
	// The answer says only warm or not: a cold move is either an old
	// holder that did not answer or warm moves turned off.
	how := "cold (" + orUnknown(r.From) + " did not answer, or --warm-for is 0s): the slot starts empty"
	if r.Warm {
		how = "warm: " + orUnknown(r.From) + " stays the slot's warm source until --warm-for passes"
	}
	fmt.Fprintf(w, "slot %d: from %s to %s (%s)\n", r.Slot, orUnknown(r.From), orUnknown(r.To), how)
	if !r.ServesAt.IsZero() {
		// The move is announced: the new node is flushed and serves the
		// slot from serves_at (docs/api.md, "Announce, then serve").
		fmt.Fprintf(w, "announced: %s serves slot %d from %s\n", orUnknown(r.To), r.Slot, r.ServesAt.UTC().Format(time.RFC3339))
	}
	if r.Warning != "" {
		fmt.Fprintf(w, "warning: %s\n", r.Warning)
	}
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
