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

// fourSlots is a leading world of 4 slots (a1 b1 c1 a2) with four spares
// (a3 b2 c2 b3), warm moves for warmFor.
func fourSlots(t *testing.T, warmFor time.Duration) *world {
	t.Helper()
	w := leadingWorld(t, []string{"a1", "b1", "c1", "a2"}, "a3", "b2", "c2", "b3")
	w.loop.opts.WarmFor = warmFor
	return w
}

func (w *world) resize(slots, step int, every time.Duration) (mcribapi.ResizeDoc, error) {
	return w.loop.StartResize(context.Background(), mcribapi.Resize{NumSlots: slots, Reason: "grown past its slots", StepPercent: step, StepInterval: every}, "ops")
}

// after advances the clock by d, probes and runs a pass.
func (w *world) after(d time.Duration) {
	w.t.Helper()
	w.clk.Advance(d)
	w.probe()
	w.pass(mcribapi.OutcomeOK)
}

func resizeEvents(log *eventlog.Log, kinds ...mcribapi.EventKind) []mcribapi.Event {
	var out []mcribapi.Event
	for _, e := range log.Since(0) {
		if slices.Contains(kinds, e.Kind) {
			out = append(out, e)
		}
	}
	return out
}

func TestResizeDoublesThenSplitsAtItsPace(t *testing.T) {
	w := fourSlots(t, 30*time.Second)
	log := eventlog.NewLog(eventlog.Options{Clock: w.clk})
	w.loop.opts.Events = eventlog.Recorder{Log: log}
	_, writes := w.store.stored()
	doc, err := w.resize(8, 50, 10*time.Second)
	if err != nil {
		t.Fatalf("StartResize: %v", err)
	}
	e := doc.Resize
	if e == nil || e.From != 4 || e.To != 8 || e.Twins != 4 || e.Split != 0 || e.State != mcribapi.ResizeSplitting || e.By != "ops" || e.StepInterval != "10s" {
		t.Fatalf("resize document %+v", e)
	}
	// The first write: every key stays where it was.
	w.wantStored(t, 4, []string{"a1", "b1", "c1", "a2", "a1", "b1", "c1", "a2"}, writes+1)
	m, _ := w.store.stored()
	if m.ResizedFrom() != 4 || m.NumTwins() != 4 {
		t.Fatalf("stored map: resized_from %d, %d twins", m.ResizedFrom(), m.NumTwins())
	}
	if s := w.store.storedResize(t); s == nil || s.LastStepAt == nil || !s.LastStepAt.Equal(w.clk.Now()) {
		t.Fatalf("stored entry %+v, want last_step_at now", s)
	}
	if n := w.node("a1"); n.Twin == nil || *n.Twin != 4 {
		t.Errorf("node a1 shows twin %v, want 4", n.Twin)
	}
	w.wantFlushes(t, map[string]int{})

	// No split before one step interval.
	w.after(5 * time.Second)
	if m, _ := w.store.stored(); m.NumTwins() != 4 {
		t.Fatalf("a twin split %s after the first write", 5*time.Second)
	}
	// ⌈4 × 50%⌉ = 2 twins a step, the lowest first, by the spread rule
	// (zone b, then c, hold the fewest of the four slots), announced first:
	// the step starts at the announce, and with a step interval under
	// 12s an announced twin counts as split.
	w.after(5 * time.Second)
	m, _ = w.store.stored()
	if m.NumTwins() != 4 || m.Incoming(4) == nil || m.Incoming(4).NodeID != "b2" || m.Incoming(5) == nil || m.Incoming(5).NodeID != "c2" || m.Incoming(0) != nil {
		t.Fatalf("the first split step: slots %q, incoming of 4 %+v, of 5 %+v", slotIDs(m), m.Incoming(4), m.Incoming(5))
	}
	if s := w.store.storedResize(t); s.Twins != 2 || s.Split != 2 || !s.LastStepAt.Equal(w.clk.Now()) {
		t.Errorf("stored entry %+v", s)
	}
	w.wantFlushes(t, map[string]int{"b2": 1, "c2": 1})
	// The next step comes at the interval, before the first serves.
	w.after(10 * time.Second)
	if m, _ := w.store.stored(); m.NumTwins() != 4 || m.Incoming(6) == nil || m.Incoming(7) == nil {
		t.Fatalf("the second split step: %q, %d twins", slotIDs(m), m.NumTwins())
	}
	// Counted as split (the step interval is under 12 s), not done until
	// the twins are gone from the map: an announce may still be dropped.
	if r := w.loop.ResizeDoc().Resize; r == nil || r.State != mcribapi.ResizeSplitting || r.Twins != 0 || r.Split != 4 {
		t.Fatalf("entry after the last split announced: %+v", r)
	}
	// The first step serves, warm from slot s's holder, which keeps slot s.
	w.after(2 * time.Second)
	m, _ = w.store.stored()
	if got := slotIDs(m); !slices.Equal(got, []string{"a1", "b1", "c1", "a2", "b2", "c2", "c1", "a2"}) {
		t.Fatalf("slots after the first split step served: %q", got)
	}
	if ws := m.Warming(4); ws == nil || ws.NodeID != "a1" {
		t.Errorf("split slot 4 warms from %+v, want a1", ws)
	}
	if n := w.node("a1"); n.State != mcribapi.NodeServing || n.Slot == nil || *n.Slot != 0 || n.Twin != nil {
		t.Errorf("node a1 after its twin split: %+v", n)
	}
	w.after(10 * time.Second)
	m, _ = w.store.stored()
	if m.NumTwins() != 0 || m.Generation() != 6 {
		t.Fatalf("after the second step: %q, %d twins, generation %d", slotIDs(m), m.NumTwins(), m.Generation())
	}
	if r := w.loop.ResizeDoc().Resize; r == nil || r.State != mcribapi.ResizeDone || r.Twins != 0 || r.Split != 4 {
		t.Fatalf("entry after the last split: %+v", r)
	}
	// A done entry goes when the last split's warming object is removed
	// (its warming ends 30s after it served, at 62s, its object 12s
	// later), later than one step interval.
	w.after(30 * time.Second)
	if w.store.storedResize(t) == nil {
		t.Fatal("the done entry was removed while its splits still warm")
	}
	w.after(13 * time.Second)
	if s := w.store.storedResize(t); s != nil || w.loop.ResizeDoc().Resize != nil {
		t.Fatalf("the done entry stays: %+v", s)
	}
	kinds := map[mcribapi.EventKind]int{}
	for _, e := range resizeEvents(log, mcribapi.EventResizeStarted, mcribapi.EventSplitStep, mcribapi.EventResizeOver) {
		kinds[e.Kind]++
		if e.Kind == mcribapi.EventSplitStep && !strings.Contains(e.Reason, "warm") {
			t.Errorf("split step event %q does not say warm", e.Reason)
		}
	}
	if kinds[mcribapi.EventResizeStarted] != 1 || kinds[mcribapi.EventSplitStep] != 4 || kinds[mcribapi.EventResizeOver] != 1 {
		t.Errorf("events %v", kinds)
	}
	if got := w.metrics.replacements; len(got) != 0 {
		t.Errorf("splits counted as replacements: %v", got)
	}
}

