package e2e

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// The harness of the zone tests: a watcher of the slot map, and the judges
// of a drain's pace, the spread and the flushes. Zoned pools are built by
// newZonedPool (pool_test.go), and the API is read through apiClient
// (api_test.go).

// holders returns the set of nodes holding a slot of m.
func holders(m *cachenodes.SlotMap) map[string]bool {
	out := map[string]bool{}
	for _, n := range m.Slots() {
		if n.ID != "" {
			out[n.ID] = true
		}
	}
	return out
}

// zoneSlots counts the slots each zone holds in m, the zone of a node
// taken from zoneOf (the zone the test registered it in).
func zoneSlots(m *cachenodes.SlotMap, zoneOf map[string]string) map[string]int {
	out := map[string]int{}
	for _, n := range m.Slots() {
		if n.ID != "" {
			out[zoneOf[n.ID]]++
		}
	}
	return out
}

// warmingSlots returns the slots of m that carry a warming object.
func warmingSlots(m *cachenodes.SlotMap) []int {
	var out []int
	for i := range m.NumSlots() {
		if m.Warming(i) != nil {
			out = append(out, i)
		}
	}
	return out
}

// isSpare reports whether m lists id among its spares.
func isSpare(m *cachenodes.SlotMap, id string) bool {
	return slices.ContainsFunc(m.Spares(), func(n cachenodes.Node) bool { return n.ID == id })
}

// statusZones returns the status document's zones by name; an error when
// it has none.
func statusZones(st mcribapi.Status) (map[string]mcribapi.ZoneStatus, error) {
	if len(st.Zones) == 0 {
		return nil, fmt.Errorf("the status document has no zones")
	}
	out := map[string]mcribapi.ZoneStatus{}
	for _, z := range st.Zones {
		out[z.Zone] = z
	}
	return out, nil
}

// mustZones returns the zones of api's status document by name, or fails
// the test.
func mustZones(t *testing.T, api *apiClient) map[string]mcribapi.ZoneStatus {
	t.Helper()
	st, err := api.status()
	if err != nil {
		t.Fatal(err)
	}
	zones, err := statusZones(st)
	if err != nil {
		t.Fatal(err)
	}
	return zones
}

// drainEntry returns zone's entry of the drain document d, the zero entry
// and false when it has none.
func drainEntry(d mcribapi.DrainDoc, zone string) (mcribapi.DrainEntry, bool) {
	if e := d.Zones[zone]; e != nil {
		return *e, true
	}
	return mcribapi.DrainEntry{}, false
}

// drainBody is a PUT /v1/drain/{zone} body.
func drainBody(reason string, percent, step int, every string) string {
	return fmt.Sprintf(`{"reason":%q,"percent":%d,"step_percent":%d,"step_interval":%q}`, reason, percent, step, every)
}

// mapSample is one slot map seen, and when.
type mapSample struct {
	at time.Time
	m  *cachenodes.SlotMap
}

// mapWatcher follows the slot map with blocking reads of GET /v1/slotmap
// (wait=1s, so there is a look at least every second), on whichever of the
// replicas answers, and keeps every document it sees but those older (a
// lower generation) than one seen before. One that breaks the slot map's
// rules (cachenodes.ParseSlotMap refuses it) is kept as a violation.
type mapWatcher struct {
	apis func() []*apiClient

	mu      sync.Mutex
	samples []mapSample
	bad     []string
	last    error

	stop chan struct{}
	done chan struct{}
}

