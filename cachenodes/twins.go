package cachenodes

import (
	"errors"
	"fmt"
	"time"
)

// MaxSlots is the largest slot count a pool may have, before or after a
// resize.
const MaxSlots = 4096

// ErrCannotDouble is wrapped by the error Double returns when the map
// cannot be doubled.
var ErrCannotDouble = errors.New("cachenodes: the slot map cannot be doubled")

// checkTwins validates spec's resize fields and returns how many twins it
// has: ResizedFrom is 0 or half the slots, and a twin s + ResizedFrom names
// exactly the node of slot s (or is vacant with it).
func checkTwins(spec SlotMapSpec) (int, error) {
	rf := spec.ResizedFrom
	if rf < 0 || (rf > 0 && 2*rf != len(spec.Slots)) {
		return 0, fmt.Errorf("%w: resized_from is %d with %d slots (it is half the slots of a resized pool)", ErrInvalidSlotMap, rf, len(spec.Slots))
	}
	if spec.Twins == nil {
		return 0, nil
	}
	if len(spec.Twins) != len(spec.Slots) {
		return 0, fmt.Errorf("%w: %d twin entries for %d slots", ErrInvalidSlotMap, len(spec.Twins), len(spec.Slots))
	}
	n := 0
	for i, twin := range spec.Twins {
		if !twin {
			continue
		}
		if rf == 0 || i < rf {
			return 0, fmt.Errorf("%w: slot %d is marked a twin but only slots from resized_from (%d) on can be", ErrInvalidSlotMap, i, rf)
		}
		if spec.Slots[i] != spec.Slots[i-rf] {
			return 0, fmt.Errorf("%w: twin slot %d names node %q, not the node %q of slot %d", ErrInvalidSlotMap, i, spec.Slots[i].ID, spec.Slots[i-rf].ID, i-rf)
		}
		n++
	}
	return n, nil
}

// twinned reports whether slot i of spec is a twin.
func twinned(spec SlotMapSpec, i int) bool {
	return spec.ResizedFrom > 0 && i < len(spec.Twins) && spec.Twins[i]
}

func (m *SlotMap) copyTwins() []bool {
	if m.twins == nil {
		return nil
	}
	return append([]bool(nil), m.twins...)
}

// ResizedFrom returns the slot count before the pool's last resize, or 0
// when it was never resized.
func (m *SlotMap) ResizedFrom() int { return m.resizedFrom }

// NumTwins returns how many slots are still twins.
func (m *SlotMap) NumTwins() int { return m.numTwins }

// IsTwin reports whether slot i is still a twin of slot
// i - ResizedFrom(): it names the same node and is not split yet.
func (m *SlotMap) IsTwin(i int) bool { return m.twins != nil && m.twins[i] }

// TwinOf returns the slot that slot i is a twin of, or -1.
func (m *SlotMap) TwinOf(i int) int {
	if m.IsTwin(i) {
		return i - m.resizedFrom
	}
	return -1
}

// TwinSlot returns the twin of slot s (s + ResizedFrom()) while it remains
// a twin, or -1.
func (m *SlotMap) TwinSlot(s int) int {
	if m.twins != nil && s < m.resizedFrom && m.twins[s+m.resizedFrom] {
		return s + m.resizedFrom
	}
	return -1
}

// Double returns the first write of a resize from N to 2N slots
// (docs/api.md, "Growing the pool"): slot s + N is a twin of slot s,
// naming the same node, address and zone and carrying the same warming
// and incoming node;
// resized_from is N; the generation and the revision rise by one and
// updated_at is now.
// Every key keeps its memcached: crc32(key) % 2N is s or s + N when
// crc32(key) % N is s. It refuses a map whose twins of an earlier resize
// remain, and a result above MaxSlots.
func (m *SlotMap) Double(now time.Time) (*SlotMap, error) {
	n := len(m.slots)
	switch {
	case m.numTwins > 0:
		return nil, fmt.Errorf("%w: %d twins of the resize from %d slots are not split yet", ErrCannotDouble, m.numTwins, m.resizedFrom)
	case 2*n > MaxSlots:
		return nil, fmt.Errorf("%w: %d slots would be more than %d", ErrCannotDouble, 2*n, MaxSlots)
	}
	spec := m.Spec()
	spec.Slots = append(spec.Slots, spec.Slots...)
	if spec.Warming != nil {
		twins := make([]*Warming, n)
		for i, w := range spec.Warming {
			if w != nil {
				c := *w
				twins[i] = &c
			}
		}
		spec.Warming = append(spec.Warming, twins...)
	}
	if spec.Incoming != nil {
		spec.Incoming = append(spec.Incoming, m.copyIncoming()...)
	}
	spec.Twins = make([]bool, 2*n)
	for i := n; i < 2*n; i++ {
		spec.Twins[i] = true
	}
	spec.ResizedFrom = n
	spec.Generation = m.generation + 1
	spec.Revision = m.revision + 1
	spec.UpdatedAt = now
	return NewSlotMap(spec)
}
