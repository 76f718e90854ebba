package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/mcrib/mcrib/controlloop"
)

// The readable forms of section 7's documents: the zones of the status
// document, a zone's drain entry and the outcome of a replace.

// printZones writes one line per zone, then the zone alert when there is
// one.
func printZones(w io.Writer, zones []controlloop.ZoneStatus, alert string) {
	if len(zones) == 0 {
		fmt.Fprintln(w, "no zones")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ZONE\tNODES\tSLOTS\tUNREACHABLE\tABSENT\tHIT RATE\tDRAIN")
		for _, z := range zones {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\n", zoneName(z.Zone), z.Nodes, z.Slots, z.Unreachable, z.Absent,
				knownHitRate(true, z.HitRate), drainCell(z.Drain))
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
func drainCell(e *controlloop.DrainEntry) string {
	if e == nil {
		return "-"
	}
	s := fmt.Sprintf("%s: %d of %d slots, target %d", orDash(e.State), e.Slots, e.BaselineSlots, e.TargetSlots)
	if e.Blocked != "" {
		s += "; blocked: " + e.Blocked
	}
	return s
}

// printDrainEntry writes a zone's drain entry as PUT or DELETE
// /v1/drain/{zone} answered it; nil means the zone has no entry any more.
func printDrainEntry(w io.Writer, zone string, e *controlloop.DrainEntry) {
	if e == nil {
		fmt.Fprintf(w, "zone %s: not drained (it holds its slots again)\n", zone)
		return
	}
	if e.Returning && e.Slots >= e.BaselineSlots {
		fmt.Fprintf(w, "zone %s: back at its baseline of %d slots; its drain entry goes at the next pass\n", zone, e.BaselineSlots)
		return
	}
	fmt.Fprintf(w, "zone %s: %s\n", zone, drainCell(e))
	fmt.Fprintf(w, "  pace: %d%% of the zone's slots in steps of %d%% every %s\n", e.Percent, e.StepPercent, orDash(e.StepInterval))
	fmt.Fprintf(w, "  reason: %s (by %s at %s)\n", orDash(e.Reason), orDash(e.By), timeOr(e.At, "-"))
	if e.Warning != "" {
		fmt.Fprintf(w, "  warning: %s\n", e.Warning)
	}
}

// printReplace writes the outcome of a replace.
func printReplace(w io.Writer, r controlloop.ReplaceResult) {
	// The answer says only warm or not: a cold move is either an old
	// holder that did not answer or warm moves turned off.
	how := "cold (" + orDash(r.From) + " did not answer, or --warm-for is 0s): the slot starts empty"
	if r.Warm {
		how = "warm: " + orDash(r.From) + " stays the slot's warm source until --warm-for passes"
	}
	fmt.Fprintf(w, "slot %d: from %s to %s (%s)\n", r.Slot, orDash(r.From), orDash(r.To), how)
	if r.Warning != "" {
		fmt.Fprintf(w, "warning: %s\n", r.Warning)
	}
}

// nodeStateCell is a node's state with its zone's drain and the slot it
// warms, when there are.
func nodeStateCell(n controlloop.NodeStatus) string {
	s := orDash(n.State)
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
func printStatusZones(w io.Writer, s statusDocument) {
	if len(s.Zones) == 0 {
		return
	}
	fmt.Fprintln(w, "\nzones:")
	printZones(w, s.Zones, "")
}
