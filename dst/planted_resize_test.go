package dst

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/kvlayout"
	"github.com/mcrib/mcrib/mcribapi"
)

// startResize has the leader double the pool's slots, splitting pct% of
// the twins every d.
func startResize(t *testing.T, w *world, pct int, d time.Duration) {
	t.Helper()
	l := w.leaderReplica()
	if l == nil {
		t.Fatal("no leader to resize through")
	}
	n := storedMap(t, w).NumSlots()
	doc, err := l.proc.loop.StartResize(context.Background(), mcribapi.Resize{NumSlots: 2 * n, Reason: "plant", StepPercent: pct, StepInterval: d}, "plant")
	if err != nil {
		t.Fatalf("starting a resize: %v", err)
	}
	w.tr.add(w.now, "PLANT: a resize to %d slots (%s)", doc.Resize.To, doc.Resize.State)
}

// rogueSplit splits the twin of slot 0 to a spare, behind mcrib's back:
// warm from slot 0's holder as a split does, or cold.
func rogueSplit(t *testing.T, w *world, warm bool) {
	t.Helper()
	m := storedMap(t, w)
	n := spare(t, w, m)
	n.flushAll()
	w.chk.nodes[n.id].clean(w)
	rogueMap(t, w, func(s *cachenodes.SlotMapSpec) {
		tw := s.ResizedFrom
		if s.Twins == nil || !s.Twins[tw] {
			t.Fatalf("slot %d is no twin", tw)
		}
		s.Twins[tw] = false
		s.Slots[tw] = cachenodes.Node{ID: n.id, Addr: n.addr, AZ: n.host.zone}
		if warm {
			if s.Warming == nil {
				s.Warming = make([]*cachenodes.Warming, len(s.Slots))
			}
			s.Warming[tw] = &cachenodes.Warming{NodeID: s.Slots[0].ID, Addr: s.Slots[0].Addr, Until: w.start.Add(w.now + warmFor)}
		}
		s.Spares = slices.DeleteFunc(s.Spares, func(x cachenodes.Node) bool { return x.ID == n.id })
		s.Generation++
	})
}

// TestResizeAlone: a resize the loop carries out alone, in a quiet pool,
// breaks no rule, and its splits are seen.
func TestResizeAlone(t *testing.T) {
	res := plantedRun(t, at(60*time.Second, func(w *world) { startResize(t, w, 50, 10*time.Second) }), 3*time.Minute, nil)
	if res.Violation != nil {
		t.Fatal(res.Violation)
	}
	if res.Doublings != 1 || res.Splits == 0 {
		t.Fatalf("%d doublings and %d splits seen, want 1 and some", res.Doublings, res.Splits)
	}
}

func TestPlantedResizeTwin(t *testing.T) {
	res := plantedRun(t, at(60*time.Second, func(w *world) {
		startResize(t, w, 25, time.Hour)
		w.after(5*time.Second, "plant", func() {
			// The twin of slot 0 in another zone than slot 0's holder.
			var doc map[string]any
			body, _ := json.Marshal(storedMap(t, w))
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatal(err)
			}
			slots := doc["slots"].([]any)
			tw := slots[len(slots)/2].(map[string]any)
			tw["az"] = "elsewhere"
			doc["generation"] = doc["generation"].(float64) + 1
			body, _ = json.Marshal(doc)
			rogueWrite(w, body)
		})
	}), 2*time.Minute, nil)
	wantRule(t, res, ruleResizeTwin)
}

func TestPlantedResizeKeys(t *testing.T) {
	// A doubling whose new slots are vacant, not twins: half the keys
	// lose their memcached.
	res := plantedRun(t, at(60*time.Second, func(w *world) {
		rogueMap(t, w, func(s *cachenodes.SlotMapSpec) {
			n := len(s.Slots)
			s.Slots = append(s.Slots, make([]cachenodes.Node, n)...)
			if s.Warming != nil {
				s.Warming = append(s.Warming, make([]*cachenodes.Warming, n)...)
			}
			s.ResizedFrom = n
			s.Generation++
		})
	}), 2*time.Minute, nil)
	wantRule(t, res, ruleResizeKeys)
}

func TestPlantedResizeKeysColdSplit(t *testing.T) {
	// A twin split cold: its keys reach an empty memcached and no longer
	// fall back to slot 0's holder.
	res := plantedRun(t, at(60*time.Second, func(w *world) {
		startResize(t, w, 25, time.Hour)
		w.after(5*time.Second, "plant", func() { rogueSplit(t, w, false) })
	}), 2*time.Minute, nil)
	wantRule(t, res, ruleResizeKeys)
}

func TestPlantedResizePace(t *testing.T) {
	// A split 5 s after the doubling, under a step interval of a minute.
	res := plantedRun(t, at(60*time.Second, func(w *world) {
		startResize(t, w, 25, time.Minute)
		w.after(5*time.Second, "plant", func() { rogueSplit(t, w, true) })
	}), 2*time.Minute, nil)
	wantRule(t, res, ruleResizePace)
}

func TestPlantedResizeFrozen(t *testing.T) {
	// A split, at its pace, while an operator's freeze is stored.
	res := plantedRun(t, at(60*time.Second, func(w *world) {
		startResize(t, w, 25, 20*time.Second)
		w.after(2*time.Second, "plant", func() {
			w.consul.put(kvlayout.For(kvPrefix, poolName).Freeze(), []byte(`{"frozen":true,"reason":"plant"}`), 0, w.consul.bump())
		})
		w.after(30*time.Second, "plant", func() { rogueSplit(t, w, true) })
	}), 2*time.Minute, nil)
	wantRule(t, res, ruleResizeFrozen)
}

func TestPlantedResizeDrained(t *testing.T) {
	// A split, at its pace, while a drain is stored.
	res := plantedRun(t, at(60*time.Second, func(w *world) {
		startResize(t, w, 25, 20*time.Second)
		w.after(2*time.Second, "plant", func() {
			w.consul.put(kvlayout.For(kvPrefix, poolName).Drain(),
				[]byte(`{"zones":{"a":{"percent":100,"step_percent":10,"step_interval":"30s","reason":"plant","state":"draining"}}}`), 0, w.consul.bump())
		})
		w.after(30*time.Second, "plant", func() { rogueSplit(t, w, true) })
	}), 2*time.Minute, nil)
	wantRule(t, res, ruleResizeFrozen)
}

func TestPlantedResizeCount(t *testing.T) {
	// The slot count halved.
	res := plantedRun(t, at(60*time.Second, func(w *world) {
		rogueMap(t, w, func(s *cachenodes.SlotMapSpec) {
			n := len(s.Slots) / 2
			s.Slots = s.Slots[:n]
			if s.Warming != nil {
				s.Warming = s.Warming[:n]
			}
			s.Generation++
		})
	}), 2*time.Minute, nil)
	wantRule(t, res, ruleResizeCount)
}
