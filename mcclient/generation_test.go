package mcclient

import (
	"errors"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/revert"
)

// TestSetSlotMapNeverGoesBack is known break 4 at the client: given
// generation 8, then 7 (read from a replica cut off from Consul),
// SetSlotMap used to route by 7, sending a slot back to a node nobody
// invalidates any more. Now it refuses 7 with ErrOlderGeneration and
// changes nothing; generation 8 again with a warming added is taken
// (warming moves no generation), and so is 9. With revert.GenerationOrder
// 7 is taken, as it was.
func TestSetSlotMapNeverGoesBack(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reverted revert.Set
	}{{"fixed", 0}, {"reverted", revert.Of(revert.GenerationOrder)}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, Options{}, tc.reverted)
			k := keysOfSlot(0, 2, 1)[0]
			gen8 := slotMap(t, 8, []string{"b", "c"}, "a")
			if err := c.SetSlotMap(gen8); err != nil {
				t.Fatal(err)
			}
			err := c.SetSlotMap(slotMap(t, 7, []string{"a", "c"}, "b"))
			n, _ := c.NodeFor(k)
			if tc.reverted != 0 {
				if err != nil || n.ID != "a" {
					t.Fatalf("reverted: generation 7 after 8: %v, slot 0 on %s; want it taken, as it was", err, n.ID)
				}
				return
			}
			if !errors.Is(err, ErrOlderGeneration) || c.SlotMap() != gen8 || n.ID != "b" {
				t.Fatalf("generation 7 after 8: %v, routing by generation %d, slot 0 on %s; want ErrOlderGeneration and nothing changed", err, c.SlotMap().Generation(), n.ID)
			}
			warm := warmMap(t, 8, []string{"b", "c"}, map[int]string{0: "a"}, epoch.Add(time.Minute))
			if err := c.SetSlotMap(warm); err != nil || c.SlotMap() != warm {
				t.Fatalf("generation 8 with a warming added: %v; want it taken", err)
			}
			if err := c.SetSlotMap(slotMap(t, 9, []string{"c", "b"}, "a")); err != nil {
				t.Fatalf("generation 9: %v", err)
			}
		})
	}
}
