package controlloop

import "github.com/mcrib/mcrib/cachenodes"

// Changed returns a channel that is closed when the slot map this process
// serves next changes in any field of its document (a slot's node, an
// address, a spare, the generation, updated_at). A caller that follows the
// map takes the channel first, then reads SlotMap, and waits on the
// channel only if that map is one it has seen; after the channel closes it
// calls Changed again. The map can change (and SlotMap show it) a moment
// before the channel closes, never after; a closed channel with no visible
// change is possible and means nothing. Safe for concurrent use.
func (l *Loop) Changed() <-chan struct{} {
	l.out.mu.Lock()
	defer l.out.mu.Unlock()
	if l.out.changed == nil {
		l.out.changed = make(chan struct{})
	}
	return l.out.changed
}

// notifyChanged closes the channel of Changed when m differs from the map
// it last published.
func (o *outputs) notifyChanged(m *cachenodes.SlotMap) {
	if m == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if p := o.published; p != nil && p.Equal(m) && p.UpdatedAt().Equal(m.UpdatedAt()) {
		return
	}
	o.published = m
	if o.changed != nil {
		close(o.changed)
		o.changed = nil
	}
}
