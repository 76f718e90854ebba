package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/ratelimit"
)

// The renderers below write the readable forms of the API's documents. They
// are pure: a document in, text out. A field that sent says the server did
// not send prints as unknown (or "-" in a table); nil sent means all were
// sent.

// printStatus writes the readable form of the status document.
func printStatus(w io.Writer, s statusDocument, sent sentFields) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	line("pool", orDash(s.Pool))
	switch {
	case s.Leader:
		line("leader", "yes ("+orDash(s.LeaderID)+")")
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
		line("frozen", fmt.Sprintf("yes: %q by %s at %s", s.Freeze.Reason, orDash(s.Freeze.By), timeOr(s.Freeze.At, "-")))
	}
	if s.AutoFrozen {
		line("auto-frozen", "yes: "+orDash(s.AutoFreezeReason))
	} else {
		line("auto-frozen", "no")
	}
	if s.DiscoveryFault {
		line("discovery fault", "yes: "+orDash(s.DiscoveryFaultReason))
	}
	line("generation", known(sent.has("generation"), strconv.FormatUint(s.Generation, 10)))
	last := "never"
	if s.LastReconcileAt != nil {
		last = timeOr(*s.LastReconcileAt, "never")
	}
	line("last reconcile", last)
	line("consul reachable", known(sent.has("consul_reachable"), yesNo(s.ConsulReachable)))
	line("hit rate", knownHitRate(sent.has("hit_rate"), s.HitRate))
	if sent.has("slots_unserved") {
		line("slots unserved", unservedText(s.SlotsUnserved))
	}
	if sent.has("boot_limit") {
		b, bs := s.BootLimit, sent.under("boot_limit")
		line("boot limit", fmt.Sprintf("%s, %s boots/s, burst %s", orDash(b.Mode),
			known(bs.has("limit"), formatNumber(b.Limit)), known(bs.has("burst"), strconv.Itoa(b.Burst))))
	} else {
		line("boot limit", "unknown")
	}
	for _, f := range statusFacts(s, sent) {
		line(f[0], f[1])
	}
	tw.Flush()

	fmt.Fprintln(w)
	if len(s.Nodes) == 0 {
		fmt.Fprintln(w, "no nodes")
		printStatusZones(w, s)
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
		flaps := "-"
		if ns.has("flaps") {
			flaps = strconv.Itoa(n.Flaps)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			orDash(n.ID), orDash(n.Addr), orDash(n.AZ), slot, orDash(n.Consul),
			known(ns.has("reachable"), yesNo(n.Reachable)), nodeStateCell(n), flaps)
	}
	tw.Flush()
	printNodeNotes(w, s)
	printStatusZones(w, s)
}

// printSlots writes the readable form of the slot map document.
func printSlots(w io.Writer, m *cachenodes.SlotMap) {
	fmt.Fprintf(w, "pool %s  generation %d  slots %d  updated %s\n\n",
		orDash(m.Pool()), m.Generation(), m.NumSlots(), timeOr(m.UpdatedAt(), "never"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	warming := m.AnyWarming()
	if warming {
		fmt.Fprintln(tw, "SLOT\tNODE\tADDR\tAZ\tWARMING")
	} else {
		fmt.Fprintln(tw, "SLOT\tNODE\tADDR\tAZ")
	}
	for slot, n := range m.Slots() {
		row := fmt.Sprintf("%d\t%s\t%s\t%s", slot, n.ID, orDash(n.Addr), orDash(n.AZ))
		if n.IsZero() {
			row = fmt.Sprintf("%d\t(vacant)\t-\t-", slot)
		}
		if warming {
			row += "\t" + warmingCell(m.Warming(slot))
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
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", orDash(n.ID), orDash(n.Addr), orDash(n.AZ))
	}
	tw.Flush()
}

// warmingCell is a slot's warm source in one cell: "-" when it does not
// warm.
func warmingCell(wm *cachenodes.Warming) string {
	if wm == nil {
		return "-"
	}
	return "from " + orDash(wm.NodeID) + " until " + timeOr(wm.Until, "-")
}

// printRateLimit writes the readable form of the boot-limit document.
func printRateLimit(w io.Writer, b ratelimit.Document, sent sentFields) {
	fmt.Fprintf(w, "mode %s, limit %s boots/s, burst %s, hit rate %s\n", orDash(b.Mode),
		known(sent.has("limit"), formatNumber(b.Limit)), known(sent.has("burst"), strconv.Itoa(b.Burst)),
		knownHitRate(sent.has("hit_rate"), b.HitRate))
	reason := b.Reason
	if reason == "" {
		reason = "(none)"
	}
	fmt.Fprintf(w, "reason: %s\n", reason)
}

// printFrozen writes the outcome of a freeze: its reason.
func printFrozen(w io.Writer, reason string) {
	fmt.Fprintf(w, "frozen: %s\n", reason)
}

// known returns s, or "unknown" when the field was not sent.
func known(sent bool, s string) string {
	if !sent {
		return "unknown"
	}
	return s
}

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

// timeOr prints a time in RFC 3339, as the API sends it, and none for the
// zero time.
func timeOr(t time.Time, none string) string {
	if t.IsZero() {
		return none
	}
	return t.Format(time.RFC3339Nano)
}
