package dst

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// resizeKeys is the fixed sample of keys the resize rules follow through
// a doubling: each must reach the same memcached after it as before.
var resizeKeys = func() []string {
	keys := make([]string, 256)
	for i := range keys {
		keys[i] = fmt.Sprintf("resize-sample-%d", i)
	}
	return keys
}()

// resizeTruth is what the checker follows of the resizes.
type resizeTruth struct {
	// doublings and splits count the stored maps' doubling writes and
	// split twins.
	doublings, splits int
	// lastStep is when the stored map was last doubled, or announced a
	// split that has served.
	lastStep time.Duration
}

// resizeEntry returns the stored resize entry, nil when there is none or
// it does not parse.
func (c *checker) resizeEntry() *mcribapi.ResizeEntry {
	e := c.w.consul.kv[poolKeys.Resize()]
	if e == nil {
		return nil
	}
	doc, err := mcribapi.ParseStoredResize(e.value)
	if err != nil {
		return nil
	}
	return doc.Resize
}

// rawSlotMap is the stored slot map document as written, read before
// cachenodes.ParseSlotMap judges it, so that a twin that breaks its rule
// is named by resize-twin rather than refused as any invalid map.
type rawSlotMap struct {
	ResizedFrom int `json:"resized_from"`
	Slots       []struct {
		cachenodes.Node
		Warming *cachenodes.Warming `json:"warming"`
		TwinOf  *int                `json:"twin_of"`
	} `json:"slots"`
}

// checkTwinsRaw checks the twins of a stored slot map document: each twin
// s + resized_from names the node, address and zone of slot s and carries
// its warming (resize-twin). A compressed document is left to ParseSlotMap.
func (c *checker) checkTwinsRaw(body []byte) {
	if bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
		return
	}
	var doc rawSlotMap
	if json.Unmarshal(body, &doc) != nil {
		return
	}
	for i, sl := range doc.Slots {
		if sl.TwinOf == nil {
			continue
		}
		s := *sl.TwinOf
		if doc.ResizedFrom <= 0 || s != i-doc.ResizedFrom || s < 0 {
			c.fail(ruleResizeTwin, 0, "slot %d is a twin of slot %d, but resized_from is %d", i, s, doc.ResizedFrom)
			return
		}
		of := doc.Slots[s]
		if sl.Node != of.Node {
			c.fail(ruleResizeTwin, 0, "twin slot %d names %s at %s in zone %q, slot %d %s at %s in zone %q", i, sl.ID, sl.Addr, sl.AZ, s, of.ID, of.Addr, of.AZ)
			return
		}
		if !sl.Warming.Equal(of.Warming) {
			c.fail(ruleResizeTwin, 0, "twin slot %d warms from %s, slot %d from %s: a twin carries its slot's warming", i, warmText(sl.Warming), s, warmText(of.Warming))
			return
		}
	}
}

func warmText(ws *cachenodes.Warming) string {
	if ws == nil {
		return "nothing"
	}
	return ws.NodeID + " at " + ws.Addr
}

// keyRoute is where a key goes under a map: its slot's holder and, while
// the slot warms, the warm source it falls back to.
func keyRoute(m *cachenodes.SlotMap, key string) (string, string) {
	return slotRoute(m, cachenodes.KeySlot(key, m.NumSlots()))
}

// slotRoute is where the keys of slot s go under m.
func slotRoute(m *cachenodes.SlotMap, s int) (string, string) {
	warm := ""
	if ws := m.Warming(s); ws != nil {
		warm = ws.Addr
	}
	return m.Slot(s).Addr, warm
}

