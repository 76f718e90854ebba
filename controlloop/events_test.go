package controlloop

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/eventlog"
	"github.com/mcrib/mcrib/mcribapi"
)

// eventsOf returns "kind node" for each event of log, oldest first.
func eventsOf(log *eventlog.Log) []string {
	var out []string
	for _, e := range log.Since(0) {
		out = append(out, string(e.Kind)+" "+e.Node)
	}
	return out
}

func TestEventsOfAReplacementAndAnAgentRestart(t *testing.T) {
	w := newWorld(t, 2)
	log := eventlog.NewLog(eventlog.Options{Clock: w.clk})
	hist := eventlog.NewHistory(eventlog.HistoryOptions{Interval: time.Second, Clock: w.clk})
	w.loop.opts.Events = eventlog.Recorder{Log: log, History: hist}
	ctx := context.Background()
	pass := func(what string) {
		t.Helper()
		if res, err := w.loop.Reconcile(ctx); res.Outcome != mcribapi.OutcomeOK {
			t.Fatalf("%s: outcome %q (%v)", what, res.Outcome, err)
		}
	}

	w.seed(3, []string{"a", "b"}, []string{"c"})
	w.lead.win("s1")
	w.answer("a", "b", "c")
	w.probe()
	pass("steady")
	if got := eventsOf(log); len(got) != 0 {
		t.Fatalf("events of a steady pool: %q, want none", got)
	}

	// An agent restart: a leaves Consul and comes back, answering all along.
	w.answer("b", "c")
	w.probe()
	pass("a absent")
	w.clk.Advance(5 * time.Second)
	w.answer("a", "b", "c")
	w.probe()
	pass("a back")
	want := []string{"hold started a", "hold cleared a"}
	if got := eventsOf(log); !slices.Equal(got, want) {
		t.Fatalf("events of an agent restart: %q, want %q (a hold, no flush)", got, want)
	}

	// b dies for real: its hold passes, c takes its slot, flushed first.
	takeOut("b")(w)
	pass("b replaced")
	w.serve()
	got := eventsOf(log)[2:]
	for _, e := range []string{"node unreachable b", "hold started b", "flush c", "slot move announced c", "replacement b", "placement c"} {
		if !slices.Contains(got, e) {
			t.Errorf("events %q lack %q", got, e)
		}
	}
	for _, e := range log.Since(0) {
		if e.Kind == mcribapi.EventReplacement && (e.Reason == "" || e.Slot == nil || *e.Slot != 1 || e.Who != "mcrib") {
			t.Errorf("replacement event %+v: want a reason, slot 1, who mcrib", e)
		}
	}
	hist.Sample(eventlog.Reading{})
	if s := hist.Series(); s.Replacements[0] != 1 || s.Flushes[0] != 1 {
		t.Errorf("history: %d replacements, %d flushes; want 1 and 1", s.Replacements[0], s.Flushes[0])
	}
}

func TestEventsOfAnObserverFault(t *testing.T) {
	w := leadingWorld(t, []string{"a", "b", "c", "d"}, "e")
	log := eventlog.NewLog(eventlog.Options{Clock: w.clk})
	w.loop.opts.Events = eventlog.Recorder{Log: log}
	w.away("a", "b", "c")
	w.pass(mcribapi.OutcomeOK)
	w.back(20*time.Second, "a", "b", "c")
	w.pass(mcribapi.OutcomeOK)
	w.clk.Advance(3 * time.Second)
	w.probe()
	w.pass(mcribapi.OutcomeOK)

	var kinds []mcribapi.EventKind
	for _, e := range log.Since(0) {
		if e.Node == "" {
			kinds = append(kinds, e.Kind)
			if e.Reason == "" {
				t.Errorf("%s without a reason", e.Kind)
			}
		}
		if e.Kind == mcribapi.EventFlush || e.Kind == mcribapi.EventReplacement {
			t.Errorf("an observer fault led to %s of %s", e.Kind, e.Node)
		}
	}
	// The end of the fault and the lifting of the freeze come in one pass.
	// Zones az-a, az-b and az-c lose their one holder each: one dead
	// holder is no zone alert.
	want := []mcribapi.EventKind{mcribapi.EventObserverFault, mcribapi.EventAutoFreeze, mcribapi.EventAutoFreezeLifted, mcribapi.EventObserverFaultOver}
	if !slices.Equal(kinds, want) {
		t.Errorf("pool-wide events %q, want %q", kinds, want)
	}
}

// Each zone that newly alerts gets an event of its own, naming it and the
// command that would drain it, even while another zone alerts already.
func TestZoneAlertEventPerZone(t *testing.T) {
	w := threeZones(t)
	log := eventlog.NewLog(eventlog.Options{Clock: w.clk})
	w.loop.opts.Events = eventlog.Recorder{Log: log}
	alerts := func() []string {
		var out []string
		for _, e := range log.Since(0) {
			if e.Kind == mcribapi.EventZoneAlert {
				out = append(out, e.Reason)
			}
		}
		return out
	}
	w.away("b1", "b2")
	w.pass(mcribapi.OutcomeOK)
	if got := alerts(); len(got) != 1 || !strings.Contains(got[0], "zone az-b") || !strings.Contains(got[0], "mcrib drain az-b") {
		t.Fatalf("zone alerts after zone b failed: %q", got)
	}
	w.pass(mcribapi.OutcomeOK)
	w.away("c1", "c2")
	w.pass(mcribapi.OutcomeOK)
	got := alerts()
	if len(got) != 2 || !strings.Contains(got[1], "zone az-c") || !strings.Contains(got[1], "mcrib drain az-c") || strings.Contains(got[1], "az-b") {
		t.Fatalf("zone alerts after zone c failed too: %q, want a second one naming az-c alone", got)
	}
	if st := w.loop.Status(); !strings.Contains(st.ZoneAlert, "mcrib drain az-b") || !strings.Contains(st.ZoneAlert, "mcrib drain az-c") {
		t.Errorf("status zone alert %q, want both zones", st.ZoneAlert)
	}
}

// statusSink is an EventSink that reads the loop's status on every event:
// were an event told with the loop's mutex held, it would deadlock.
type statusSink struct {
	loop  *Loop
	mu    sync.Mutex
	kinds []mcribapi.EventKind
}

func (s *statusSink) Record(e mcribapi.Event) {
	s.loop.Status()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kinds = append(s.kinds, e.Kind)
}

// TestEventsAreToldWithoutTheLock: the events of a zone alert, an
// automatic freeze and a replacement (decided under the loop's mutex), of
// the node transitions (observed under it) and of the flushes are all told
// after it is let go, so the sink may read the loop.
func TestEventsAreToldWithoutTheLock(t *testing.T) {
	w := threeZones(t)
	sink := &statusSink{loop: w.loop}
	w.loop.opts.Events = sink
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.away("b1", "b2") // two of six holders: the zone alerts, nothing freezes
		w.pass(mcribapi.OutcomeOK)
		takeOut("b1")(w) // gone from Consul too, past the hold: replaced
		w.pass(mcribapi.OutcomeOK)
		w.serve()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a pass did not end: an event was told with the loop's mutex held")
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for _, kind := range []mcribapi.EventKind{mcribapi.EventNodeUnreachable, mcribapi.EventZoneAlert, mcribapi.EventReplacement, mcribapi.EventFlush, mcribapi.EventPlacement} {
		if !slices.Contains(sink.kinds, kind) {
			t.Errorf("events %q lack %q", sink.kinds, kind)
		}
	}
}
