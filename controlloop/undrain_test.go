package controlloop

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/eventlog"
	"github.com/mcrib/mcrib/mcribapi"
)

// TestUndrainUndoesTheDrain is the 3 a.m. undrain: zone b's one node holds
// slot 1 and is drained warm; undrained at once, its node is still slot
// 1's warm source, so the return waits and says for whom and until when
// (it does not take another zone's slot meanwhile); once the warming ends
// it gives back slot 1, the slot the drain moved, warm from its current
// holder, not the highest slot of the zone holding the most (zone a's
// slot 3), and the zone's entry goes.
func TestUndrainUndoesTheDrain(t *testing.T) {
	w := leadingWorld(t, []string{"a1", "b1", "c1", "a3"}, "a2", "c2")
	w.loop.opts.WarmFor = 2 * time.Minute
	doc := w.drain("az-b", 100, 100, time.Second)
	if e := doc.Zones["az-b"]; e.SlotsToMove != 1 || e.Slots != 1 || e.BaselineSlots != 1 || e.TargetSlots != 0 {
		t.Fatalf("the drain's answer %+v, want 1 slot to move of a baseline of 1", e)
	}
	w.pass(mcribapi.OutcomeOK)
	w.serve()
	m, _ := w.store.stored()
	if m.Slot(1).ID != "c2" || m.Warming(1) == nil || m.Warming(1).NodeID != "b1" {
		t.Fatalf("after the drain step: %v, slot 1 warming %+v; want c2 warming from b1", slotIDs(m), m.Warming(1))
	}
	// b1 is a warm source until the warming's object is removed, 12s
	// after its until.
	until := m.Warming(1).Until.Add(cachenodes.WarmWriteGrace)
	if e := w.entry("az-b"); !slices.Equal(e.MovedSlots, []int{1}) || e.SlotsToMove != 0 || e.State != mcribapi.DrainDrained {
		t.Fatalf("the drained entry %+v, want moved_slots [1], nothing to move", e)
	}
	if n := w.node("b1"); n.State != mcribapi.NodeWarming || !n.Drained || n.Warming == nil || *n.Warming != 1 {
		t.Fatalf("b1 in the status %+v, want a drained warm source of slot 1", n)
	}

	w.clk.Advance(time.Second) // the step interval
	w.probe()
	doc, err := w.loop.Undrain(context.Background(), "az-b")
	if err != nil {
		t.Fatal(err)
	}
	if e := doc.Zones["az-b"]; e.SlotsToMove != 1 || e.State != mcribapi.DrainReturning {
		t.Fatalf("the undrain's answer %+v, want 1 slot to move back", e)
	}
	w.pass(mcribapi.OutcomeOK)
	want := "b1 is a warm source until " + until.UTC().Format("15:04:05 UTC") + `; zone "az-b" takes its slots back when the warming ends`
	if e := w.entry("az-b"); e.Blocked != want {
		t.Fatalf("blocked %q, want %q", e.Blocked, want)
	}
	for w.clk.Now().Before(until) {
		if got := w.zoneHeld("az-b"); got != 0 {
			t.Fatalf("zone b holds %d slots while b1 still warms: the return took another slot", got)
		}
		w.clk.Advance(time.Second)
		w.probe()
		w.pass(mcribapi.OutcomeOK)
	}
	for range 3 + int(cachenodes.AnnounceLead/time.Second) {
		w.clk.Advance(time.Second)
		w.probe()
		w.pass(mcribapi.OutcomeOK)
	}
	m, _ = w.store.stored()
	if got := slotIDs(m); !slices.Equal(got, []string{"a1", "b1", "c1", "a3"}) {
		t.Fatalf("after the return: %v, want slot 1 back on b1 and a3 keeping slot 3", got)
	}
	if ws := m.Warming(1); ws == nil || ws.NodeID != "c2" {
		t.Errorf("slot 1 came back cold (warming %+v), want warm from c2", ws)
	}
	if len(w.loop.Drains().Zones) != 0 {
		t.Errorf("zone b still drained after its slot came back: %+v", w.loop.Drains().Zones["az-b"])
	}
}

// A moved slot that still warms on its new holder is waited for too, with
// blocked naming it: the return takes no other slot meanwhile.
func TestUndrainWaitsForAMovedSlotThatWarms(t *testing.T) {
	w := leadingWorld(t, []string{"a1", "b1", "c1", "a3"}, "a2", "b2", "c2")
	w.loop.opts.WarmFor = time.Minute
	w.drain("az-b", 100, 100, time.Second)
	w.pass(mcribapi.OutcomeOK)
	w.serve()
	m, _ := w.store.stored()
	ws := m.Warming(1)
	if ws == nil || m.Slot(1).ID != "c2" {
		t.Fatalf("after the drain: %v warming %+v", slotIDs(m), ws)
	}
	w.clk.Advance(time.Second)
	w.probe()
	w.loop.Undrain(context.Background(), "az-b")
	w.pass(mcribapi.OutcomeOK)
	want := `slot 1, moved off zone "az-b", still warms from b1 until ` + ws.WritesUntil().UTC().Format("15:04:05 UTC") + "; it comes back when the warming ends"
	if e := w.entry("az-b"); e.Blocked != want || w.zoneHeld("az-b") != 0 {
		t.Fatalf("blocked %q (zone b holds %d), want %q", e.Blocked, w.zoneHeld("az-b"), want)
	}
}

