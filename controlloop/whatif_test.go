package controlloop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcrib/mcrib/hitrate"
	"github.com/mcrib/mcrib/mcribapi"
)

// TestWhatIfChecksChangeNothing: CheckDrain and CheckResize answer the
// refusals of PUT /v1/drain/{zone} and PUT /v1/resize, and nil for what
// those would take, and neither writes anything.
func TestWhatIfChecksChangeNothing(t *testing.T) {
	ctx := context.Background()
	w := fourSlots(t, 30*time.Minute)
	_, rev := w.store.stored()
	resize := func(n int) mcribapi.Resize {
		return mcribapi.Resize{NumSlots: n, Reason: "what if", StepPercent: 10, StepInterval: 30 * time.Second}
	}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"drain a known zone", w.loop.CheckDrain(ctx, "az-b"), nil},
		{"drain an unknown zone", w.loop.CheckDrain(ctx, "az-x"), mcribapi.ErrUnknownZone},
		{"drain the zone \"\"", w.loop.CheckDrain(ctx, ""), mcribapi.ErrUnknownZone},
		{"resize to twice the slots", w.loop.CheckResize(ctx, resize(8)), nil},
		{"resize to three times the slots", w.loop.CheckResize(ctx, resize(12)), mcribapi.ErrBadRequest},
	} {
		if !errors.Is(tc.err, tc.want) || (tc.want == nil) != (tc.err == nil) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if _, after := w.store.stored(); after != rev || w.store.storedDrainDoc(t) != nil {
		t.Fatalf("the checks wrote: slot map writes %d → %d, drain document %+v", rev, after, w.store.storedDrainDoc(t))
	}
	// What the endpoints would refuse with 409: a drain that leaves no
	// undrained zone, a resize while a zone is drained.
	w.drain("az-a", 100, 10, time.Second)
	w.drain("az-b", 100, 10, time.Second)
	if err := w.loop.CheckDrain(ctx, "az-c"); !errors.Is(err, mcribapi.ErrRefused) {
		t.Errorf("draining the last undrained zone: %v, want a refusal", err)
	}
	if err := w.loop.CheckResize(ctx, resize(8)); !errors.Is(err, mcribapi.ErrRefused) {
		t.Errorf("resizing while zones are drained: %v, want a refusal", err)
	}
}

// TestGetRate: the pool's gets a second are the sum of its nodes' rates
// between two reads; a warm source's gets (its new holder's misses) and a
// node that restarted add nothing; unknown before two reads.
func TestGetRate(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var g getRate
	at := func(d time.Duration) func(string) time.Time { return func(string) time.Time { return t0.Add(d) } }
	g.read(map[string]hitrate.Counters{"a": {Hits: 100, PID: 1}, "b": {Hits: 50, PID: 2}}, at(0))
	if g.perSecond() != nil {
		t.Fatalf("gets a second after one read: %v, want unknown", *g.perSecond())
	}
	g.read(map[string]hitrate.Counters{
		"a": {Hits: 540, Misses: 60, PID: 1},        // 500 gets in 5 s
		"b": {Hits: 10, PID: 3},                     // restarted
		"w": {Hits: 900, WarmSourceOf: "a", PID: 4}, // a's misses, forwarded
	}, at(5*time.Second))
	if got := g.perSecond(); got == nil || *got != 100 {
		t.Fatalf("gets a second %v, want 100", got)
	}
}
