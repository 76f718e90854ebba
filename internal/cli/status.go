package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// The status command (docs/cli.md, "Commands").

// Status prints GET /v1/status: the pool, then one line per node and what
// each waits for, and the zones.
func (c *Client) Status(ctx context.Context) error {
	a, err := c.api.Status(ctx)
	return show(c, a, err, func(a Answer[mcribapi.Status]) { printStatus(c.stdout, a.Doc, a.sent, c.now()) })
}

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
