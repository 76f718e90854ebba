package controlloop

import (
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// TestChanged publishes a sequence of maps and checks after each whether
// the channel taken before it was closed: on every change of the
// document, and not on a map equal to the last one.
func TestChanged(t *testing.T) {
	at := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	withSpec := func(edit func(*cachenodes.SlotMapSpec)) *cachenodes.SlotMap {
		spec := cachenodes.SlotMapSpec{Pool: "default", Generation: 3, UpdatedAt: at,
			Slots: []cachenodes.Node{{ID: "a", Addr: "10.0.0.1:11211"}, {ID: "b", Addr: "10.0.0.2:11211"}}}
		edit(&spec)
		m, err := cachenodes.NewSlotMap(spec)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	base := withSpec(func(*cachenodes.SlotMapSpec) {})
	steps := []struct {
		name   string
		m      *cachenodes.SlotMap
		closes bool
	}{
		{"the first map", base, true},
		{"the same map", base, false},
		{"an equal copy", withSpec(func(*cachenodes.SlotMapSpec) {}), false},
		{"nil", nil, false},
		{"a new address", withSpec(func(s *cachenodes.SlotMapSpec) { s.Slots[1].Addr = "10.0.0.3:11211" }), true},
		{"back to the first", base, true},
		{"a new spare", withSpec(func(s *cachenodes.SlotMapSpec) { s.Spares = []cachenodes.Node{{ID: "c", Addr: "10.0.0.4:11211"}} }), true},
		{"only updated_at", withSpec(func(s *cachenodes.SlotMapSpec) {
			s.Spares = []cachenodes.Node{{ID: "c", Addr: "10.0.0.4:11211"}}
			s.UpdatedAt = at.Add(time.Second)
		}), true},
		{"a new node and generation", withSpec(func(s *cachenodes.SlotMapSpec) { s.Slots[0].ID, s.Generation = "z", 4 }), true},
	}
	l := &Loop{}
	for _, s := range steps {
		ch := l.Changed()
		if again := l.Changed(); again != ch {
			t.Fatalf("%s: two calls without a change return different channels", s.name)
		}
		l.out.notifyChanged(s.m)
		select {
		case <-ch:
			if !s.closes {
				t.Errorf("%s: the channel closed", s.name)
			}
			if l.Changed() == ch {
				t.Errorf("%s: Changed returns the closed channel again", s.name)
			}
		default:
			if s.closes {
				t.Errorf("%s: the channel did not close", s.name)
			}
		}
	}
}
