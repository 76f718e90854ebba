// Package mcclient is the Go client of a mcrib cache tier. It follows the
// pool's slot map (from Consul KV through cachenodes.SlotMapFollower, or
// from mcrib's GET /v1/slotmap?index=&wait= through HTTPFollower), routes
// every key to the node of its slot (cachenodes.KeySlot) over
// github.com/bradfitz/gomemcache, treats a vacant slot as a miss and never
// sends a key to another slot's node. Until it has a map every operation
// fails with ErrNoSlotMap; Client.WaitForSlotMap waits for the first.
//
// # Generation order
//
// The client never takes a map whose generation is lower than that of the
// map it routes by: SetSlotMap refuses it with ErrOlderGeneration and
// changes nothing, and both followers skip it (reporting the error), the
// HTTP follower moving on to another replica. A replica cut off from
// Consul serves its last map; routing by it would send a slot back to a
// node that nobody invalidates any more. A map of the same generation is
// taken: warming and spares change without a new generation.
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
//   - Slot moves: a node that leaves every slot keeps its queue and is
//     still replayed to in the background (a client with an earlier map may
//     still read it; this one does not). When it is placed in a slot again
//     mcrib has flushed it (every placement flushes the spare), so its queue
//     is dropped (reason="node_flushed"); so is the queue of a node that
//     leaves the map altogether (reason="node_gone").
//   - Client.Replay replays every queue in the caller's goroutine, for
//     callers that drive the client without Run.
//
// So a node that was unreachable comes back warm and without stale keys as
// long as no key was dropped: with this client, and only then, mcrib's
// --flush-after-unreachable may be raised above 0s (see the README).
//
// # Warm moves
//
// While a slot warms (the slot map names its previous holder in a warming
// object) the client keeps the client guarantee: no client reads a value
// that a completed delete or set replaced.
//
//   - Get reads the slot's new holder and, on a miss, the old one, until
//     the warming's until by the client's clock (Options.Clock). A hit
//     there is stored into the new holder with memcached's add (never
//     over a value the new holder got meanwhile) and the expiry
//     Options.WarmTTL (default DefaultWarmTTL, one hour: set it to the
//     --warm-ttl of `mcrib serve`), then the old holder is read once more
//     and, if the key is gone from it (a delete raced with the copy), the
//     copy is deleted from the new holder and the Get misses. GetMulti does
//     the same per key, one request per old holder.
//   - Set, Replace and Delete go to the old holder first, then to the new
//     one, until until plus ClockSkew by the client's clock (a client whose
//     clock is behind still reads the old holder); after until, and for a
//     warming that a later map ended early while the slot kept its holder,
//     the old holder gets a delete of the key. The result is the new
//     holder's (a Delete or Replace counts the key as there when either had
//     it), and success only when the old holder acknowledged too: when it
//     did not (it did not answer, or has deletes queued it cannot take
//     first), the new holder still gets the write, a delete of the key is
//     queued for the old holder and replayed when it answers, and the
//     error wraps ErrWarmSourceMissed and ErrQueued. Add goes to the new
//     holder only: it fills a miss, and the new holder answers reads
//     first.
//   - The client stops reading the old holder at until, or at once when a
//     write to it failed, it did not answer a read, or it has queued
//     deletes it cannot replay first. This is remembered per slot and old
//     holder across slot maps.
//   - Within the client a fill and a write of the same key do not trust
//     each other: a fill does not copy over a write under way or begun
//     since it read the old holder, and a hit on the new holder while a
//     fill of the key is unchecked is read through the old holder instead.
//     Between clients the check after the copy is all there is: another
//     client's read in the instant between one client's add and its check
//     can still see a copy of a value deleted meanwhile (memcached cannot
//     make the add conditional on the old holder's state).
//
// So a key deleted during the warming never comes back from the old
// holder: the delete reached it, or the Delete returned an error and the
// replay will.
//
// gomemcache's CompareAndSwap, Touch, Increment and Decrement are not
// offered by the client, so there is nothing more to route.
//
// # Hot path
//
// The routing table is immutable and swapped with one atomic pointer store
// when the map changes: a Get takes no lock (a warm fill looks at the old
// holder's queue under its lock, briefly), allocates nothing beyond what
// gomemcache allocates, and is never held up by a map change.
package mcclient
