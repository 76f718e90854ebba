// Package warmcopy is the leader's copy of a warming slot's hot keys
// (docs/concepts.md, "The leader copies the hot keys"): while a slot
// warms, its warm source's keys of that slot, most recently used first,
// are copied into the new holder, so that the new holder is warm without
// waiting for every key to be read once.
//
// A Copier is built once from Options (the rate, the warm TTL, the clock,
// and the callback that says when this process last confirmed the leader
// lock); each warming move gets one Copy, which a context stops when the
// warming ends, counting into a Progress that the status reads while it
// runs. Copier.Totals sums every copy for the metrics.
//
// The copy speaks memcached 1.6's text protocol itself, on connections of
// its own, one to the source and one to the new holder. gomemcache, the
// client the rest of mcrib uses, has no `lru_crawler metadump` (the only
// way to list a memcached's keys with their last access and expiry) and
// no `stats` (the source's clock, which the dump's times are on); and its
// Add is one round trip per key, where a copy of small values at 20 MB/s
// (200,000 keys of 100 bytes a second) must send a batch of adds in one
// write and read their answers after. The hand-written part is what the
// copy sends, tested against Debian's memcached 1.6.18: `stats`;
// `lru_crawler metadump hash` (or `all`, whose answer is the same: a line
// per item, `key=<URL-encoded key>
// exp=<Unix seconds, or -1> la=<Unix seconds> cas=<unique>
// fetch=<yes|no> cls=<slab class> size=<bytes>`, each ending in "\n"
// only, the whole in END; BUSY while another crawl runs); one `gets` of a
// batch of keys (VALUE <key> <flags> <bytes> <cas>, a value over
// Options.MaxValueBytes skipped over unread); and pipelined `add` and
// `set` (STORED, NOT_STORED, SERVER_ERROR). Every answer line is bounded
// (4096 bytes, memcached's own limit for a metadump line), and each
// command's answer has a deadline.
//
// The dump walks memcached's hash table (`metadump hash`), not its LRU
// queues (`metadump all`): a walk of the queues misses the items that
// move between them while it walks, and a source that serves reads moves
// its hot items, the very ones to copy (on 1.6.18, `all` listed 5,872 of
// 6,000 items while the source answered gets; `hash` listed all, every
// time). A memcached without the hash walk (BADCLASS) is asked for `all`.
// A key written since the dump is not copied (its CAS unique changed: its
// writer's set reached the new holder too). Each value is read twice from
// the source (the check after the add reads it again); the rate counts
// it once.
package warmcopy
