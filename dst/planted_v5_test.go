package dst

import (
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/revert"
)

// maintainSlot0 puts slot 0's holder in Consul maintenance at 60 s: the
// leader announces a spare to the slot and, 12 s later, moves it there
// warm (the holder answers), warming for --warm-for.
func maintainSlot0(t *testing.T, then func(w *world)) *Plant {
	return at(60*time.Second, func(w *world) {
		n := w.nodeByID[storedMap(t, w).Slot(0).ID]
		w.consul.services[n.id].maintenance = true
		w.consul.touchHealth()
		w.tr.add(w.now, "PLANT: %s in maintenance", n.id)
		if then != nil {
			then(w)
		}
	})
}

// cutReplicasFromConsul cuts every replica off from Consul at t for d:
// each serves the map it last read, which ages.
func cutReplicasFromConsul(t, d time.Duration) func(w *world) {
	return func(w *world) {
		w.at(t, "plant", func() {
			for _, r := range w.replicas {
				heal := []func(){
					w.net.impair(r.host.name, consulHost, impairment{cut: true}),
					w.net.impair(consulHost, r.host.name, impairment{cut: true}),
				}
				w.after(d, "plant", func() {
					for _, h := range heal {
						h()
					}
				})
			}
			w.tr.add(w.now, "PLANT: every replica cut off from Consul for %v", d)
		})
	}
}

// manyKeys gives the clients a key space large enough that most keys of
// a slot are neither set nor deleted for tens of seconds: their reads
// after a move go on through the warm source.
func manyKeys(c *Config) { c.Keys = 1024 }

// TestPlantedTombstones: a client that deletes in a slot's incoming node
// or new holder, where a tombstone is due (revert.Tombstones), breaks
// s9-tombstones.
func TestPlantedTombstones(t *testing.T) {
	res := plantedRun(t, maintainSlot0(t, nil), 2*time.Minute, func(c *Config) { c.Reverted = revert.Of(revert.Tombstones) })
	wantRule(t, res, ruleTombstones)
	if res.Violation.Fix != revert.Tombstones {
		t.Errorf("the violation names fix %v, want %v", res.Violation.Fix, revert.Tombstones)
	}
}

// TestPlantedStaleMapReadsWarmSource: clients that read a warm source on
// a map that is no longer fresh (revert.FreshWarmReads; the replicas cut
// off from Consul while a slot warms) break s9-fresh-maps.
func TestPlantedStaleMapReadsWarmSource(t *testing.T) {
	res := plantedRun(t, maintainSlot0(t, cutReplicasFromConsul(20*time.Second+60*time.Second, time.Minute)), 3*time.Minute, func(c *Config) {
		manyKeys(c)
		c.Reverted = revert.Of(revert.FreshWarmReads)
	})
	wantRule(t, res, ruleFresh)
	if res.Violation.Fix != revert.FreshWarmReads {
		t.Errorf("the violation names fix %v, want %v", res.Violation.Fix, revert.FreshWarmReads)
	}
}

// TestPlantedMapAgeLie: replicas that answer every map as just read
// (X-Mcrib-Map-Age 0), cut off from Consul while a slot warms: the
// clients count their maps fresh and read the warm source, and
// s9-fresh-maps finds the map's true age.
func TestPlantedMapAgeLie(t *testing.T) {
	lie := func(w *world) {
		w.plant.freshLie = true
		cutReplicasFromConsul(20*time.Second+60*time.Second, time.Minute)(w)
	}
	res := plantedRun(t, maintainSlot0(t, lie), 3*time.Minute, manyKeys)
	wantRule(t, res, ruleFresh)
	if !strings.Contains(res.Violation.Message, "last read from Consul") {
		t.Errorf("the violation %q does not tell the map's true age", res.Violation.Message)
	}
}

// TestPlantedEndedWarmingGrace: with revert.EndedWarmingGrace the clients
// stop writing the old holder when a warming's reads end, and the leader
// removes the warming object then: s9-ended-warming.
func TestPlantedEndedWarmingGrace(t *testing.T) {
	res := plantedRun(t, maintainSlot0(t, nil), 4*time.Minute, func(c *Config) { c.Reverted = revert.Of(revert.EndedWarmingGrace) })
	wantRule(t, res, ruleEndedWarming)
	if res.Violation.Fix != revert.EndedWarmingGrace {
		t.Errorf("the violation names fix %v, want %v", res.Violation.Fix, revert.EndedWarmingGrace)
	}
}

// TestPlantedWarmingRemovedEarly: a rogue write removes a warming object
// as soon as it is stored, before its reads end: s9-ended-warming.
func TestPlantedWarmingRemovedEarly(t *testing.T) {
	var removed bool
	p := maintainSlot0(t, nil)
	setup := p.setup
	p.setup = func(w *world) {
		setup(w)
		w.every(61*time.Second, 250*time.Millisecond, "plant", func() bool { return !removed }, func() {
			m := w.chk.kvMap
			if m == nil || m.Warming(0) == nil {
				return
			}
			removed = true
			rogueMap(t, w, func(s *cachenodes.SlotMapSpec) {
				s.Warming[0] = nil
				s.Revision++
			})
		})
	}
	res := plantedRun(t, p, 2*time.Minute, nil)
	wantRule(t, res, ruleEndedWarming)
	if !strings.Contains(res.Violation.Message, "was removed from the stored map") {
		t.Errorf("the violation %q does not tell of the warming's removal", res.Violation.Message)
	}
}

// TestPlantedRevisionOrder: a rogue write of the slot map that keeps its
// generation and revision: s9-revision-order.
func TestPlantedRevisionOrder(t *testing.T) {
	res := plantedRun(t, at(60*time.Second, func(w *world) {
		rogueMap(t, w, func(s *cachenodes.SlotMapSpec) { s.Spares = s.Spares[1:] })
	}), 2*time.Minute, nil)
	wantRule(t, res, ruleRevision)
}

// TestPlantedClientRevisionOrder: a client that takes a map of its own
// generation but a lower revision: client-generation-order.
func TestPlantedClientRevisionOrder(t *testing.T) {
	res := plantedRun(t, at(60*time.Second, func(w *world) {
		m := storedMap(t, w)
		spec := m.Spec()
		spec.Revision++
		newer, err := cachenodes.NewSlotMap(spec)
		if err != nil {
			t.Fatal(err)
		}
		p := w.replicas[0].proc
		w.chk.onClientMap(w.clients[0], m, newer, p)
		w.chk.onClientMap(w.clients[0], newer, m, p)
	}), 2*time.Minute, nil)
	wantRule(t, res, ruleClientGeneration)
	if !strings.Contains(res.Violation.Message, "revision") {
		t.Errorf("the violation %q does not tell the revisions", res.Violation.Message)
	}
}

// TestMoveUnderConsulCutClean: the planted worlds above without their
// faults break no rule: a warm move whose replicas are then cut off from
// Consul (the clients' maps age, and they stop reading the warm source),
// and its warming's end.
func TestMoveUnderConsulCutClean(t *testing.T) {
	res := plantedRun(t, maintainSlot0(t, cutReplicasFromConsul(20*time.Second+60*time.Second, time.Minute)), 4*time.Minute, manyKeys)
	if res.Violation != nil {
		t.Fatal(res.Violation)
	}
}
