package mcclient_test

import (
	"fmt"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcclient"
)

// Example routes keys by a slot map in which slot 1 is vacant: its keys
// miss, and are never sent to another node. An application follows the
// live map instead of setting one: Options.Source is a
// cachenodes.SlotMapFollower (Consul KV) or an mcclient.HTTPFollower
// (mcrib's API), Run follows it and replays queued deletes, and
// WaitForSlotMap waits for the first map (see Example_replicas).
func Example() {
	m, err := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{
		Pool:       "default",
		Generation: 7,
		Slots: []cachenodes.Node{
			{ID: "mc-01", Addr: "10.0.0.1:11211"},
			{}, // vacant
		},
	})
	if err != nil {
		panic(err)
	}
	c, err := mcclient.New(mcclient.Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	if err := c.SetSlotMap(m); err != nil {
		panic(err)
	}
	for _, key := range []string{"user:1", "user:4"} {
		if n, ok := c.NodeFor(key); ok {
			fmt.Printf("%s → slot %d on %s\n", key, cachenodes.KeySlot(key, 2), n.ID)
			continue
		}
		_, err := c.Get(key)
		fmt.Printf("%s → slot %d, vacant: Get misses: %v\n", key, cachenodes.KeySlot(key, 2), err == memcache.ErrCacheMiss)
	}
	// Output:
	// user:1 → slot 0 on mc-01
	// user:4 → slot 1, vacant: Get misses: true
}
