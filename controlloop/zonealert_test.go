package controlloop

import (
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/eventlog"
)

// eventsOfKind returns the reasons of log's events of kind, oldest first.
func eventsOfKind(log *eventlog.Log, kind string) []string {
	var out []string
	for _, e := range log.Since(0) {
		if e.Kind == kind {
			out = append(out, e.Reason)
		}
	}
	return out
}

// A lone dead memcached that was its zone's only slot holder is a node to
// replace, not a zone to drain: no zone alert anywhere (status, automatic
// freeze reason, events, zones), and the node shows as held, with the
// instant its slot goes to a spare if it does not return.
func TestZoneAlertNotForALoneDeadHolder(t *testing.T) {
	// Zone b holds one slot of six.
	w := leadingWorld(t, []string{"a1", "b1", "c1", "a2", "c2", "a3"}, "a4", "c3")
	log := eventlog.NewLog(eventlog.Options{Clock: w.clk})
	w.loop.opts.Events = eventlog.Recorder{Log: log}
	w.away("b1")
	w.answer("a1", "c1", "a2", "c2", "a3", "a4", "c3") // its check fails: absent from Consul
	gone := w.clk.Now()
	w.pass(OutcomeOK)
	st := w.loop.Status()
	if st.ZoneAlert != "" || strings.Contains(st.AutoFreezeReason, "mcrib drain") {
		t.Errorf("zone alert %q, automatic freeze reason %q: one dead holder is no zone alert", st.ZoneAlert, st.AutoFreezeReason)
	}
	if got := eventsOfKind(log, KindZoneAlert); len(got) != 0 {
		t.Errorf("zone alert events %q for one dead holder", got)
	}
	for _, z := range st.Zones {
		if z.Alert {
			t.Errorf("zone %q marked alerting: %+v", z.Zone, z)
		}
	}
	n := w.node("b1")
	if n.State != StateHeld || n.HeldUntil == nil || n.HoldRemainingSeconds == nil {
		t.Fatalf("b1 in the status: state %s, held until %v, hold remaining %v; want held with both set", n.State, n.HeldUntil, n.HoldRemainingSeconds)
	}
	// Absent since the answer, unreachable since a probe interval before
	// it: the hold of a minute ends a minute after the later of the two.
	if want := gone.Add(time.Minute); !n.HeldUntil.Equal(want) {
		t.Errorf("held until %v, want %v (the hold of 1m after it went)", n.HeldUntil, want)
	}
	if st.SlotsUnserved != 1 || st.NumSlots != 6 {
		t.Errorf("slots_unserved %d of num_slots %d with one holder unreachable, want 1 of 6", st.SlotsUnserved, st.NumSlots)
	}
	if a := w.node("a1"); a.HeldUntil != nil {
		t.Errorf("a serving node has held_until %v", a.HeldUntil)
	}
}

// Two unreachable holders of a zone of two raise the zone alert, once,
// naming the zone and its lever; when they answer again the alert ends
// with an event that names the zone.
func TestZoneAlertHasItsEnd(t *testing.T) {
	w := threeZones(t)
	log := eventlog.NewLog(eventlog.Options{Clock: w.clk})
	w.loop.opts.Events = eventlog.Recorder{Log: log}
	w.away("b1", "b2")
	w.pass(OutcomeOK)
	st := w.loop.Status()
	if !strings.Contains(st.ZoneAlert, "zone az-b: 2 of 2 slot holders unreachable") || !strings.Contains(st.ZoneAlert, "mcrib drain az-b") {
		t.Fatalf("zone alert %q, want zone az-b's with its lever", st.ZoneAlert)
	}
	if st.SlotsUnserved != 2 {
		t.Errorf("slots_unserved %d with two holders unreachable, want 2", st.SlotsUnserved)
	}
	var alerting []string
	for _, z := range st.Zones {
		if z.Alert {
			alerting = append(alerting, z.Zone)
		}
	}
	if len(alerting) != 1 || alerting[0] != "az-b" {
		t.Errorf("zones marked alerting %q, want az-b alone", alerting)
	}
	if over := eventsOfKind(log, KindZoneAlertOver); len(over) != 0 {
		t.Fatalf("zone alert over while it alerts: %q", over)
	}
	w.back(time.Second, "b1", "b2")
	w.pass(OutcomeOK)
	if st := w.loop.Status(); st.ZoneAlert != "" {
		t.Fatalf("zone alert %q after zone b answers again", st.ZoneAlert)
	}
	over := eventsOfKind(log, KindZoneAlertOver)
	if len(over) != 1 || !strings.Contains(over[0], "zone az-b") || !strings.Contains(over[0], "0 of 2 slot holders unreachable") {
		t.Fatalf("zone alert over events %q, want one naming az-b", over)
	}
	if got := eventsOfKind(log, KindZoneAlert); len(got) != 1 {
		t.Errorf("zone alert events %q, want one", got)
	}
	w.pass(OutcomeOK)
	if over := eventsOfKind(log, KindZoneAlertOver); len(over) != 1 {
		t.Errorf("zone alert over told again: %q", over)
	}
}

// The rule itself: more than half of the zone's holders, and at least two.
func TestAlerting(t *testing.T) {
	for _, tt := range []struct {
		holders, down int
		want          bool
	}{
		{1, 1, false}, {2, 1, false}, {2, 2, true}, {3, 1, false}, {3, 2, true},
		{4, 2, false}, {4, 3, true}, {5, 3, true}, {0, 0, false},
	} {
		if got := alerting(tt.holders, tt.down); got != tt.want {
			t.Errorf("alerting(%d holders, %d down) = %v, want %v", tt.holders, tt.down, got, tt.want)
		}
	}
}
