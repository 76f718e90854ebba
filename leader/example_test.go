package leader_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/leader"
)

// Example shows how mcrib serve runs the election: the controller works
// only inside lead, writes the slot map with CASWithSession and steps down
// when a write is refused because the lock was lost.
func Example() {
	client, err := api.NewClient(api.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	const lockKey = "mcrib/default/leader"
	e, err := leader.New(leader.Options{Client: client, Key: lockKey, ID: "127.0.0.1:7070"})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Run(ctx, func(ctx context.Context, session string) {
		// Reconcile until ctx ends; write with the session:
		ok, err := leader.CASWithSession(ctx, client, lockKey, session, "mcrib/default/slotmap", []byte(`{}`), 0)
		if err == nil && !ok {
			e.StepDown() // someone else leads, or the map changed under us
		}
		<-ctx.Done()
	})
	// Followers serve reads and name the leader:
	fmt.Println(e.IsLeader(), e.LeaderID())
}

// ExampleNew shows that New checks its options without contacting Consul.
func ExampleNew() {
	_, err := leader.New(leader.Options{Key: "mcrib/default/leader", ID: "127.0.0.1:7070"})
	fmt.Println(errors.Is(err, leader.ErrInvalidOptions))
	fmt.Println(err)
	// Output:
	// true
	// leader: invalid options: Client is required
}
