package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// The soak's planned moves: what an operator does to a pool that works,
// each a fault of the menu (soak_faults_test.go), with a fault of a node
// or of the observer nested inside one time in two. Each asks the leader
// (through the API with the token, or Consul for maintenance), lasts until
// the move it asked for has happened, is undone where it can be (the
// drain returned, the maintenance ended) and, before the pool settles,
// waits until the operation is over. Every planned move is a map change
// under the clients' feet: the cross-generation stale-read check is what
// they are here for.

// soakStepPercents are the step sizes a drain or a resize is drawn.
var soakStepPercents = []int{34, 50, 100}

// stepPercent draws a drain's or a resize's step size: 100 for the
// planned moves of the first steps, which keeps the short soak short (one
// step each way; every step of a move is announced 12 s ahead).
func (s *soak) stepPercent() int {
	if s.scheduled {
		return 100
	}
	return soakStepPercents[s.rng.IntN(len(soakStepPercents))]
}

// leaderAPI returns the API of the replica that leads.
func (s *soak) leaderAPI() *apiClient { return s.p.leader(30 * time.Second).api }

// refused is the soakApplied of a planned move of kind that the API
// refused: nothing moves, and the step goes on as a step without a fault.
func (s *soak) refused(kind, what string, code int, body []byte) soakApplied {
	s.refusals[kind]++
	return soakApplied{what: fmt.Sprintf("%s refused (%d %s)", what, code, short(string(body))), undo: func() {}}
}

// holderOf draws a slot holder of the stored map (slot s, not a twin: a
// twin's holder is slot s's), of a slot that does not warm when there is
// one (mcrib refuses to replace a warming slot's holder), or false when
// no slot has one.
func (s *soak) holderOf(sm *cachenodes.SlotMap) (*hostNode, int, bool) {
	var slots, cool []int
	for i, n := range sm.Slots() {
		if !n.IsZero() && !sm.IsTwin(i) {
			slots = append(slots, i)
			if sm.Warming(i) == nil {
				cool = append(cool, i)
			}
		}
	}
	if len(cool) > 0 {
		slots = cool
	}
	if len(slots) == 0 {
		return nil, 0, false
	}
	i := slots[s.rng.IntN(len(slots))]
	return s.p.byID[sm.Slot(i).ID], i, true
}

// holdsNoSlot returns a done func: true once the stored map gives id no
// slot.
func (s *soak) holdsNoSlot(id string) func() (bool, string) {
	return func() (bool, string) {
		sm := kvSlotMap(s.t, s.p.consul.Client, "default")
		if sm == nil {
			return false, "no slot map in Consul KV"
		}
		if i := sm.SlotOf(id); i >= 0 {
			return false, fmt.Sprintf("%s still holds slot %d (generation %d)", id, i, sm.Generation())
		}
		return true, ""
	}
}

// drainZone drains a zone holding slots, 100 per cent, in steps of a
// drawn size every 2 s, until it is drained (or its drain is blocked:
// after a resize the pool has two spares), then undoes it; the pool
// settles once the zone holds its baseline again and the entry is gone.
// Drain and return steps do not count against the replacement ceiling,
// so the monitor leaves them out meanwhile.
func (s *soak) drainZone() soakApplied {
	sm := s.p.slotMap()
	var zones []string
	for z, n := range zoneSlots(sm, s.p.zoneOf()) {
		if n > 0 {
			zones = append(zones, z)
		}
	}
	slices.Sort(zones)
	z := zones[s.rng.IntN(len(zones))]
	step := s.stepPercent()
	what := fmt.Sprintf("drain-zone %s (steps of %d%% every 2s)", z, step)
	api := s.leaderAPI()
	s.mon.planned(true)
	if code, body := api.do("PUT", "/v1/drain/"+z, drainBody("soak", 100, step, "2s"), token); code != http.StatusOK {
		s.mon.planned(false)
		return s.refused("drain-zone", what, code, body)
	}
	s.planned["drain-zone"]++
	entry := func() (mcribapi.DrainEntry, bool, string) {
		d, _, err := s.leaderAPI().drain()
		if err != nil {
			return mcribapi.DrainEntry{}, false, err.Error()
		}
		e, ok := drainEntry(d, z)
		return e, ok, ""
	}
	return soakApplied{what: what, anyMove: true,
		done: func() (bool, string) {
			e, ok, why := entry()
			switch {
			case why != "":
				return false, why
			case !ok:
				return false, "no drain entry for zone " + z
			case e.State == mcribapi.DrainDrained || e.Blocked != "":
				return true, ""
			}
			return false, fmt.Sprintf("zone %s %s, %d slots (target %d)", z, e.State, e.Slots, e.TargetSlots)
		},
		undo: func() {
			var code int
			var body []byte
			if !within(30*time.Second, func() bool {
				code, body = s.leaderAPI().do("DELETE", "/v1/drain/"+z, "", token)
				return code == http.StatusOK
			}) {
				s.t.Fatalf("DELETE /v1/drain/%s: %d %s", z, code, body)
			}
		},
		over: func() (bool, string) {
			e, ok, why := entry()
			switch {
			case why != "":
				return false, why
			case ok:
				return false, fmt.Sprintf("zone %s %s, %d slots of %d, blocked %q", z, e.State, e.Slots, e.BaselineSlots, e.Blocked)
			}
			return true, ""
		},
		after: func() { s.mon.planned(false) }}
}

