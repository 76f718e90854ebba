package sim

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// testShape is a live pool of perZone nodes in each of zones a, b and c,
// whose first slots are held round-robin over the zones, as a status and
// slot map would describe it, with mcrib serve's v5 defaults.
func testShape(t *testing.T, perZone, slots int, hitRate, gets float64) Shape {
	t.Helper()
	var fleet Fleet
	var all []cachenodes.Node
	for i := range perZone {
		for _, z := range zones {
			n := cachenodes.Node{ID: fmt.Sprintf("mc-%s-%d", z, i+1), Addr: fmt.Sprintf("10.0.%d.%d:11211", i, z[0]), AZ: z}
			all = append(all, n)
			fleet.Nodes = append(fleet.Nodes, FleetNode{ID: n.ID, Addr: n.Addr, AZ: n.AZ})
		}
	}
	m, err := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{Pool: "live", Generation: 3, Revision: 9, UpdatedAt: epoch,
		Slots: all[:slots], Spares: all[slots:]})
	if err != nil {
		t.Fatal(err)
	}
	fleet.Map = m
	return Shape{Pool: "live", Nodes: len(all), Slots: slots, BootLimitMin: 10, BootLimitMax: 1000, HitRate: hitRate, GetsPerSecond: gets,
		Flags: &mcribapi.PoolFlags{Hold: "1m0s", ProbeInterval: "2s", StatsInterval: "5s", WarmFor: "30m0s", WarmMin: "30s",
			WarmCopyRate: 20_000_000, MaxAbsentFraction: 0.25, MaxReplacementsPerMinute: 2}, Fleet: &fleet}
}

func drainAction(zone string, step int, every time.Duration) Action {
	return Action{Kind: ActionDrain, Zone: zone, Drain: mcribapi.Drain{Reason: "what if", Percent: 100, StepPercent: step, StepInterval: every}}
}

// TestPredictDrain: a warm drain of one zone of a 16-slot pool under the
// v5 rules is over within its steps, the announce, the convergence window
// and the grace of its last warming, and costs the hit rate little; the
// same drain with --warm-for 0s costs more misses; the same request gives
// the same prediction.
func TestPredictDrain(t *testing.T) {
	ctx := context.Background()
	sh := testShape(t, 8, 16, 0.95, 2000)
	a := drainAction("b", 50, 5*time.Second)
	p, err := Predict(ctx, sh, a)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("warm: %+v", p)
	// Zone b holds 5 of the 16 slots: steps of 3 slots, 5 s apart.
	if !p.Over || p.Blocked != "" {
		t.Fatalf("the drain is not over: %+v", p)
	}
	if lo, hi := 5*time.Second+cachenodes.AnnounceLead+30*time.Second, 2*time.Minute; p.Duration < lo || p.Duration > hi {
		t.Errorf("duration %v, want from %v (the steps, the announce, --warm-min) to %v (well before --warm-for)", p.Duration, lo, hi)
	}
	if p.LowestHitRate < 0.93 || p.LowestHitRate > 0.95 {
		t.Errorf("lowest hit rate %.4f, want within 2 points below the pool's 0.95 (warm moves)", p.LowestHitRate)
	}
	if p.LowestBootLimit <= 0 || p.LowestBootLimit > 1000 {
		t.Errorf("lowest boot limit %v, want within the limit's bounds", p.LowestBootLimit)
	}
	again, err := Predict(ctx, sh, a)
	if err != nil {
		t.Fatal(err)
	}
	if again != p {
		t.Errorf("the same what-if twice: %+v, then %+v", p, again)
	}
	cold := sh
	flags := *sh.Flags
	flags.WarmFor = "0s"
	cold.Flags = &flags
	pc, err := Predict(ctx, cold, a)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cold: %+v", pc)
	if pc.ExtraMisses <= 2*p.ExtraMisses || pc.LowestHitRate >= p.LowestHitRate {
		t.Errorf("cold drain: %d extra misses, lowest %.4f; want more misses and a lower hit rate than the warm drain's %d, %.4f",
			pc.ExtraMisses, pc.LowestHitRate, p.ExtraMisses, p.LowestHitRate)
	}
}

func TestKeysForMatchesTheHitRate(t *testing.T) {
	for _, hr := range []float64{0.93, 0.95, 0.99} {
		n := keysFor(hr, 16*4000, 1.2)
		if got := lruHitRate(n, 16*4000, 1.2); math.Abs(got-hr) > 0.001 {
			t.Errorf("keysFor(%v) = %d keys, whose estimate is %v", hr, n, got)
		}
	}
}

// TestPredictResize: doubling a pool with a spare for every twin is over
// within its steps, the last split's announce, one --warm-for and the
// grace of its warming object, at little cost; a pool with too few spares
// is not, and the prediction says what blocks it. (The simulated pool's
// misses are those of a full cache: a split's new holder, with a node's
// memory for half the keys, warms above slot s's hit rate, which the
// split's convergence rule counts as caught up, so --warm-for, here 2m,
// is only the bound.)
func TestPredictResize(t *testing.T) {
	ctx := context.Background()
	resize := Action{Kind: ActionResize, Resize: mcribapi.Resize{NumSlots: 8, Reason: "what if", StepPercent: 50, StepInterval: 10 * time.Second}}
	sh := testShape(t, 4, 4, 0.95, 2000)
	sh.Flags.WarmFor = "2m0s"
	p, err := Predict(ctx, sh, resize)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("spares for every twin: %+v", p)
	// Two split steps, the first 10 s after the doubling, 10 s apart.
	if lo, hi := 20*time.Second+cachenodes.AnnounceLead+30*time.Second, 20*time.Second+2*cachenodes.AnnounceLead+2*time.Minute+5*time.Second; !p.Over || p.Duration < lo || p.Duration > hi {
		t.Errorf("the resize: %+v, want it over in %v to %v", p, lo, hi)
	}
	if p.LowestHitRate < 0.93 {
		t.Errorf("lowest hit rate %.4f, want within 2 points of the pool's 0.95 (warm splits)", p.LowestHitRate)
	}
	short := testShape(t, 2, 4, 0.95, 2000)
	short.Flags.WarmFor = "2m0s"
	ps, err := Predict(ctx, short, resize)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("two spares for four twins: %+v", ps)
	if ps.Over || !strings.Contains(ps.Blocked, "the simulated resize was not over after") || !strings.Contains(ps.Blocked, "no ready spare") {
		t.Errorf("a resize without enough spares: %+v, want it not over, blocked naming the missing spares", ps)
	}
}
