package sim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/leader"
	"github.com/mcrib/mcrib/mcribapi"
)

// drainPool is a pool of three zones whose zone b holds 11 of 32 slots, so
// the drain takes 6 steps of 2 slots.
func drainPool(policy string) Config {
	cfg := small(ZoneDrain, policy)
	cfg.Nodes, cfg.Clients, cfg.SampledReads, cfg.DBCapacity = 48, 1200, 3000, 2400*1200/2000.0
	cfg.Warmup, cfg.Duration = 2*time.Minute, 4*time.Minute
	return cfg
}

func TestZoneDrainWarmBeatsCold(t *testing.T) {
	warm, cold := run(t, drainPool(PolicyMCrib)), run(t, drainPool(PolicyMCribCold))
	for _, r := range []Result{warm, cold} {
		// 6 steps, one per 3 s interval rounded up to the 2 s passes.
		if !r.Drained || r.DrainTime > drainBound {
			t.Errorf("%s: drained %v in %s; want within %s", r.Policy, r.Drained, r.DrainTime, drainBound)
		}
		if r.Flushes != 11 {
			t.Errorf("%s: %d flushes; want 11, one per new holder", r.Policy, r.Flushes)
		}
	}
	if cold.ExtraDBMisses <= 0 || warm.ExtraDBMisses >= cold.ExtraDBMisses {
		t.Errorf("extra DB misses: warm %d, cold %d; want warm below cold, cold above 0", warm.ExtraDBMisses, cold.ExtraDBMisses)
	}
	if warm.LowestSecondHitRate <= cold.LowestSecondHitRate {
		t.Errorf("lowest hit rate (1 s): warm %.4f, cold %.4f; want warm above", warm.LowestSecondHitRate, cold.LowestSecondHitRate)
	}
	if !testing.Short() { // make check leaves the third run out
		if again := run(t, drainPool(PolicyMCrib)); figures(t, again) != figures(t, warm) {
			t.Errorf("two runs of the same zone-drain differ:\n%s\n%s", figures(t, warm), figures(t, again))
		}
	}
	var b strings.Builder
	WriteTable(&b, []Result{warm, cold})
	for _, want := range []string{"time to drained", "| mcrib-cold |", "extra DB misses"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("zone-drain table lacks %q:\n%s", want, b.String())
		}
	}
	cs := zoneDrainChecks([]Result{warm, cold})
	if len(cs) != 4 || !cs[0].OK || !cs[1].OK {
		t.Errorf("zone-drain checks %+v; want 4, both drains in time", cs)
	}
}

func TestZoneDrainNeedsTheLoop(t *testing.T) {
	if _, err := Run(context.Background(), small(ZoneDrain, PolicyImmediate)); !errors.Is(err, ErrBadConfig) {
		t.Errorf("zone-drain under immediate: %v; want ErrBadConfig", err)
	}
	if _, err := Run(context.Background(), Config{Scenario: ZoneDrain, Nodes: 2}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("zone-drain of 2 nodes (no zone c): %v; want ErrBadConfig", err)
	}
	rs, err := RunAll(context.Background(), Config{Nodes: 8, Warmup: time.Minute, Duration: 30 * time.Second, Clients: 50, SampledReads: 100, ItemsPerNode: 200},
		[]string{ZoneDrain}, []Policy{{Name: PolicyImmediate, Immediate: true}, {Name: PolicyMCribCold, Cold: true}}, nil)
	if err != nil || len(rs) != 1 || rs[0].Policy != PolicyMCribCold {
		t.Errorf("RunAll of zone-drain under immediate,mcrib-cold: %d results, %v; want mcrib-cold's only", len(rs), err)
	}
}

func TestZoneDrainChecks(t *testing.T) {
	rs := []Result{
		{Scenario: ZoneDrain, Policy: PolicyMCrib, Drained: true, DrainTime: 33 * time.Second, Baseline: 0.97, LowestSecondHitRate: 0.921, ExtraDBMisses: 250},
		{Scenario: ZoneDrain, Policy: PolicyMCribCold, Drained: true, DrainTime: 30 * time.Second, ExtraDBMisses: 1000},
	}
	for _, c := range Checks(rs) {
		if !c.OK {
			t.Errorf("%s: not met (%s)", c.Target, c.Detail)
		}
	}
	rs[0].DrainTime, rs[0].LowestSecondHitRate, rs[0].ExtraDBMisses = 34*time.Second, 0.919, 251
	rs[1].Drained = false
	for _, c := range Checks(rs) {
		if c.OK {
			t.Errorf("%s: met (%s); want not met", c.Target, c.Detail)
		}
	}
}

// The sim's store keeps the drain document with check-and-set, as
// ConsulStore does.
func TestMemStoreDrainCAS(t *testing.T) {
	ctx := context.Background()
	s := &memStore{}
	doc := mcribapi.DrainDoc{Zones: map[string]*mcribapi.DrainEntry{"b": {Percent: 100, StepPercent: 10, State: "draining"}}}
	if ok, err := s.PutDrain(ctx, doc, 7); ok || err != nil {
		t.Fatalf("PutDrain at a version that is not there: %v, %v; want refused", ok, err)
	}
	if ok, _ := s.PutDrain(ctx, doc, 0); !ok {
		t.Fatal("PutDrain of a new document refused")
	}
	doc.Zones["b"].Percent = 50 // the caller's copy, not the stored one
	st, _ := s.Read(ctx)
	if st.Drain == nil || st.DrainIndex == 0 || st.Drain.Zones["b"].Percent != 100 || st.Drain.Zones["b"].State != "" {
		t.Fatalf("read back %+v at %d; want the stored entry at percent 100, without its answered fields", st.Drain, st.DrainIndex)
	}
	if ok, _ := s.PutDrain(ctx, doc, 0); ok {
		t.Error("PutDrain expecting no document overwrote one")
	}
	m, err := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{Pool: "sim", Generation: 1, Slots: []cachenodes.Node{{ID: "n", Addr: "10.0.0.1:11211"}}})
	if err != nil {
		t.Fatal(err)
	}
	stale := st
	stale.DrainIndex--
	if ok, _ := s.WritePool(ctx, stale, leader.Lease{}, controlloop.PoolWrite{SlotMap: m}); ok {
		t.Error("WritePool went through with a stale drain version")
	}
	if ok, _ := s.WritePool(ctx, st, leader.Lease{}, controlloop.PoolWrite{SlotMap: m, Drain: &mcribapi.DrainDoc{Zones: map[string]*mcribapi.DrainEntry{}}}); !ok {
		t.Fatal("WritePool at the versions read refused")
	}
	if st, _ := s.Read(ctx); st.SlotMap != m || st.Drain != nil || st.DrainIndex != 0 {
		t.Errorf("after a write with an empty drain document: map %v, drain %+v at %d; want the map, no document", st.SlotMap, st.Drain, st.DrainIndex)
	}
}
