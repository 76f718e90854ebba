package main

import (
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/controlloop"
)

// TestDrainProgress checks that a drain and a return say what is left to
// do, and that a finished drain reads as done, not as nothing drained.
func TestDrainProgress(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    controlloop.DrainEntry
		want string
	}{
		{"one slot to move", controlloop.DrainEntry{State: "draining", BaselineSlots: 1, Slots: 1, TargetSlots: 0},
			"draining: 1 slot to move, 0 left of a baseline of 1"},
		{"that slot moved", controlloop.DrainEntry{State: "drained", BaselineSlots: 1, Slots: 0, TargetSlots: 0},
			"drained: 1 slot moved, 0 left of a baseline of 1"},
		{"half of a zone, under way", controlloop.DrainEntry{State: "draining", BaselineSlots: 4, Slots: 3, TargetSlots: 2},
			"draining: 1 slot to move, 2 left of a baseline of 4"},
		{"half of a zone, done", controlloop.DrainEntry{State: "drained", BaselineSlots: 4, Slots: 2, TargetSlots: 2},
			"drained: 2 slots moved, 2 left of a baseline of 4"},
		{"returning", controlloop.DrainEntry{State: "returning", Returning: true, BaselineSlots: 5, Slots: 1, TargetSlots: 5},
			"returning: 4 slots to give back, 1 held of a baseline of 5"},
		{"returning, target from the baseline", controlloop.DrainEntry{State: "returning", Returning: true, BaselineSlots: 2, Slots: 1},
			"returning: 1 slot to give back, 1 held of a baseline of 2"},
		{"returned", controlloop.DrainEntry{State: "returning", Returning: true, BaselineSlots: 2, Slots: 2, TargetSlots: 2},
			"returning: back at its baseline of 2 slots"},
		{"paused", controlloop.DrainEntry{State: "paused", BaselineSlots: 5, Slots: 3, TargetSlots: 0},
			"paused (an operator freeze holds it): 3 slots to move, 0 left of a baseline of 5"},
		{"blocked", controlloop.DrainEntry{State: "draining", BaselineSlots: 2, Slots: 2, Blocked: "no spare outside the drained zones"},
			"draining: 2 slots to move, 0 left of a baseline of 2; blocked: no spare outside the drained zones"},
	} {
		if got := drainCell(&tc.e, testNow); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// A step waits for the step interval: the cell says when the next one
	// is due, until it is.
	last := testNow.Add(-2 * time.Second)
	e := controlloop.DrainEntry{State: "returning", Returning: true, BaselineSlots: 1, Slots: 0, SlotsToMove: 1, StepInterval: "30s", LastStepAt: &last}
	if got, want := drainCell(&e, testNow), "returning: 1 slot to give back, 0 held of a baseline of 1; next step in 28 s"; got != want {
		t.Errorf("a return waiting for its step interval: %q, want %q", got, want)
	}
	if got := drainCell(&e, last.Add(30*time.Second)); strings.Contains(got, "next step") {
		t.Errorf("a step due now still said to come: %q", got)
	}
	e.Blocked = "b1 is a warm source until 13:02:00 UTC"
	if got := drainCell(&e, testNow); strings.Contains(got, "next step") || !strings.HasSuffix(got, "; blocked: "+e.Blocked) {
		t.Errorf("a blocked return: %q, want what blocks it, not the next step", got)
	}

	var b strings.Builder
	at := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	printDrainEntry(&b, "b", &controlloop.DrainEntry{State: "drained", Percent: 100, StepPercent: 10, StepInterval: "30s",
		Reason: "link flapping", By: "alice@laptop", At: at, BaselineSlots: 1}, at.Add(3*time.Minute))
	if want := "zone b: drained: 1 slot moved, 0 left of a baseline of 1\n" +
		"  pace: 100% of the zone's slots in steps of 10% every 30s\n" +
		"  reason: link flapping (by alice@laptop, 3 min ago, at 2026-11-29T13:00:00Z)\n"; b.String() != want {
		t.Errorf("printDrainEntry:\n%s\nwant\n%s", b.String(), want)
	}
}