func TestResizeRequestRefusals(t *testing.T) {
	ctx := context.Background()
	w := fourSlots(t, 0)
	for _, tc := range []struct {
		slots  int
		status int
		want   string
	}{
		{6, 400, `"num_slots" must be exactly twice the pool's 4 slots (8), not 6`},
		{16, 400, `"num_slots" must be exactly twice the pool's 4 slots (8), not 16`},
		{4, 400, "4 resumes a stopped resize only, and none is stopped"},
	} {
		_, err := w.resize(tc.slots, 10, time.Second)
		if mcribapi.StatusCode(err) != tc.status || !strings.Contains(mcribapi.Sentence(err), tc.want) {
			t.Errorf("resize to %d: %v, want %d containing %q", tc.slots, err, tc.status, tc.want)
		}
	}
	if _, err := w.loop.StopResize(ctx, "ops"); !errors.Is(err, mcribapi.ErrNoResize) || mcribapi.StatusCode(err) != 404 {
		t.Errorf("stop with no resize: %v, want 404", err)
	}
	_, writes := w.store.stored()

	if _, err := w.loop.Freeze(ctx, "maintenance", "ops"); err != nil {
		t.Fatal(err)
	}
	w.pass(mcribapi.OutcomeOK)
	if _, err := w.resize(8, 10, time.Second); mcribapi.StatusCode(err) != 409 || !strings.Contains(err.Error(), "frozen by an operator") {
		t.Errorf("resize while frozen: %v", err)
	}
	if err := w.loop.Unfreeze(ctx); err != nil {
		t.Fatal(err)
	}
	w.pass(mcribapi.OutcomeOK)

	w.drain("az-c", 100, 100, time.Second)
	if _, err := w.resize(8, 10, time.Second); mcribapi.StatusCode(err) != 409 || !strings.Contains(err.Error(), `zone "az-c" is drained`) {
		t.Errorf("resize while a zone is drained: %v", err)
	}
	if _, err := w.loop.Undrain(ctx, "az-c"); err != nil {
		t.Fatal(err)
	}
	w.pass(mcribapi.OutcomeOK)
	for range 4 {
		w.after(time.Minute) // the drain's and the return's announces serve
	}
	if d := w.loop.Drains(); len(d.Zones) != 0 {
		t.Fatalf("drains left: %+v", d.Zones)
	}

	m, _ := w.store.stored()
	w.answer(slotIDs(m)...) // the spares leave
	w.after(time.Second)
	if _, err := w.resize(8, 10, time.Second); mcribapi.StatusCode(err) != 409 || !strings.Contains(err.Error(), "no ready spare") {
		t.Errorf("resize without a spare: %v", err)
	}
	if m, _ := w.store.stored(); m.NumSlots() != 4 || w.store.storedResize(t) != nil {
		t.Fatalf("a refused resize changed the pool: %d slots, entry %+v", m.NumSlots(), w.store.storedResize(t))
	}
	_ = writes
}

