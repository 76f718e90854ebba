package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// The slots command (docs/cli.md, "Commands").

// Slots prints GET /v1/slotmap.
func (c *Client) Slots(ctx context.Context) error {
	a, err := c.api.SlotMap(ctx)
	return show(c, a, err, func(a Answer[*cachenodes.SlotMap]) { printSlots(c.stdout, a.Doc, c.now()) })
}

// printSlots writes the readable form of the slot map document.
func printSlots(w io.Writer, m *cachenodes.SlotMap, now time.Time) {
	updated := "never"
	if !m.UpdatedAt().IsZero() {
		updated = whenText(m.UpdatedAt(), now)
	}
	resized := ""
	if rf := m.ResizedFrom(); rf > 0 {
		resized = fmt.Sprintf(" (resized from %d, %s left)", rf, countOfTwins(m.NumTwins()))
	}
	fmt.Fprintf(w, "pool %s  generation %d  slots %d%s  updated %s\n\n",
		orUnknown(m.Pool()), m.Generation(), m.NumSlots(), resized, updated)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	warming := m.AnyWarming()
	if warming {
		fmt.Fprintln(tw, "SLOT\tNODE\tADDR\tAZ\tWARMING")
	} else {
		fmt.Fprintln(tw, "SLOT\tNODE\tADDR\tAZ")
	}
	for slot, n := range m.Slots() {
		row := fmt.Sprintf("%d\t%s\t%s\t%s", slot, n.ID, orDash(n.Addr), orDash(n.AZ))
		if s := m.TwinOf(slot); s >= 0 {
			// A twin names slot s's node until it splits.
			row = fmt.Sprintf("%d\t%s (twin of %d)\t%s\t%s", slot, orDash(n.ID), s, orDash(n.Addr), orDash(n.AZ))
		} else if n.IsZero() {
			row = fmt.Sprintf("%d\t(vacant)\t-\t-", slot)
		}
		if warming {
			row += "\t" + warmingCell(m.Warming(slot), now)
		}
		if in := m.Incoming(slot); in != nil && m.TwinOf(slot) < 0 {
			// Announced: the node serves the slot from serves_at.
			row += "\tincoming " + orUnknown(in.NodeID) + " from " + untilText(in.ServesAt, now)
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()

	fmt.Fprintln(w)
	spares := m.Spares()
	if len(spares) == 0 {
		fmt.Fprintln(w, "SPARES: none")
		return
	}
	fmt.Fprintln(w, "SPARES:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, n := range spares {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", orUnknown(n.ID), orDash(n.Addr), orDash(n.AZ))
	}
	tw.Flush()
}

// warmingCell is a slot's warm source in one cell: "-" when it does not
// warm.
func warmingCell(wm *cachenodes.Warming, now time.Time) string {
	if wm == nil {
		return "-"
	}
	if wm.Ended() {
		return "from " + orUnknown(wm.NodeID) + " ended " + untilText(wm.EndedAt, now) + ", written until " + untilText(wm.WritesUntil(), now)
	}
	return "from " + orUnknown(wm.NodeID) + " until " + untilText(wm.Until, now)
}
