package mcclient

import (
	"errors"
	"fmt"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
)

// A tombstone (cachenodes.TombstoneItem: the value "mcrib-tombstone",
// flags 0, 15 s) is what a delete leaves in a slot's incoming node, or in
// a warming slot's new holder, from the announce until the warming object
// is removed: a copy made with add (a warm fill, the leader's copy) then
// never lands over the delete (docs/clients.md, "Tombstones"). The client
// reads a tombstone as a miss in every slot at any time, and its Add
// replaces one only by cas.

// missIfTombstone returns a Get's answer with a tombstone read as a miss.
func missIfTombstone(it *memcache.Item, err error) (*memcache.Item, error) {
	if err == nil && cachenodes.IsTombstone(it) {
		return nil, memcache.ErrCacheMiss
	}
	return it, err
}

// addOverTombstone is memcached's add of item on be, that also replaces a
// tombstone, by cas on the tombstone's CAS unique: a value any write left
// meanwhile stays. It answers memcache.ErrNotStored when a value is there
// (or took the tombstone's place).
func addOverTombstone(be Conn, item *memcache.Item) error {
	for range 2 { // a tombstone that expires between the add and the gets: add again, once
		err := be.Add(item)
		if !errors.Is(err, memcache.ErrNotStored) {
			return err
		}
		cur, err := be.Get(item.Key)
		switch {
		case errors.Is(err, memcache.ErrCacheMiss):
			continue
		case err != nil:
			return err
		case !cachenodes.IsTombstone(cur):
			return memcache.ErrNotStored
		}
		swap := *item
		swap.CasID = cur.CasID
		err = be.CompareAndSwap(&swap)
		if errors.Is(err, memcache.ErrCASConflict) || errors.Is(err, memcache.ErrCacheMiss) {
			return memcache.ErrNotStored
		}
		return err
	}
	return memcache.ErrNotStored
}

// setTombstone sets key's tombstone in be. With revert.Tombstones it
// deletes the key there instead, as clients did before tombstones: a copy
// made with add may then land over the delete.
func (c *Client) setTombstone(be Conn, key string) error {
	if !c.tombstones {
		if err := be.Delete(key); !errors.Is(err, memcache.ErrCacheMiss) {
			return err
		}
		return nil
	}
	return be.Set(cachenodes.TombstoneItem(key))
}

// tombstoneIncoming sets key's tombstone in b, a slot's incoming node,
// for a write of the slot during its announce. When b does not take it
// (it does not answer, or has a queue it cannot replay first) the
// tombstone is queued for b, replayed when it answers, and the error
// wraps ErrIncomingMissed and ErrQueued: the write did not complete.
func (c *Client) tombstoneIncoming(b *node, key string) error {
	if !b.ready() {
		b.enqueue(key)
		return fmt.Errorf("%w (%s): %w", ErrIncomingMissed, b.id, ErrQueued)
	}
	err := c.setTombstone(b.be, key)
	switch {
	case err == nil, errors.Is(err, memcache.ErrMalformedKey): // nothing can be stored under it
		return nil
	case Unreachable(err):
		b.unreachable(key)
	default:
		b.enqueue(key)
	}
	return fmt.Errorf("%w (%s): %w: %w", ErrIncomingMissed, b.id, ErrQueued, err)
}
