package cachenodes

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/mcrib/mcrib/internal/testenv"
)

// eachAddr lists the addresses Each visits.
func eachAddr(t *testing.T, s *Selector) []string {
	t.Helper()
	var got []string
	if err := s.Each(func(a net.Addr) error { got = append(got, a.Network()+"/"+a.String()); return nil }); err != nil {
		t.Fatalf("Each: %v", err)
	}
	return got
}

func TestSelectorZeroValue(t *testing.T) {
	var s Selector
	addr, err := s.PickServer("k")
	if addr != nil || !errors.Is(err, ErrNoSlotMap) || !errors.Is(err, memcache.ErrNoServers) {
		t.Errorf("PickServer on the zero Selector = %v, %v; want ErrNoSlotMap wrapping memcache.ErrNoServers", addr, err)
	}
	if got := eachAddr(t, &s); len(got) != 0 {
		t.Errorf("Each on the zero Selector visited %v", got)
	}
	if s.SlotMap() != nil {
		t.Error("SlotMap() on the zero Selector is not nil")
	}
}

func TestSelectorRouting(t *testing.T) {
	m := mustSlotMap(t, SlotMapSpec{
		Slots:  []Node{mc1, {}, mc2, mc3, {}},
		Spares: []Node{mc9},
	})
	s, err := NewSelector(m)
	if err != nil {
		t.Fatalf("NewSelector: %v", err)
	}
	if s.SlotMap() != m {
		t.Error("SlotMap() is not the map given")
	}
	bySlot := []string{mc1.Addr, "", mc2.Addr, mc3.Addr, ""}
	seen := make(map[int]bool)
	for i := range 200 {
		key := fmt.Sprintf("key-%d", i)
		slot := KeySlot(key, 5)
		seen[slot] = true
		addr, err := s.PickServer(key)
		if want := bySlot[slot]; want != "" {
			if err != nil || addr == nil || addr.String() != want || addr.Network() != "tcp" {
				t.Fatalf("PickServer(%q) (slot %d) = %v, %v; want tcp %s", key, slot, addr, err, want)
			}
			continue
		}
		if addr != nil || !errors.Is(err, ErrVacantSlot) {
			t.Fatalf("PickServer(%q) (vacant slot %d) = %v, %v; want ErrVacantSlot", key, slot, addr, err)
		}
		if wantMsg := fmt.Sprintf("slot %d of 5", slot); !strings.Contains(err.Error(), wantMsg) {
			t.Errorf("error %q does not name %q", err, wantMsg)
		}
	}
	if len(seen) != 5 {
		t.Fatalf("200 keys hit only slots %v; the test needs every slot", seen)
	}
	want := []string{"tcp/" + mc1.Addr, "tcp/" + mc2.Addr, "tcp/" + mc3.Addr}
	if got := eachAddr(t, s); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Each visited %v, want %v (slot nodes in slot order, no spares)", got, want)
	}
}

func TestSelectorEachStopsAtError(t *testing.T) {
	s, err := NewSelector(mustSlotMap(t, SlotMapSpec{Slots: []Node{mc1, mc2, mc3}}))
	if err != nil {
		t.Fatalf("NewSelector: %v", err)
	}
	stop := errors.New("stop")
	calls := 0
	err = s.Each(func(net.Addr) error {
		calls++
		if calls == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 2 {
		t.Errorf("Each = %v after %d calls, want the callback's error after 2", err, calls)
	}
}

func TestSelectorSetSlotMapErrorChangesNothing(t *testing.T) {
	old := mustSlotMap(t, SlotMapSpec{Slots: []Node{mc1, mc2}})
	s, err := NewSelector(old)
	if err != nil {
		t.Fatalf("NewSelector: %v", err)
	}
	before := make(map[string]string)
	for i := range 50 {
		key := fmt.Sprint("k", i)
		a, err := s.PickServer(key)
		if err != nil {
			t.Fatalf("PickServer(%q): %v", key, err)
		}
		before[key] = a.String()
	}
	bad := []struct {
		name string
		m    *SlotMap
	}{
		{name: "port out of range", m: mustSlotMap(t, SlotMapSpec{Slots: []Node{mc3, {ID: "bad", Addr: "127.0.0.1:99999"}, {}}})},
		{name: "no port", m: mustSlotMap(t, SlotMapSpec{Slots: []Node{{ID: "bad", Addr: "127.0.0.1"}, mc3}})},
		{name: "nil map", m: nil},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.SetSlotMap(tt.m); err == nil {
				t.Fatal("SetSlotMap succeeded, want an error")
			}
			if s.SlotMap() != old {
				t.Error("SlotMap() changed after a failed SetSlotMap")
			}
			for key, want := range before {
				if a, err := s.PickServer(key); err != nil || a.String() != want {
					t.Fatalf("PickServer(%q) after a failed SetSlotMap = %v, %v; want %s", key, a, err, want)
				}
			}
		})
	}
	if _, err := NewSelector(bad[0].m); err == nil {
		t.Error("NewSelector with an unresolvable address succeeded")
	}

	// A good map does replace the old one.
	next := mustSlotMap(t, SlotMapSpec{Slots: []Node{mc3}})
	if err := s.SetSlotMap(next); err != nil {
		t.Fatalf("SetSlotMap: %v", err)
	}
	if a, err := s.PickServer("k1"); err != nil || a.String() != mc3.Addr {
		t.Errorf("PickServer after SetSlotMap = %v, %v; want %s", a, err, mc3.Addr)
	}
}

