package warmcopy_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync/atomic"
	"time"

	"github.com/mcrib/mcrib/warmcopy"
)

// ExamplePick shows the order of a copy: of a source's items, the keys of
// the warming slot (here slot 0 of one: every key), most recently used
// first, without those about to expire.
func ExamplePick() {
	now := time.Unix(1_796_409_954, 0) // the source's clock (stats time)
	dump := []warmcopy.Entry{
		{Key: "user:1", Exp: -1, LastAccess: now.Unix() - 300},
		{Key: "user:2", Exp: now.Unix() + 5, LastAccess: now.Unix()},
		{Key: "user:3", Exp: now.Unix() + 600, LastAccess: now.Unix() - 2},
	}
	picked, skipped := warmcopy.Pick(dump, 0, 1, now, 0)
	for _, e := range picked {
		fmt.Println(e.Key)
	}
	fmt.Println("expiring:", skipped[warmcopy.SkipExpiring])
	// Output:
	// user:3
	// user:1
	// expiring: 1
}

// ExampleCopier_Copy shows how a leader runs the copy of one warming
// move: one Copier for the process, a Copy per move in a goroutine of its
// own, stopped by its context when the warming ends, its Progress read
// for the status while it runs. (It needs two memcacheds, so it is not
// run.)
func ExampleCopier_Copy() {
	var lockConfirmedAt atomic.Int64 // set by the leader's lock keepalive
	lockConfirmedAt.Store(time.Now().UnixNano())
	c, err := warmcopy.New(warmcopy.Options{
		Rate:            20_000_000, // --warm-copy-rate
		WarmTTL:         time.Hour,  // --warm-ttl
		LockConfirmedAt: func() time.Time { return time.Unix(0, lockConfirmedAt.Load()) },
	})
	if err != nil {
		log.Fatal(err)
	}
	warming, warmingOver := context.WithCancel(context.Background())
	p := new(warmcopy.Progress)
	done := make(chan error, 1)
	go func() {
		// Slot 5 of 8: a split's twin, warming from slot 1's holder.
		done <- c.Copy(warming, warmcopy.Move{Source: "10.0.0.1:11211", Target: "10.0.0.7:11211", Slot: 5, NumSlots: 8}, p)
	}()

	s := p.Stats() // copied_keys and copied_bytes of the new holder's entry
	fmt.Println(s.CopiedKeys, s.CopiedBytes)

	warmingOver() // the warming ended
	var unverified *warmcopy.UnverifiedError
	switch err := <-done; {
	case err == nil, errors.Is(err, context.Canceled):
	case errors.As(err, &unverified):
		// Set the tombstones again before the warming object goes.
		_ = c.Tombstone(context.Background(), unverified.Target, unverified.Keys...)
	default:
		log.Print(err) // a failed copy: the next pass may start it again
	}
	tot := c.Totals() // mcrib_warm_copied_keys_total, mcrib_warm_copied_bytes_total
	fmt.Println(tot.CopiedKeys, tot.CopiedBytes)
}
