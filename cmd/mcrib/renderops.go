package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// statusFacts returns the lines of the status document an operator under
// fire needs besides the headline: vacant slots, replacements held back
// and the last error. A figure the server did not send is left out (an
// older mcrib); the last error only when there is one.
func statusFacts(s statusDocument, sent sentFields) [][2]string {
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
	if s.ZoneAlert != "" {
		out = append(out, [2]string{"zone alert", s.ZoneAlert})
	}
	if s.LastError != "" {
		out = append(out, [2]string{"last error", s.LastError})
	}
	return out
}

// printNodeNotes writes, below the node table, what each node is waiting
// for: the hold's countdown, a flush held back, flap suppression. Nothing
// is written when no node waits for anything.
func printNodeNotes(w io.Writer, s statusDocument) {
	var lines []string
	for _, n := range s.Nodes {
		var notes []string
		if n.HoldRemainingSeconds != nil {
			d := time.Duration(*n.HoldRemainingSeconds * float64(time.Second)).Round(time.Second)
			if d <= 0 {
				notes = append(notes, "hold over: due for replacement")
			} else {
				notes = append(notes, "hold ends in "+d.String())
			}
		}
		if n.FlushPending {
			notes = append(notes, "flush pending (held back until the freeze lifts or the leader flushes it)")
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

// knownHitRate prints a hit rate: "unknown" when the server did not send
// one (null: no traffic measured yet), never a 0 that reads as a cold
// cache.
func knownHitRate(sent bool, rate *float64) string {
	if !sent || rate == nil {
		return "unknown"
	}
	return formatHitRate(*rate)
}