func TestSelectorPickServerDoesNotAllocate(t *testing.T) {
	s, err := NewSelector(mustSlotMap(t, SlotMapSpec{Slots: []Node{mc1, {}}}))
	if err != nil {
		t.Fatalf("NewSelector: %v", err)
	}
	long := strings.Repeat("x", 250)
	var served, vacant string
	for i := 0; served == "" || vacant == ""; i++ {
		key := fmt.Sprint(long[:200], i)
		if KeySlot(key, 2) == 0 {
			served = key
		} else {
			vacant = key
		}
	}
	for _, key := range []string{served, vacant} {
		if n := testing.AllocsPerRun(200, func() { _, _ = s.PickServer(key) }); n != 0 {
			t.Errorf("PickServer(slot %d key) allocates %v times per call, want 0", KeySlot(key, 2), n)
		}
	}
}

func TestSelectorConcurrentSwap(t *testing.T) {
	maps := []*SlotMap{
		mustSlotMap(t, SlotMapSpec{Slots: []Node{mc1, mc2}}),
		mustSlotMap(t, SlotMapSpec{Slots: []Node{mc2, mc3}}),
	}
	s, err := NewSelector(maps[0])
	if err != nil {
		t.Fatalf("NewSelector: %v", err)
	}
	valid := map[string]bool{mc1.Addr: true, mc2.Addr: true, mc3.Addr: true}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				if g == 0 && i%10 == 0 {
					if err := s.SetSlotMap(maps[i/10%2]); err != nil {
						errs <- err
						return
					}
				}
				a, err := s.PickServer(fmt.Sprint(i))
				if err != nil || !valid[a.String()] {
					errs <- fmt.Errorf("PickServer = %v, %v", a, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSelectorRoutesToRealMemcached(t *testing.T) {
	t.Parallel()
	a := testenv.StartMemcached(t)
	b := testenv.StartMemcached(t)
	m := mustSlotMap(t, SlotMapSpec{
		Pool:   "test",
		Slots:  []Node{{ID: "a", Addr: a.Addr}, {ID: "b", Addr: b.Addr}, {}},
		Spares: []Node{},
	})
	s, err := NewSelector(m)
	if err != nil {
		t.Fatalf("NewSelector: %v", err)
	}
	client := memcache.NewFromSelector(s)
	direct := map[int]*memcache.Client{0: memcache.New(a.Addr), 1: memcache.New(b.Addr)}
	other := map[int]*memcache.Client{0: direct[1], 1: direct[0]}

	perSlot := make(map[int]int)
	for i := range 50 {
		key := fmt.Sprintf("user:%d", i)
		slot := KeySlot(key, 3)
		perSlot[slot]++
		err := client.Set(&memcache.Item{Key: key, Value: []byte(key)})
		if slot == 2 {
			if !errors.Is(err, ErrVacantSlot) {
				t.Errorf("Set(%q) into the vacant slot: %v, want ErrVacantSlot", key, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Set(%q): %v", key, err)
		}
	}
	if perSlot[0] == 0 || perSlot[1] == 0 || perSlot[2] == 0 {
		t.Fatalf("keys per slot %v; the test needs every slot", perSlot)
	}
	for i := range 50 {
		key := fmt.Sprintf("user:%d", i)
		slot := KeySlot(key, 3)
		if slot == 2 {
			for _, c := range direct {
				if _, err := c.Get(key); !errors.Is(err, memcache.ErrCacheMiss) {
					t.Errorf("key %q of the vacant slot reached a server: %v", key, err)
				}
			}
			continue
		}
		it, err := direct[slot].Get(key)
		if err != nil || string(it.Value) != key {
			t.Errorf("key %q (slot %d) on its own memcached: %v, %v", key, slot, it, err)
		}
		if _, err := other[slot].Get(key); !errors.Is(err, memcache.ErrCacheMiss) {
			t.Errorf("key %q (slot %d) also on the other memcached: %v", key, slot, err)
		}
		it, err = client.Get(key)
		if err != nil || string(it.Value) != key {
			t.Errorf("key %q through the selector: %v, %v", key, it, err)
		}
	}
}
