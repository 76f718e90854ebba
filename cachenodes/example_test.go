package cachenodes_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/cachenodes"
)

func Example() {
	m, err := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{
		Pool:       "default",
		Generation: 1,
		Slots: []cachenodes.Node{
			{ID: "mc-1", Addr: "127.0.0.1:11211", AZ: "a"},
			{ID: "mc-2", Addr: "127.0.0.1:11212", AZ: "b"},
			{}, // vacant: its keys miss
			{ID: "mc-4", Addr: "127.0.0.1:11214", AZ: "a"},
		},
		Spares: []cachenodes.Node{{ID: "mc-9", Addr: "127.0.0.1:11219", AZ: "b"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, key := range []string{"user:2", "user:7", "user:42"} {
		slot := cachenodes.KeySlot(key, m.NumSlots())
		node := m.Slot(slot)
		if node.IsZero() {
			fmt.Printf("%s -> slot %d, vacant\n", key, slot)
			continue
		}
		fmt.Printf("%s -> slot %d, %s at %s\n", key, slot, node.ID, node.Addr)
	}

	// A gomemcache client routes the same way through a Selector:
	// memcache.NewFromSelector(selector).
	selector, err := cachenodes.NewSelector(m)
	if err != nil {
		log.Fatal(err)
	}
	addr, _ := selector.PickServer("user:2")
	fmt.Println("user:2 is read from", addr)
	if _, err := selector.PickServer("user:42"); errors.Is(err, cachenodes.ErrVacantSlot) {
		fmt.Println("user:42:", err)
	}
	// Output:
	// user:2 -> slot 0, mc-1 at 127.0.0.1:11211
	// user:7 -> slot 3, mc-4 at 127.0.0.1:11214
	// user:42 -> slot 2, vacant
	// user:2 is read from 127.0.0.1:11211
	// user:42: cachenodes: the key's slot is vacant: slot 2 of 4
}

// A client follows the pool's slot map in Consul KV and routes a
// gomemcache client by it; a corrupt or deleted map is reported and the
// last good one stays in force. (Not run: it needs a Consul agent.)
func ExampleSlotMapFollower() {
	client, err := api.NewClient(api.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	follower, err := cachenodes.NewSlotMapFollower(cachenodes.SlotMapFollowerOptions{
		Client: client,
		Key:    "mcrib/default/slotmap",
	})
	if err != nil {
		log.Fatal(err)
	}
	var selector cachenodes.Selector // no map yet: every key gets ErrNoSlotMap
	mc := memcache.NewFromSelector(&selector)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go follower.Run(ctx, func(r cachenodes.SlotMapReading) {
		if err := selector.SetSlotMap(r.Map); err != nil {
			log.Printf("slot map generation %d not applied: %v", r.Map.Generation(), err)
		}
	}, func(err error) {
		log.Printf("following the slot map: %v", err)
	})
	_ = mc.Set(&memcache.Item{Key: "user:2", Value: []byte("alice")})
}