// watchMap starts a watcher over the replicas apis returns; it stops when
// the test ends.
func watchMap(t *testing.T, apis func() []*apiClient) *mapWatcher {
	w := &mapWatcher{apis: apis, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	t.Cleanup(w.close)
	return w
}

func (w *mapWatcher) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

func (w *mapWatcher) run() {
	defer close(w.done)
	index, which := "", 0
	for {
		select {
		case <-w.stop:
			return
		default:
		}
		apis := w.apis()
		if len(apis) == 0 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		a := apis[which%len(apis)]
		q := "wait=1s"
		if index != "" {
			q += "&index=" + index
		}
		m, idx, err := a.slotMap(q)
		now := time.Now()
		w.mu.Lock()
		w.last = err
		if errors.Is(err, cachenodes.ErrInvalidSlotMap) {
			w.bad = append(w.bad, fmt.Sprintf("%s: %v", now.Format("15:04:05.000"), err))
		}
		// A replica that took over may serve an older map for a moment: a
		// look behind one already seen is not the pool's state going
		// back, so it is not kept.
		if n := len(w.samples); err == nil && (n == 0 || m.Generation() >= w.samples[n-1].m.Generation()) {
			w.samples = append(w.samples, mapSample{at: now, m: m})
		}
		w.mu.Unlock()
		if err != nil {
			which++ // another replica, or the same one once it is back
			index = ""
			time.Sleep(50 * time.Millisecond)
			continue
		}
		index = idx
	}
}

// latest returns the last map seen, or nil.
func (w *mapWatcher) latest() *cachenodes.SlotMap {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.samples) == 0 {
		return nil
	}
	return w.samples[len(w.samples)-1].m
}

// since returns the maps seen at or after from.
func (w *mapWatcher) since(from time.Time) []mapSample {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []mapSample
	for _, s := range w.samples {
		if !s.at.Before(from) {
			out = append(out, s)
		}
	}
	return out
}

// from returns the maps seen at or after from, led by the last one seen
// before it (the state a change at from started from).
func (w *mapWatcher) from(from time.Time) []mapSample {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []mapSample
	for i, s := range w.samples {
		if !s.at.Before(from) {
			if len(out) == 0 && i > 0 {
				out = append(out, w.samples[i-1])
			}
			out = append(out, s)
		}
	}
	return out
}

// invalid returns every rule broken by a map seen so far.
func (w *mapWatcher) invalid() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.bad...)
}

// lastErr returns the error of the last read, for messages.
func (w *mapWatcher) lastErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// waitMap waits until cond holds for the latest map seen, and returns it;
// it fails the test with what after timeout.
func (w *mapWatcher) waitMap(t *testing.T, timeout time.Duration, what string, cond func(*cachenodes.SlotMap) bool) *cachenodes.SlotMap {
	t.Helper()
	var m *cachenodes.SlotMap
	if !within(timeout, func() bool {
		m = w.latest()
		return m != nil && cond(m)
	}) {
		t.Fatalf("timed out after %v waiting for %s; last map %s; last read error %v", timeout, what, describeMap(w.latest()), w.lastErr())
	}
	return m
}

// describeMap is a short description of a slot map for messages.
func describeMap(m *cachenodes.SlotMap) string {
	if m == nil {
		return "none"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "generation %d [", m.Generation())
	for i, n := range m.Slots() {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%d:%s", i, n.ID)
		if wm := m.Warming(i); wm != nil {
			fmt.Fprintf(&b, "(warm from %s)", wm.NodeID)
		}
	}
	b.WriteString("]")
	return b.String()
}

// paceViolation checks the pace of a drain (or return) in the maps seen:
// between any two looks less than window apart, zone's slots fell (rose,
// when rising) by at most maxStep. It returns the first violation, or "".
// window is the step interval less a margin for the delay of a look.
func paceViolation(samples []mapSample, zoneOf map[string]string, zone string, maxStep int, window time.Duration, rising bool) string {
	for i := range samples {
		ci := zoneSlots(samples[i].m, zoneOf)[zone]
		for j := i + 1; j < len(samples) && samples[j].at.Sub(samples[i].at) < window; j++ {
			cj := zoneSlots(samples[j].m, zoneOf)[zone]
			moved := ci - cj
			if rising {
				moved = cj - ci
			}
			if moved > maxStep {
				return fmt.Sprintf("zone %s went from %d to %d slots within %v (generation %d → %d), more than one step of %d in less than a step interval",
					zone, ci, cj, samples[j].at.Sub(samples[i].at).Round(time.Millisecond), samples[i].m.Generation(), samples[j].m.Generation(), maxStep)
			}
		}
	}
	return ""
}

