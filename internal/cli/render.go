package cli

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/ratelimit"
)

// The renderers below write the readable forms of the API's documents. They
// are pure: a document (and now, for "2 s ago") in, text out. A value the
// server did not send, or sent as null, prints as "unknown" (unknownText),
// in a line and in a table alike; "-" stands for none (no slot, no zone,
// not drained), never for unknown. nil sent means all fields were sent.

// printStatus writes the readable form of the status document; times are
// told as ages from now.
func printStatus(w io.Writer, s mcribapi.Status, sent sentFields, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	line("pool", orUnknown(s.Pool))
	switch {
	case s.Leader && s.LeaderID != "":
		line("leader", "yes ("+s.LeaderID+")")
	case s.Leader:
		line("leader", "yes")
	case s.LeaderID != "":
		line("leader", "no (leader is "+s.LeaderID+")")
	default:
		line("leader", "no (no leader known)")
	}
	switch {
	case !s.Frozen:
		line("frozen", "no")
	case s.Freeze == nil:
		line("frozen", "yes")
	default:
		line("frozen", fmt.Sprintf("yes: %q by %s, %s", s.Freeze.Reason, orUnknown(s.Freeze.By), whenText(s.Freeze.At, now)))
	}
	if s.AutoFrozen {
		line("auto-frozen", "yes: "+orUnknown(s.AutoFreezeReason))
	} else {
		line("auto-frozen", "no")
	}
	if s.DiscoveryFault {
		line("discovery fault", "yes: "+orUnknown(s.DiscoveryFaultReason))
	}
	line("generation", known(sent.has("generation"), strconv.FormatUint(s.Generation, 10)))
	last := "never"
	if s.LastReconcileAt != nil && !s.LastReconcileAt.IsZero() {
		last = whenText(*s.LastReconcileAt, now)
	}
	line("last reconcile", last)
	line("consul reachable", known(sent.has("consul_reachable"), yesNo(s.ConsulReachable)))
	line("hit rate", knownHitRate(sent.has("hit_rate"), s.HitRate))
	if sent.has("slots_unserved") {
		line("slots unserved", unservedText(s.SlotsUnserved, s.NumSlots))
	}
	if sent.has("boot_limit") {
		b, bs := s.BootLimit, sent.under("boot_limit")
		line("boot limit", fmt.Sprintf("%s, %s boots/s, burst %s", known(bs.has("mode"), orUnknown(b.Mode)),
			known(bs.has("limit"), formatNumber(b.Limit)), known(bs.has("burst"), strconv.Itoa(b.Burst))))
	} else {
		line("boot limit", unknownText)
	}
	for _, f := range statusFacts(s, sent) {
		line(f[0], f[1])
	}
	tw.Flush()

	fmt.Fprintln(w)
	if len(s.Nodes) == 0 {
		fmt.Fprintln(w, "no nodes")
		printStatusZones(w, s, now)
		return
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tADDR\tAZ\tSLOT\tCONSUL\tREACHABLE\tSTATE\tFLAPS")
	for i, n := range s.Nodes {
		ns := sent.under("nodes." + strconv.Itoa(i))
		slot := "-"
		if n.Slot != nil && *n.Slot >= 0 {
			slot = strconv.Itoa(*n.Slot)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			orUnknown(n.ID), known(ns.has("addr"), orDash(n.Addr)), orDash(n.AZ), slot, known(ns.has("consul"), orUnknown(n.Consul)),
			known(ns.has("reachable"), yesNo(n.Reachable)), nodeStateCell(n), known(ns.has("flaps"), strconv.Itoa(n.Flaps)))
	}
	tw.Flush()
	printNodeNotes(w, s, now)
	printStatusZones(w, s, now)
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

// printRateLimit writes the readable form of the boot-limit document.
func printRateLimit(w io.Writer, b ratelimit.Document, sent sentFields) {
	fmt.Fprintf(w, "mode %s, limit %s boots/s, burst %s, hit rate %s\n", known(sent.has("mode"), orUnknown(b.Mode)),
		known(sent.has("limit"), formatNumber(b.Limit)), known(sent.has("burst"), strconv.Itoa(b.Burst)),
		knownHitRate(sent.has("hit_rate"), b.HitRate))
	reason := b.Reason
	if reason == "" {
		reason = "(none)"
	}
	fmt.Fprintf(w, "reason: %s\n", reason)
}

// printFrozen writes the outcome of a freeze: its reason and who froze.
func printFrozen(w io.Writer, doc mcribapi.FreezeDoc) {
	if doc.By == "" {
		fmt.Fprintf(w, "frozen: %s\n", doc.Reason)
		return
	}
	fmt.Fprintf(w, "frozen: %s (by %s)\n", doc.Reason, doc.By)
}

// unknownText is how every renderer says that a value is not known: not
// sent, sent as null (a hit rate before any traffic), or empty where it
// cannot be.
const unknownText = "unknown"

// known returns s, or unknownText when the field was not sent.
func known(sent bool, s string) string {
	if !sent {
		return unknownText
	}
	return s
}

// orUnknown returns s, or unknownText when it is empty: for a value that
// is never empty when known (a node ID, who froze).
func orUnknown[T ~string](s T) string {
	if s == "" {
		return unknownText
	}
	return string(s)
}

// orDash returns s, or "-" when it is empty: for a value whose absence
// means none (no zone, no address of a vacant slot).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func formatHitRate(h float64) string { return strconv.FormatFloat(h, 'f', 2, 64) }

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// timeOr prints a time in RFC 3339 to the second, and none for the zero
// time.
func timeOr(t time.Time, none string) string {
	if t.IsZero() {
		return none
	}
	return t.UTC().Format(time.RFC3339)
}