// checkResize checks one change of the stored map against the resize
// rules and returns the slots split by it (twins in prev, not in m).
func (c *checker) checkResize(prev, m *cachenodes.SlotMap) map[int]bool {
	w := c.w
	rt := &c.resize
	np, n := prev.NumSlots(), m.NumSlots()
	switch {
	case n < np:
		c.fail(ruleResizeCount, 0, "num_slots went down from %d to %d", np, n)
		return nil
	case n != np && (n != 2*np || m.ResizedFrom() != np):
		c.fail(ruleResizeCount, 0, "num_slots went from %d to %d with resized_from %d: only a doubling changes it, recording the count before", np, n, m.ResizedFrom())
		return nil
	case n == np && m.ResizedFrom() != prev.ResizedFrom():
		c.fail(ruleResizeCount, 0, "resized_from went from %d to %d while num_slots stayed %d", prev.ResizedFrom(), m.ResizedFrom(), n)
		return nil
	}
	if n == 2*np {
		// The doubling write: every key still reaches the same memcached,
		// and falls back to the same warm source. The pass that doubles
		// may also replace a holder or fill a vacant slot s in the same
		// write: that slot's keys then reach its new holder, at s and at
		// its twin alike.
		for _, k := range resizeKeys {
			a0, w0 := keyRoute(prev, k)
			a1, w1 := keyRoute(m, k)
			s := cachenodes.KeySlot(k, np)
			why := ""
			if prev.Slot(s) != m.Slot(s) || !prev.Warming(s).Equal(m.Warming(s)) {
				a0, w0 = slotRoute(m, s)
				why = fmt.Sprintf(" (slot %d, which this write moves to %s, reaches %s)", s, m.Slot(s).ID, routeText(a0, w0))
			}
			if a0 != a1 || w0 != w1 {
				c.fail(ruleResizeKeys, 0, "doubling from %d to %d slots moved key %q from %s to %s%s", np, n, k, routeText(keyRoute(prev, k)), routeText(a1, w1), why)
				return nil
			}
		}
		for s := range np {
			if prev.Slot(s).ID != m.Slot(s).ID {
				w.tr.add(w.now, "resize: the doubling write also moves slot %d from %q to %q", s, prev.Slot(s).ID, m.Slot(s).ID)
			}
		}
		rt.doublings++
		rt.lastStep = w.now
		w.tr.add(w.now, "resize: the stored map doubled from %d to %d slots", np, n)
		return nil
	}
	rf := m.ResizedFrom()
	split := map[int]bool{}
	// A split step starts at its announce: its pace is the announces'.
	stepped := time.Duration(-1)
	for i := rf; rf > 0 && i < n; i++ {
		if !prev.IsTwin(i) || m.IsTwin(i) {
			continue
		}
		split[i] = true
		at := w.now
		if a, ok := c.incoming[i]; ok && a.node == m.Slot(i).ID {
			at = a.at
		}
		stepped = max(stepped, at)
		s := i - rf
		ws := m.Warming(i)
		if ws == nil || ws.NodeID != prev.Slot(i).ID || ws.Addr != prev.Slot(i).Addr {
			c.fail(ruleResizeKeys, 0, "twin %d of slot %d split from %s to %s warming from %s: its keys no longer reach slot %d's holder %s",
				i, s, prev.Slot(i).ID, m.Slot(i).ID, warmText(ws), s, prev.Slot(i).ID)
			return nil
		}
	}
	if len(split) == 0 {
		return split
	}
	rt.splits += len(split)
	if w.consul.kv[poolKeys.Freeze()] != nil {
		c.fail(ruleResizeFrozen, 0, "%d twins split while an operator's freeze is stored", len(split))
		return nil
	}
	if zones := c.drainedZones(); len(zones) > 0 {
		c.fail(ruleResizeFrozen, 0, "%d twins split while a drain is stored (zones %v): a drain pauses the splits", len(split), slices.Sorted(maps.Keys(zones)))
		return nil
	}
	e := c.resizeEntry()
	if e == nil {
		return split
	}
	if stepped <= rt.lastStep {
		return split // announced in a step already counted
	}
	if gap := stepped - rt.lastStep; gap < e.Interval()-2*maxSkew {
		c.fail(ruleResizePace, 0, "%d twins split in a step announced %v after the last step (at %.3fs), under the step interval %v less the clocks' %v",
			len(split), gap, rt.lastStep.Seconds(), e.Interval(), 2*maxSkew)
		return nil
	}
	rt.lastStep = stepped
	return split
}

func routeText(addr, warm string) string {
	if addr == "" {
		addr = "a vacant slot"
	}
	if warm != "" {
		addr += " (falling back to " + warm + ")"
	}
	return addr
}
