package mcclient_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/mcclient"
)

// useCache follows the pool's slot map from mcrib's replicas, waits for
// the first map, then writes and reads a key. replicas are the base URLs
// of the pool's mcrib replicas: every replica serves the map, and the
// follower moves on from one that fails or serves an older map.
func useCache(ctx context.Context, replicas []string) error {
	follower, err := mcclient.NewHTTPFollower(mcclient.HTTPFollowerOptions{URLs: replicas})
	if err != nil {
		return err
	}
	c, err := mcclient.New(mcclient.Options{
		Source:  follower,
		Timeout: 200 * time.Millisecond,
		WarmTTL: time.Hour, // the --warm-ttl of mcrib serve
	})
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx) }) // follows the map, replays queued deletes
	defer func() { stop(); wg.Wait(); c.Close() }()

	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.WaitForSlotMap(wait); err != nil {
		return err // until the first map, every call fails with mcclient.ErrNoSlotMap
	}

	// A Set or Delete that returns an error wrapping mcclient.ErrQueued
	// did not reach every node it must: a delete of the key is queued and
	// replayed, but retry before you count on the old value being gone.
	if err := c.Set(&memcache.Item{Key: "user:2", Value: []byte("Ada")}); err != nil {
		return err
	}
	it, err := c.Get("user:2") // memcache.ErrCacheMiss on a miss
	if err != nil {
		return err
	}
	fmt.Printf("%s = %s\n", it.Key, it.Value)
	return nil
}

// Example_replicas runs useCache against three mcrib replicas, the first
// of them down, that serve a slot map of one memcached. They are
// stand-ins served by this process (startStandIns), so that the example
// runs anywhere; give useCache your replicas' URLs, like
// []string{"http://mcrib-a:7070", "http://mcrib-b:7070", "http://mcrib-c:7070"}.
func Example_replicas() {
	replicas, stop := startStandIns()
	defer stop()
	if err := useCache(context.Background(), replicas); err != nil {
		fmt.Println(err)
	}
	// Output: user:2 = Ada
}
