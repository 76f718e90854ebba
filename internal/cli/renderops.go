package cli

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// statusFacts returns the lines of the status document an operator under
// fire needs besides the headline: vacant slots, replacements held back
// and the last error. A figure the server did not send is left out (an
// older mcrib); the last error only when there is one.
func statusFacts(s mcribapi.Status, sent sentFields) [][2]string {
	var out [][2]string
	if sent.has("vacant_slots") {
		v := strconv.Itoa(s.VacantSlots)
		if s.VacantSlots > 0 {
			v += " (keys of a vacant slot miss until a spare is placed)"
		}
		out = append(out, [2]string{"vacant slots", v})
	}
	if sent.has("replacements_blocked") {
		v := "no replacement held back"
		if s.ReplacementsBlocked > 0 {
			v = strconv.Itoa(s.ReplacementsBlocked) + " replacements due but held back by a freeze or the replacement ceiling"
		}
		out = append(out, [2]string{"blocked", v})
	}
	out = append(out, resizeFacts(s)...)
	out = append(out, rollFacts(s)...)
	if s.ZoneAlert != "" {
		out = append(out, [2]string{"zone alert", s.ZoneAlert})
	}
	if s.LastError != "" {
		out = append(out, [2]string{"last error", s.LastError})
	}
	return out
}

// printNodeNotes writes, below the node table, what each node is waiting
// for: the hold's countdown, what an owed flush waits for, a holder that
// does not answer while Consul still lists it, a warm source's end, flap
// suppression. Nothing is written when no node waits for anything.
func printNodeNotes(w io.Writer, s mcribapi.Status, now time.Time) {
	var lines []string
	for _, n := range s.Nodes {
		var notes []string
		if held := heldNote(n); held != "" {
			notes = append(notes, held)
		}
		if n.HoldRemainingSeconds != nil && n.HeldUntil == nil {
			d := time.Duration(*n.HoldRemainingSeconds * float64(time.Second)).Round(time.Second)
			if d <= 0 {
				notes = append(notes, "hold over: due for replacement")
			} else {
				notes = append(notes, "hold ends in "+d.String())
			}
		}
		if n.Slot != nil && *n.Slot >= 0 && !n.Reachable && n.State != mcribapi.NodeHeld {
			notes = append(notes, "does not answer, so its slot's keys reach no memcached; it keeps its slot while Consul lists it, and its hold starts when Consul marks it absent")
		}
		if n.FlushPending {
			notes = append(notes, flushNote(s, n))
		}
		if n.Warming != nil {
			notes = append(notes, warmSourceNote(n, now))
		}
		if n.Suppressed {
			notes = append(notes, fmt.Sprintf("suppressed after %d flaps: not placed until it is steady", n.Flaps))
		}
		if len(notes) > 0 {
			lines = append(lines, "  "+orDash(n.ID)+": "+strings.Join(notes, "; "))
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "\nwaiting:")
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// flushNote says what a node's owed flush waits for: the node to answer,
// a freeze to lift, or the leader's next pass.
func flushNote(s mcribapi.Status, n mcribapi.NodeStatus) string {
	switch {
	case !n.Reachable:
		return "flush owed: it may have missed deletes, so it is flushed when it answers again, before it serves"
	case s.Frozen:
		return "flush owed, held back until the freeze lifts (mcrib unfreeze)"
	case s.AutoFrozen:
		return "flush owed, held back while the automatic freeze holds"
	}
	return "flush owed: the leader flushes it at its next pass"
}

// warmSourceNote says until when a node is the warm source of its slot,
// and what it is afterwards.
func warmSourceNote(n mcribapi.NodeStatus, now time.Time) string {
	note := "warm source of slot " + strconv.Itoa(*n.Warming)
	if n.WarmingUntil != nil {
		note += " until " + untilText(*n.WarmingUntil, now)
	}
	if n.Drained {
		return note + ", then a spare of its drained zone"
	}
	return note + ", then a spare"
}

// knownHitRate prints a hit rate: "unknown" when the server did not send
// one (null: no traffic measured yet), never a 0 that reads as a cold
// cache.
func knownHitRate(sent bool, rate *float64) string {
	if !sent || rate == nil {
		return "unknown"
	}
	return formatHitRate(*rate)
}

// unservedText is the slots_unserved line: how many slots' keys reach no
// memcached, out of how many (numSlots 0: not sent, an older mcrib), which
// the hit rate leaves out.
func unservedText(n, numSlots int) string {
	count := strconv.Itoa(n)
	if numSlots > 0 {
		count += " of " + strconv.Itoa(numSlots)
	}
	if n == 0 {
		return count
	}
	if numSlots > 0 {
		count += fmt.Sprintf(" (%s%% of the keys)", formatNumber(math.Round(1000*float64(n)/float64(numSlots))/10))
	}
	return count + ": vacant, or held by an unreachable node; their keys reach no memcached, and the hit rate counts only the gets that reached one"
}

// heldNote is the sentence of a held node: when its slot goes to a spare
// if it does not return, or that it keeps the slot while it answers; ""
// for a node that is not held.
func heldNote(n mcribapi.NodeStatus) string {
	switch {
	case n.State != mcribapi.NodeHeld:
		return ""
	case n.HeldUntil == nil && n.HoldRemainingSeconds == nil && n.Reachable:
		return "held: absent from Consul but it answers, so it keeps its slot and its contents"
	case n.HeldUntil == nil:
		return "" // not counting, or an older mcrib (the hold's countdown says it)
	}
	d := time.Until(*n.HeldUntil).Round(time.Second) // a server that sent held_until sent the countdown too
	if n.HoldRemainingSeconds != nil {
		d = time.Duration(*n.HoldRemainingSeconds * float64(time.Second)).Round(time.Second)
	}
	if d <= 0 {
		return "held: its hold is over, replaced as soon as a spare, the replacement ceiling and the freezes allow"
	}
	return "held, replaced in " + span(d) + " if it does not return"
}