// replace moves a holder's slot to a spare through POST
// /v1/nodes/{id}/replace (warm: the holder answers). The ceiling may
// refuse it (409), which is no fault of mcrib's.
func (s *soak) replace() soakApplied {
	n, slot, ok := s.holderOf(s.p.slotMap())
	if !ok {
		return soakApplied{what: "replace: no slot holder", undo: func() {}}
	}
	what := fmt.Sprintf("replace %s (slot %d)", n.id, slot)
	code, body := s.leaderAPI().do("POST", "/v1/nodes/"+n.id+"/replace", `{"reason":"soak"}`, token)
	if code != http.StatusOK {
		return s.refused("replace", what, code, body)
	}
	s.planned["replace"]++
	return soakApplied{what: what, moves: map[string]bool{n.id: true}, done: s.holdsNoSlot(n.id), undo: func() {}}
}

// maintenance puts a holder's service into Consul maintenance while its
// memcached answers: its slot moves warm (once the ceiling allows), and
// the maintenance ends once it has; the node comes back as a spare.
func (s *soak) maintenance() soakApplied {
	n, slot, ok := s.holderOf(s.p.slotMap())
	if !ok {
		return soakApplied{what: "maintenance: no slot holder", undo: func() {}}
	}
	if err := n.agent.Client.Agent().EnableServiceMaintenance(n.id, "soak"); err != nil {
		s.t.Fatalf("maintenance of %s: %v", n.id, err)
	}
	what := fmt.Sprintf("maintenance %s (slot %d)", n.id, slot)
	s.planned["maintenance"]++
	return soakApplied{what: what, moves: map[string]bool{n.id: true}, done: s.holdsNoSlot(n.id),
		undo: func() {
			if err := n.agent.Client.Agent().DisableServiceMaintenance(n.id); err != nil {
				s.t.Fatalf("ending the maintenance of %s: %v", n.id, err)
			}
		}}
}

// canResize: the soak doubles its pool once, 8 → 16 slots (18 memcached:
// two spares are left).
func (s *soak) canResize() bool { return !s.resized }

// resize doubles the pool's slots through PUT /v1/resize, its twins split
// in steps of a drawn size every 2 s; the pool settles once every twin is
// split. A refusal (409: no ready spare, a freeze) leaves it to a later
// step.
func (s *soak) resize() soakApplied {
	to := 2 * s.p.slotMap().NumSlots()
	step := s.stepPercent()
	what := fmt.Sprintf("resize → %d slots (steps of %d%% every 2s)", to, step)
	body := fmt.Sprintf(`{"num_slots": %d, "reason": "soak", "step_percent": %d, "step_interval": "2s"}`, to, step)
	code, answer := s.leaderAPI().do("PUT", "/v1/resize", body, token)
	if code != http.StatusOK {
		return s.refused("resize", what, code, answer)
	}
	s.resized = true
	s.planned["resize"]++
	split := func() (bool, string) {
		code, body := s.leaderAPI().get("/v1/resize")
		var doc mcribapi.ResizeDoc
		if code != http.StatusOK || json.Unmarshal(body, &doc) != nil {
			return false, fmt.Sprintf("GET /v1/resize: %d %s", code, short(string(body)))
		}
		if doc.Resize == nil || doc.Resize.State == mcribapi.ResizeDone {
			return true, ""
		}
		return false, fmt.Sprintf("resize %s, %d twins left, blocked %q", doc.Resize.State, doc.Resize.Twins, doc.Resize.Blocked)
	}
	return soakApplied{what: what, done: func() (bool, string) {
		sm := kvSlotMap(s.t, s.p.consul.Client, "default")
		if sm == nil || sm.NumSlots() < to {
			return false, "the first write not stored yet"
		}
		return true, ""
	}, undo: func() {}, over: split}
}