// TestLastSpareIsSaid: a drain that will take the pool's last ready spare
// says so in its answer; the step that takes it is told in the events;
// a replace that takes the last one says so in its answer; a replace that
// finds none names what would help.
func TestLastSpareIsSaid(t *testing.T) {
	w := leadingWorld(t, []string{"a1", "b1", "c1"}, "c2")
	log := eventlog.NewLog(eventlog.Options{Clock: w.clk})
	w.loop.opts.Events = eventlog.Recorder{Log: log}
	doc := w.drain("az-b", 100, 100, time.Second)
	e := doc.Zones["az-b"]
	if e.SparesLeft != 1 || !strings.HasPrefix(e.Warning, "the drain takes the pool's last ready spare: 1 slot to move onto the 1 ready spare outside the drained zones") ||
		!strings.Contains(e.Warning, "add a memcached to the service, or undrain a zone") {
		t.Fatalf("the drain's answer: spares left %d, warning %q", e.SparesLeft, e.Warning)
	}
	w.pass(mcribapi.OutcomeOK)
	var last []string
	for _, ev := range log.Since(0) {
		if ev.Kind == mcribapi.EventLastSpare {
			last = append(last, ev.Node+": "+ev.Reason)
		}
	}
	if len(last) != 1 || !strings.HasPrefix(last[0], "c2: c2 took slot 1: the pool has no ready spare left") {
		t.Fatalf("last spare events %q, want one for c2 taking slot 1", last)
	}
	w.serve()
	if e := w.entry("az-b"); e.SparesLeft != 0 || !strings.HasPrefix(e.Warning, "the pool has no ready spare left") {
		t.Errorf("the drained entry: spares left %d, warning %q", e.SparesLeft, e.Warning)
	}
	// Undrained, the zone's return frees a spare: its entry says so, and
	// does not advise undraining a zone.
	if _, err := w.loop.Undrain(context.Background(), "az-b"); err != nil {
		t.Fatal(err)
	}
	if e := w.entry("az-b"); e.State != mcribapi.DrainReturning || !strings.HasPrefix(e.Warning, "the pool has no ready spare outside the drained zones until the return frees one") ||
		strings.Contains(e.Warning, "undrain") {
		t.Errorf("the returning entry: state %s, warning %q", e.State, e.Warning)
	}
	_, err := w.loop.Replace(context.Background(), "c1", "retire it", "ops")
	if !errors.Is(err, mcribapi.ErrRefused) || !strings.Contains(err.Error(), "no spare can take slot 2 of node c1: every node holds a slot or is in a drained zone (1 node)") ||
		!strings.Contains(err.Error(), "add a memcached to the service, or undrain a zone") {
		t.Fatalf("a replace without a spare: %v; want a refusal that names what would help", err)
	}
}

// A replace that takes the last ready spare says so.
func TestReplaceTakingTheLastSpareSaysSo(t *testing.T) {
	w := leadingWorld(t, []string{"a1", "b1", "c1"}, "a2")
	w.loop.opts.WarmFor = time.Minute // a1 warms a2: no spare either
	log := eventlog.NewLog(eventlog.Options{Clock: w.clk})
	w.loop.opts.Events = eventlog.Recorder{Log: log}
	res, err := w.loop.Replace(context.Background(), "a1", "retire it", "ops")
	if err != nil || res.SparesLeft != 0 || !strings.HasPrefix(res.Warning, "it took the pool's last ready spare: the pool has no ready spare left") ||
		!strings.HasSuffix(res.Warning, "(add a memcached to the service)") {
		t.Fatalf("replace: %+v, %v", res, err)
	}
	found := false
	for _, ev := range log.Since(0) {
		found = found || ev.Kind == mcribapi.EventLastSpare
	}
	if !found {
		t.Errorf("no %q event after the replace took the last spare", mcribapi.EventLastSpare)
	}
}

// TestUndrainWithoutASpareSaysWhatWouldHelp: zone b's only node stopped
// answering after its drain; the return waits, and blocked says why and
// what would let it go on.
func TestUndrainWithoutASpareSaysWhatWouldHelp(t *testing.T) {
	w := leadingWorld(t, []string{"a1", "b1", "c1", "a3"}, "a2", "c2")
	w.loop.opts.WarmFor = 0
	w.drain("az-b", 100, 100, time.Second)
	w.pass(mcribapi.OutcomeOK)
	w.serve()
	if got := w.zoneHeld("az-b"); got != 0 {
		t.Fatalf("zone b holds %d slots after its drain", got)
	}
	w.away("b1")
	w.pass(mcribapi.OutcomeOK)
	if _, err := w.loop.Undrain(context.Background(), "az-b"); err != nil {
		t.Fatal(err)
	}
	w.pass(mcribapi.OutcomeOK)
	e := w.entry("az-b")
	if e == nil || e.State != mcribapi.DrainReturning || !strings.HasPrefix(e.Blocked, `no spare in zone "az-b" to give its slots back to`) ||
		!strings.Contains(e.Blocked, "when one of them answers again") || !strings.Contains(e.Blocked, "a memcached is added to the zone") {
		t.Fatalf("the returning entry %+v: want blocked saying why and what would help", e)
	}
	if got := w.zoneHeld("az-b"); got != 0 {
		t.Errorf("zone b holds %d slots without a node that answers", got)
	}
}