func TestResizeStopResumeAndAnotherWhileTwinsRemain(t *testing.T) {
	ctx := context.Background()
	w := fourSlots(t, 0)
	log := eventlog.NewLog(eventlog.Options{Clock: w.clk})
	w.loop.opts.Events = eventlog.Recorder{Log: log}
	if _, err := w.resize(8, 25, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	w.after(20 * time.Second)
	w.serve()
	m, _ := w.store.stored()
	if m.NumTwins() != 3 || m.Warming(4) != nil {
		t.Fatalf("after one cold step of 1: %d twins, slot 4 warming %v", m.NumTwins(), m.Warming(4))
	}
	doc, err := w.loop.StopResize(ctx, "ops")
	if err != nil || doc.Resize.State != mcribapi.ResizeStopped || doc.Resize.Twins != 3 || doc.Resize.Split != 1 {
		t.Fatalf("stop: %+v, %v", doc.Resize, err)
	}
	w.after(time.Minute)
	if m, _ := w.store.stored(); m.NumTwins() != 3 || m.NumSlots() != 8 {
		t.Fatalf("a stopped resize split on: %d twins of %d slots", m.NumTwins(), m.NumSlots())
	}
	if ev := resizeEvents(log, mcribapi.EventResizeStopped); len(ev) != 1 || ev[0].Who != "ops" ||
		!strings.Contains(ev[0].Reason, "3 twins stay twins, 1 stay split, and the pool keeps its 8 slots") {
		t.Errorf("resize stopped events %+v", ev)
	}
	// Stopped, none runs: a second stop is refused (404), saying how to
	// resume, and changes nothing.
	_, writes := w.store.stored()
	if _, err := w.loop.StopResize(ctx, "ops"); !errors.Is(err, mcribapi.ErrNoResize) || mcribapi.StatusCode(err) != 404 ||
		!strings.Contains(err.Error(), "stopped with 3 twins left (PUT /v1/resize with num_slots 8 resumes it)") {
		t.Errorf("stop of a stopped resize: %v", err)
	}
	if _, n := w.store.stored(); n != writes || len(resizeEvents(log, mcribapi.EventResizeStopped)) != 1 {
		t.Errorf("a refused stop wrote %d times or told another event", n-writes)
	}
	if _, err := w.resize(16, 10, time.Second); mcribapi.StatusCode(err) != 409 || !strings.Contains(err.Error(), "still has 3 twins") {
		t.Errorf("a second resize while twins remain: %v", err)
	}
	// The last step was more than a step interval ago: the pass that
	// resumes splits at once, all three (100%).
	doc, err = w.resize(8, 100, 5*time.Second)
	if err != nil || doc.Resize.State != mcribapi.ResizeSplitting || doc.Resize.StepPercent != 100 || doc.Resize.Split != 4 {
		t.Fatalf("resume: %+v, %v (the three twins announced, counted as split: the step interval is under 12 s)", doc.Resize, err)
	}
	w.serve()
	if m, _ := w.store.stored(); m.NumTwins() != 0 {
		t.Fatalf("after the resumed step: %d twins", m.NumTwins())
	}
	// Done (and removed: its step interval passed while its announce
	// waited, and nothing warms).
	if r := w.loop.ResizeDoc().Resize; r != nil && r.State != mcribapi.ResizeDone {
		t.Fatalf("after the resumed step served: %+v", r)
	}
	if _, err := w.loop.StopResize(ctx, "ops"); !errors.Is(err, mcribapi.ErrNoResize) {
		t.Errorf("stop of a done resize: %v", err)
	}
}

func TestResizePausedByAnOperatorFreezeNotAnAutomaticOne(t *testing.T) {
	ctx := context.Background()
	w := leadingWorld(t, []string{"a1", "b1", "c1", "a2", "b2", "c2"}, "a3", "b3", "c3", "a4", "b4", "c4")
	if _, err := w.resize(12, 20, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := w.loop.Freeze(ctx, "incident", "ops"); err != nil {
		t.Fatal(err)
	}
	w.after(10 * time.Second)
	if m, _ := w.store.stored(); m.NumTwins() != 6 {
		t.Fatalf("split under an operator freeze: %d twins", m.NumTwins())
	}
	if r := w.loop.ResizeDoc().Resize; r.State != mcribapi.ResizePaused || !strings.Contains(r.Blocked, "operator freeze") {
		t.Errorf("entry under a freeze: %+v", r)
	}
	if err := w.loop.Unfreeze(ctx); err != nil {
		t.Fatal(err)
	}
	// Four of twelve holders unreachable: the automatic freeze holds the
	// replacements, not the splits of the others.
	w.away("a1", "b1", "c1", "a2")
	w.pass(mcribapi.OutcomeOK)
	if st := w.loop.Status(); !st.AutoFrozen {
		t.Fatalf("no automatic freeze: %+v", st.AutoFreezeReason)
	}
	w.serve()
	m, _ := w.store.stored()
	if got := 6 - m.NumTwins(); got != 2 {
		t.Fatalf("%d twins split under the automatic freeze, want 2 (those of b2 and c2)", got)
	}
	for _, s := range []int{6, 7, 8, 9} {
		if !m.IsTwin(s) {
			t.Errorf("twin %d of a holder that does not answer split", s)
		}
	}
}

func TestResizeCarriedOnByANewLeaderWithTheOldSlots(t *testing.T) {
	w := fourSlots(t, 0)
	if _, err := w.resize(8, 25, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// Another replica started with --slots 4 follows the doubled map.
	w2 := w.sibling()
	if n := w2.loop.numSlots(); n != 8 {
		t.Fatalf("the sibling knows %d slots, want 8", n)
	}
	w.lead.loseLock()
	w2.lead.win("s2")
	w2.clk.Advance(5 * time.Second)
	w2.probe()
	w2.pass(mcribapi.OutcomeOK)
	if m, _ := w.store.stored(); m.NumTwins() != 4 {
		t.Fatalf("the new leader split before the stored pace")
	}
	w2.clk.Advance(5 * time.Second)
	w2.probe()
	w2.pass(mcribapi.OutcomeOK)
	w2.serve()
	if m, _ := w.store.stored(); m.NumTwins() != 3 {
		t.Fatalf("the new leader did not carry the resize on: %d twins", m.NumTwins())
	}
	// A replica started with any other count is refused, naming both.
	w3 := newWorld(t, 16)
	w3.store = w.store
	w3.loop.store = w.store
	err := w3.loop.Load(context.Background())
	if !errors.Is(err, ErrSlotCountMismatch) || !strings.Contains(err.Error(), "--slots is 16") || !strings.Contains(err.Error(), "has 8 slots") {
		t.Errorf("Load with --slots 16: %v", err)
	}
}

func TestResizeBlockedWithoutASpare(t *testing.T) {
	w := leadingWorld(t, []string{"a1", "b1"}, "c1")
	log := eventlog.NewLog(eventlog.Options{Clock: w.clk})
	w.loop.opts.Events = eventlog.Recorder{Log: log}
	if _, err := w.resize(4, 100, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if r := w.loop.ResizeDoc().Resize; !strings.Contains(r.Warning, "last ready spare") {
		t.Errorf("no warning that the splits take the last spare: %+v", r)
	}
	w.after(10 * time.Second)
	m, _ := w.store.stored()
	if m.NumTwins() != 2 || m.Incoming(2) == nil || m.Incoming(2).NodeID != "c1" {
		t.Fatalf("%d twins after a step with one spare, incoming %+v", m.NumTwins(), m.Incoming(2))
	}
	if ev := resizeEvents(log, mcribapi.EventLastSpare); len(ev) != 1 || ev[0].Node != "c1" || !strings.Contains(ev[0].Reason, "no ready spare left") {
		t.Errorf("the split that took the last ready spare told %+v", ev)
	}
	if s := w.store.storedResize(t); !strings.Contains(s.Blocked, "no ready spare for the next split") {
		t.Errorf("stored blocked %q", s.Blocked)
	}
	// The next step comes a step interval after the last.
	w.answer("a1", "b1", "c1", "c2")
	w.after(time.Second)
	if m, _ := w.store.stored(); m.Incoming(3) != nil {
		t.Fatalf("split before the step interval")
	}
	w.after(9 * time.Second)
	if m, _ := w.store.stored(); m.Incoming(3) == nil {
		t.Fatalf("a new spare did not unblock the split: %d twins, incoming %+v", m.NumTwins(), m.Incoming(3))
	}
	w.serve()
	if m, _ := w.store.stored(); m.NumTwins() != 0 {
		t.Fatalf("the splits did not serve: %d twins", m.NumTwins())
	}
}

func TestCapacityOfAnOutgrownPool(t *testing.T) {
	w := fourSlots(t, 0)
	c := w.loop.Status().Capacity
	if c == nil || c.Slots != 4 || c.Nodes != 8 || c.SparesReady != 4 || c.SparesFor == nil || *c.SparesFor != "0s" {
		t.Fatalf("capacity %+v", c)
	}
	w.after(time.Hour)
	if c := w.loop.Status().Capacity; c.SparesFor == nil || *c.SparesFor != "1h0m0s" {
		t.Fatalf("capacity after an hour %+v", c)
	}
	if slots, spares, ok := w.loop.Capacity(); !ok || slots != 4 || spares != 4 {
		t.Errorf("Capacity() = %d, %d, %v", slots, spares, ok)
	}
	if _, err := w.resize(8, 50, time.Second); err != nil {
		t.Fatal(err)
	}
	w.after(time.Second)
	// Two of eight nodes spare (two are announced): not more than a
	// quarter.
	if c := w.loop.Status().Capacity; c.Slots != 8 || c.SparesReady != 2 || c.SparesFor != nil {
		t.Fatalf("capacity after a split step %+v", c)
	}
	if st := w.loop.Status(); st.Resize == nil || st.Resize.Split != 2 {
		t.Errorf("status resize %+v", st.Resize)
	}
}

// A lone dead holder of a slot and its twin is one holder: no zone alert,
// and it counts once against the automatic freeze's fraction.
func TestTwinCountsOnceForTheZoneAlert(t *testing.T) {
	w := leadingWorld(t, []string{"a1", "b1", "c1"}, "a2", "b2", "c2")
	if _, err := w.resize(6, 10, time.Hour); err != nil {
		t.Fatal(err)
	}
	w.away("a1")
	w.pass(mcribapi.OutcomeOK)
	st := w.loop.Status()
	if st.ZoneAlert != "" || st.AutoFrozen {
		t.Errorf("one dead holder with its twin: zone alert %q, auto frozen %v (%s)", st.ZoneAlert, st.AutoFrozen, st.AutoFreezeReason)
	}
	for _, z := range st.Zones {
		if z.Zone == "az-a" && z.Slots != 1 {
			t.Errorf("zone az-a holds %d slots, want 1 (a slot and its twin count once)", z.Slots)
		}
	}
}

// Twins whose resize document was deleted are taken up again by a resume.
func TestResumeTwinsWithoutAnEntry(t *testing.T) {
	w := fourSlots(t, 0)
	if _, err := w.resize(8, 50, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	w.store.mu.Lock()
	w.store.resizeRaw, w.store.resizeIndex = nil, 0
	w.store.mu.Unlock()
	w.after(10 * time.Second)
	if m, _ := w.store.stored(); m.NumTwins() != 4 || w.loop.ResizeDoc().Resize != nil {
		t.Fatalf("twins split without an entry: %d left", m.NumTwins())
	}
	doc, err := w.resize(8, 50, 10*time.Second)
	if err != nil || doc.Resize == nil || doc.Resize.From != 4 || doc.Resize.State != mcribapi.ResizeSplitting {
		t.Fatalf("resume without an entry: %+v, %v", doc.Resize, err)
	}
	w.after(10 * time.Second)
	w.serve()
	if m, _ := w.store.stored(); m.NumTwins() != 2 {
		t.Fatalf("after the resumed step: %d twins", m.NumTwins())
	}
}

// TestResizePausedByADrain: a drain set while twins remain pauses the
// splits, and the entry's blocked names the drained zone; the splits go on
// at their pace once the zone is undrained.
func TestResizePausedByADrain(t *testing.T) {
	ctx := context.Background()
	w := leadingWorld(t, []string{"a1", "b1", "c1", "a2", "b2", "c2"}, "a3", "b3", "c3", "a4", "b4", "c4", "a5", "b5", "c5")
	if _, err := w.resize(12, 20, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	w.after(10 * time.Second)
	w.serve()
	m, _ := w.store.stored()
	twins := m.NumTwins()
	if twins != 4 {
		t.Fatalf("after the first step of 2: %d twins", twins)
	}
	if _, err := w.loop.Drain(ctx, "az-c", mcribapi.Drain{Reason: "link flapping", Percent: 100, StepPercent: 100, StepInterval: time.Second}, "ops"); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		w.after(10 * time.Second)
	}
	if m, _ := w.store.stored(); m.NumTwins() != twins {
		t.Fatalf("%d twins split while zone az-c was drained", twins-m.NumTwins())
	}
	r := w.loop.ResizeDoc().Resize
	if r == nil || r.State != mcribapi.ResizeSplitting || !strings.Contains(r.Blocked, `zone "az-c" is drained: the splits wait until it is undrained`) {
		t.Fatalf("entry while zone az-c is drained: %+v", r)
	}
	if _, err := w.loop.Undrain(ctx, "az-c"); err != nil {
		t.Fatal(err)
	}
	for range 12 {
		w.after(10 * time.Second)
	}
	if m, _ := w.store.stored(); m.NumTwins() != 0 {
		t.Fatalf("the splits did not go on after the undrain: %d twins", m.NumTwins())
	}
	if r := w.loop.ResizeDoc().Resize; r != nil && (r.State != mcribapi.ResizeDone || r.Blocked != "") {
		t.Errorf("entry after the undrain: %+v", r)
	}
}

// TestSplitsWaitDuringADiscoveryFault (finding 3 of issue 26): during a
// fault of discovery (an empty Consul answer) nothing is replaced, and the
// splits wait too (invariant 5): no twin is announced, and the resize's
// blocked says why.
func TestSplitsWaitDuringADiscoveryFault(t *testing.T) {
	w := fourSlots(t, time.Minute)
	if _, err := w.resize(8, 50, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	w.loop.onAnswer(cachenodes.Membership{}) // a fault of discovery
	w.after(10 * time.Second)
	w.after(cachenodes.AnnounceLead)
	m, _ := w.store.stored()
	if m.NumTwins() != 4 || m.AnyIncoming() {
		t.Fatalf("during a fault of discovery: %d twins of 4 left, incoming %v: the splits went on", m.NumTwins(), m.AnyIncoming())
	}
	st := w.loop.Status()
	if !st.DiscoveryFault || st.Resize == nil || !strings.Contains(st.Resize.Blocked, "fault of discovery") {
		t.Fatalf("status: discovery fault %v, resize %+v; want the resize's blocked to name the fault", st.DiscoveryFault, st.Resize)
	}
	if s := w.store.storedResize(t); !strings.Contains(s.Blocked, "fault of discovery") {
		t.Errorf("stored blocked %q", s.Blocked)
	}
	// Consul answers in full again: the splits go on.
	w.answer(w.listed...)
	w.after(time.Second)
	w.serve()
	if m, _ := w.store.stored(); m.NumTwins() != 2 {
		t.Fatalf("after the fault: %d twins, want 2 split", m.NumTwins())
	}
}

// TestSecondResizeWhileTheLastSplitWarms (finding 4 of issue 26): a
// second resize while the last split of the previous one still has its
// warming object is refused with a 409 that says which slot and from
// when it can be (it was refused with the slot map's internal validation
// message); once the object is removed it goes through.
func TestSecondResizeWhileTheLastSplitWarms(t *testing.T) {
	w := leadingWorld(t, []string{"a1", "b1"}, "a2", "b2", "a3", "b3", "c1", "c2")
	w.loop.opts.WarmFor = time.Minute
	if _, err := w.resize(4, 100, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	w.after(10 * time.Second)
	w.serve()
	m, _ := w.store.stored()
	if m.NumTwins() != 0 || m.Warming(2) == nil {
		t.Fatalf("after the splits: %v, %d twins, warming of slot 2 %+v", slotIDs(m), m.NumTwins(), m.Warming(2))
	}
	_, err := w.resize(8, 100, 10*time.Second)
	gone := m.Warming(2).WritesUntil().UTC().Format(time.RFC3339)
	want := "cannot resize the pool now: slot 2, split from slot 0 by the last resize, still has its warming from node a1 (until its warming object is removed at " + gone + "); resize again once it is"
	if mcribapi.StatusCode(err) != 409 || mcribapi.Sentence(err) != want || strings.Contains(err.Error(), "invalid slot map") {
		t.Fatalf("a second resize while a split warms: %v (status %d), want 409 %q", err, mcribapi.StatusCode(err), want)
	}
	if m2, _ := w.store.stored(); m2.NumSlots() != 4 {
		t.Fatalf("the refused resize changed the pool: %d slots", m2.NumSlots())
	}
	w.after(time.Minute + cachenodes.WarmWriteGrace)
	if _, err := w.resize(8, 100, 10*time.Second); err != nil {
		t.Fatalf("the second resize once the splits' warmings went: %v", err)
	}
	if m2, _ := w.store.stored(); m2.NumSlots() != 8 {
		t.Fatalf("after the second resize: %d slots", m2.NumSlots())
	}
}
