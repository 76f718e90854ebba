// Package mcclient is the Go client of a mcrib cache tier. It follows the
// pool's slot map (from Consul KV through cachenodes.SlotMapFollower, or
// from mcrib's GET /v1/slotmap?index=&wait= through HTTPFollower), routes
// every key to the node of its slot (cachenodes.KeySlot) over
// github.com/bradfitz/gomemcache, treats a vacant slot as a miss and never
// sends a key to another slot's node.
//
// # Delete replay
//
// Like mcrouter's AsynclogRoute, the client keeps the invalidations that
// could not reach their node and replays them when the node answers again:
//
//   - A Delete that fails because the node is unreachable (a network error
//     or a timeout, see Unreachable; not a miss) is queued for that node.
//   - A Set or Replace that fails so is an invalidating write: the value the
//     node still holds for the key may be stale, so a delete of the key is
//     queued. (Add, which only fills a miss, queues nothing.)
//   - Each node's queue is bounded (Options.MaxQueue, default 100,000 keys);
//     a key that does not fit is dropped and counted in
//     mcrib_client_replay_drops_total{reason="queue_full"}. A key already
//     queued is not queued twice.
//   - While a node's queue is not empty, every operation on that node first
//     replays the queue, in order. If the node still fails (or its backoff
//     has not passed, or another goroutine is replaying), a Get is a miss
//     (memcache.ErrCacheMiss), a Delete, Set or Replace is queued (the error
//     wraps ErrQueued), an Add answers memcache.ErrNotStored, and nothing
//     is sent; the next replay waits a
//     backoff on the injected clock. Run also replays queues in the
//     background, so a queue drains even when nothing reads its node.
//   - Slot moves: a node that leaves every slot keeps its queue but is not
//     replayed to (nothing reads from it). When it is placed in a slot again
//     mcrib has flushed it (every placement flushes the spare), so its queue
//     is dropped (reason="node_flushed"); so is the queue of a node that
//     leaves the map altogether (reason="node_gone").
//
// So a node that was unreachable comes back warm and without stale keys as
// long as no key was dropped: with this client, and only then, mcrib's
// --flush-after-unreachable may be raised above 0s (see the README).
//
// # Hot path
//
// The routing table is immutable and swapped with one atomic pointer store
// when the map changes: a Get takes no lock, allocates nothing beyond what
// gomemcache allocates, and is never held up by a map change.
package mcclient