// zoneCountsSeen lists the distinct successive slot counts of zone in
// samples, with when each was first seen: the drain's steps as seen.
func zoneCountsSeen(samples []mapSample, zoneOf map[string]string, zone string, from time.Time) string {
	var parts []string
	last := -1
	for _, s := range samples {
		if c := zoneSlots(s.m, zoneOf)[zone]; c != last {
			parts = append(parts, fmt.Sprintf("%d@%.1fs", c, s.at.Sub(from).Seconds()))
			last = c
		}
	}
	return strings.Join(parts, " → ")
}

// spreadProblem returns why counts (slots per zone) is not the even spread
// of slots over zones (each zone ⌊slots/Z⌋ or ⌈slots/Z⌉), or "".
func spreadProblem(counts map[string]int, zones []string, slots int) string {
	lo, hi := slots/len(zones), (slots+len(zones)-1)/len(zones)
	for _, z := range zones {
		if c := counts[z]; c < lo || c > hi {
			return fmt.Sprintf("zone %s holds %d slots, want %d to %d (slots per zone: %v; the spread rule in docs/api.md)", z, c, lo, hi, counts)
		}
	}
	return ""
}

// flushChanges compares the cmd_flush of every node after a phase with
// before: each node of entered must have been flushed exactly once more,
// every other node not at all. It returns the problems found.
func flushChanges(before, after map[string]uint64, entered map[string]bool) []string {
	var bad []string
	for _, id := range slices.Sorted(maps.Keys(before)) {
		a, ok := after[id]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s did not answer stats", id))
			continue
		}
		want := before[id]
		if entered[id] {
			want++
		}
		if a != want {
			what := "a node that entered no slot must not be flushed"
			if entered[id] {
				what = "a node entering a slot is flushed once, as part of its placement"
			}
			bad = append(bad, fmt.Sprintf("%s cmd_flush %d → %d, want %d (%s)", id, before[id], a, want, what))
		}
	}
	return bad
}

// flushesOfAnnounces compares the cmd_flush of every node after a phase
// with before, as flushChanges does, where announced counts the announces
// each node had in the phase (the events "slot move announced" of the
// leader since the phase began): a node is flushed once at each announce
// (an announce dropped and made again flushes it again, docs/api.md,
// "Announce, then serve"), a node that entered a slot was announced, and
// no other node is flushed.
func flushesOfAnnounces(before, after map[string]uint64, entered map[string]bool, announced map[string]int) []string {
	var bad []string
	for id := range entered {
		if announced[id] == 0 {
			bad = append(bad, fmt.Sprintf("%s entered a slot unannounced", id))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(before)) {
		a, ok := after[id]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s did not answer stats", id))
			continue
		}
		if want := before[id] + uint64(announced[id]); a != want {
			bad = append(bad, fmt.Sprintf("%s cmd_flush %d → %d, want %d (a node is flushed once at each of its %d announces, and no other node)", id, before[id], a, want, announced[id]))
		}
	}
	return bad
}

// announcesSince counts, by node, the announces among the events of api
// since seq (the events "slot move announced").
func announcesSince(t *testing.T, api *apiClient, seq uint64) map[string]int {
	t.Helper()
	evs, err := api.events()
	if err != nil {
		t.Fatalf("GET /v1/events: %v", err)
	}
	out := map[string]int{}
	for _, e := range evs {
		if e.Seq > seq && e.Kind == mcribapi.EventSlotMoveAnnounced {
			out[e.To]++
		}
	}
	return out
}

// lastSeq is the seq of the last event of api (0: none).
func lastSeq(t *testing.T, api *apiClient) uint64 {
	t.Helper()
	evs, err := api.events()
	if err != nil {
		t.Fatalf("GET /v1/events: %v", err)
	}
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].Seq
}

// entered returns the nodes holding a slot in after but not in before.
func entered(before, after *cachenodes.SlotMap) map[string]bool {
	out := map[string]bool{}
	was := holders(before)
	for id := range holders(after) {
		if !was[id] {
			out[id] = true
		}
	}
	return out
}

// short returns the first line of s, cut at 200 bytes, for messages that
// quote a command's output (a usage text would drown the failure).
func short(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
