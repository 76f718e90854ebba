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
// # Warm moves
//
// While a slot warms (the slot map names its previous holder in a warming
// object, CONTRACT.md section 7) and the client's clock (Options.Clock) is
// before the warming's until:
//
//   - Get reads the slot's new holder and, on a miss, the old one. A hit
//     there is stored into the new holder with memcached's add (never
//     over a value the new holder got meanwhile) and the expiry
//     Options.WarmTTL (default DefaultWarmTTL, one hour: set it to the
//     --warm-ttl of `mcrib serve`), then the old holder is read once more
//     and, if the key is gone from it (a delete raced with the copy), the
//     copy is deleted from the new holder and the Get misses. GetMulti does
//     the same per key, one request per old holder.
//   - Set, Replace and Delete go to the old holder first, then to the new
//     one; the result is the new holder's (a Delete or Replace counts the
//     key as there when either had it). Add goes to the new holder only:
//     it fills a miss, and the new holder answers reads first.
//   - The client stops using the old holder at until, or at once when a
//     write to it fails (any error but a miss of a delete or a "not
//     stored" of a replace), it does not answer a read, or it has queued
//     deletes it cannot replay first. This is remembered per slot and old
//     holder across slot maps. So a key deleted during the warming never
//     comes back from the old holder: the delete reached it, or the client
//     reads it no more.
//
// gomemcache's CompareAndSwap, Touch, Increment and Decrement are not
// offered by the client, so there is nothing more to route.
//
// # Hot path
//
// The routing table is immutable and swapped with one atomic pointer store
// when the map changes: a Get takes no lock, allocates nothing beyond what
// gomemcache allocates, and is never held up by a map change.
package mcclient
