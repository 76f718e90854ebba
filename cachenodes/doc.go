// Package cachenodes describes a memcached cache tier as data: the nodes,
// the slot map that clients hash keys into, the Consul membership source
// that reports which nodes Consul lists, and the prober that asks each
// memcached directly whether it answers, what it holds and how it hits.
// Selector routes a github.com/bradfitz/gomemcache client by the slot map,
// with the key-to-slot rule KeySlot that every mcrib client shares, and
// SlotMapFollower keeps a client on the map stored in Consul KV. Both
// Consul watches, of the membership and of the map, are
// internal/consulwatch blocking queries.
//
// The slot map is an immutable snapshot: it is built and validated whole,
// then swapped in; nothing changes a SlotMap after NewSlotMap returns it.
package cachenodes
