// Package mcclient is the Go client of a mcrib cache tier. It follows the
// pool's slot map (from Consul KV through cachenodes.SlotMapFollower, or
// from mcrib's GET /v1/slotmap?index=&wait= through HTTPFollower), routes
// every key to the node of its slot (cachenodes.KeySlot) over
// github.com/bradfitz/gomemcache, treats a vacant slot as a miss and never
// sends a key to another slot's node. Until it has a map every operation
// fails with ErrNoSlotMap; Client.WaitForSlotMap waits for the first.
//
// # Map order and freshness
//
// A Source delivers a cachenodes.SlotMapReading on every successful read,
// changed or not: the map and when the answering replica last read it
// from Consul (HTTPFollower: the answer's arrival less its X-Mcrib-Map-Age;
// SlotMapFollower: its own query's answer). Client.TakeReading takes the
// map only when its (generation, revision) is higher than that of the map
// it routes by (cachenodes.MapOrder): a lower one is refused with
// ErrOlderGeneration and changes nothing, and the followers skip it, the
// HTTP follower moving on to another replica. A replica cut off from
// Consul serves its last map; routing by an older map would send a slot
// back to a node that nobody invalidates any more. The same map read again
// only counts as fresh again. SetSlotMap takes a map as read now.
//
// The map is fresh while it is under cachenodes.FreshFor (10 s) old by the
// client's clock (Options.Clock), counted from that read (a reading of
// unknown age is not fresh): Client.MapAge, Client.MapFresh and the gauge
// mcrib_client_map_age_seconds say so. Both followers ask with a wait of at
// most cachenodes.FollowWait (5 s), so a map that does not change stays
// fresh while a replica reaches Consul; the HTTP follower leaves a replica
// whose map is older than that (ErrStaleReplica). A client whose map is not
// fresh reads no warming slot's old holder and makes no warm fill; it
// routes everything else alike.
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
//   - While the map names a node as a slot's incoming node, or as the new
//     holder of a slot with a warming object, its queue is replayed as
//     tombstones (see below), not deletes.
//   - Slot moves: a node that leaves every slot keeps its queue and is
//     still replayed to in the background (a client with an earlier map may
//     still read it; this one does not). When it is announced or placed in
//     a slot again mcrib has flushed it (every placement flushes the spare
//     before its announce), so its queue is dropped (reason="node_flushed");
//     so is the queue of a node that leaves the map altogether
//     (reason="node_gone"). An incoming node that becomes the slot's holder
//     keeps its queue: its tombstones are still owed.
//   - Client.Replay replays every queue in the caller's goroutine, for
//     callers that drive the client without Run.
//
// So a node that was unreachable comes back warm and without stale keys as
// long as no key was dropped: with this client, and only then, mcrib's
// --flush-after-unreachable may be raised above 0s (see the README).
//
// # Moves without a stale read
//
// A slot changes holder in steps: its new node B is announced (the map's
// incoming) for 12 s, then the slot moves to it, warm from its old holder
// A (the map's warming object) or cold; a warming ends at its until or
// sooner (ended_at), and its object stays in the map 12 s more. The client
// keeps the guarantee that no client whose map is fresh reads a value that
// a completed delete or set replaced, whichever map the other routes by.
// By the client's clock (docs/clients.md, "Moves without a stale read"):
//
//   - Announce: Get and Add go to the slot's holder A only. Set, Replace
//     and Delete go to A (a delete as a delete) and leave the key's
//     tombstone in B; they succeed only when both took their part (else
//     the error wraps ErrQueued, and ErrIncomingMissed when B did not).
//   - Warming (the object there, before until, no ended_at): Get reads B
//     and, on a miss (not a tombstone) while the map is fresh, A. A hit
//     there is stored into B with memcached's add (never over a value or a
//     tombstone) and the expiry Options.WarmTTL (default DefaultWarmTTL,
//     one hour: set it to the --warm-ttl of `mcrib serve`), sent within
//     cachenodes.FillWithin of the read of A and while the map is fresh
//     (else dropped); then A is read once more and a copy it no longer
//     holds as it was is undone with a tombstone, and the Get misses.
//     GetMulti does the same per key, one request per old holder. Set and
//     Replace go to A first, then to B; Delete deletes at A and leaves the
//     tombstone in B; success only when both took it. Add goes to B only.
//   - Ended (ended_at, or until passed) until ended_at (or until) plus
//     cachenodes.WarmWriteGrace: Get reads B only; Set and Replace go to B
//     and send A a delete of the key; Delete deletes at A and leaves the
//     tombstone in B; a failure at A fails the write. After that, until
//     the object is removed, B only, a delete still as a tombstone.
//   - When A does not take its part (it did not answer, or has deletes
//     queued it cannot take first), B still gets the write, a delete of
//     the key is queued for A and replayed when it answers, and the error
//     wraps ErrWarmSourceMissed and ErrQueued. A Delete in a slot with a
//     warming object answers nil when it is done, found or not (B got a
//     tombstone and cannot tell).
//   - The client stops reading A at until or ended_at, or at once when a
//     write to it failed, it did not answer a read, or it has queued
//     deletes it cannot replay first. That is shared by every table in
//     which the same A warms the same B (a slot and its twin, the tables
//     before and after a resize's doubling write), and so are the fills
//     and writes under way: within the client a fill does not copy over a
//     write of its key under way or begun since it read A, and a hit on B
//     while a fill of the key is unchecked is read through A instead.
//   - A map that removes a warming object sooner (an older leader did) does
//     not end the writes to A: they go on until the warming's until plus
//     WarmWriteGrace, also when A keeps a slot of its own (a split's
//     source) and in a table of another length.
//
// # Tombstones
//
// From the announce until the warming object is removed nothing sends
// delete to B: a delete there (the client's own, a replay, the undo of a
// copy) sets the key's tombstone, cachenodes.TombstoneItem (the value
// "mcrib-tombstone", flags 0, 15 s), so that no copy made with add lands
// over it. The client reads a tombstone as a miss in every slot at any time
// (Get, GetMulti; a Get that finds one does not read A), and its Add
// replaces one only by cas on it (Conn.CompareAndSwap). Other clients
// (mcrouter, twemproxy, plain gomemcache) read a tombstone as a value for
// up to its 15 s.
//
// gomemcache's CompareAndSwap, Touch, Increment and Decrement are not
// offered by the client, so there is nothing more to route.
//
// # Hot path
//
// The routing table is immutable (but for its map's freshness, one atomic
// word) and swapped with one atomic pointer store when the map changes: a
// Get takes no lock (a warm fill looks at the old holder's queue under its
// lock, briefly), allocates nothing beyond what gomemcache allocates, and
// is never held up by a map change.
package mcclient
