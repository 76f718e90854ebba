package cachenodes

import (
	"fmt"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

// The timings of a map change that no client reads stale across
// (docs/api.md, "Moves without a stale read"). They are the contract's,
// shared by the leader that writes the map and the clients that route by
// it, whose clocks are taken to be within ClockSkew of each other.
const (
	// ClockSkew is how far apart the clocks of a pool's replicas and
	// clients may be.
	ClockSkew = time.Second
	// FreshFor is how old a client's map may be and still be fresh, by the
	// client's clock, counted from when the answering replica last read it
	// from Consul (X-Mcrib-Map-Age). A map that is not fresh reads no warm
	// source.
	FreshFor = 10 * time.Second
	// AnnounceLead is how long a slot carries its incoming node before the
	// node serves it: longer than FreshFor plus ClockSkew, so that every
	// client whose map is fresh when the node begins to serve has seen the
	// announce and leaves its tombstones there.
	AnnounceLead = 12 * time.Second
	// WarmWriteGrace is how long after a warming's reads end (ended_at, or
	// until) the clients still send the slot's sets and deletes to its warm
	// source, and the leader keeps the warming object: a client whose
	// fresh map still shows the warming reads the source until then.
	WarmWriteGrace = 12 * time.Second
	// FollowWait is the longest wait of one blocking read by the shipped
	// followers: a map that does not change is still read again this
	// often, so that its age stays well under FreshFor.
	FollowWait = 5 * time.Second
	// MapReadEvery is how often, at least, each replica reads the slot map
	// from Consul (the leader's successful write counts as a read).
	MapReadEvery = 2 * time.Second
	// FillWithin is how soon after its read of the warm source a client's
	// warm fill (or the leader's copy) must be sent, else it is dropped:
	// well inside TombstoneTTL, so that no copy outlives the tombstone of
	// a delete that raced with it.
	FillWithin = time.Second
	// TombstoneTTL is the relative expiry of a tombstone.
	TombstoneTTL = 15 * time.Second
)

// TombstoneValue is the value of a tombstone: what a delete leaves in a
// slot's incoming or new holder from the announce until the warming object
// is removed (docs/api.md, "Tombstones"), so that no copy made with add
// lands over the delete. The Go client reads it as a miss in every slot;
// other clients see it as a value until it expires.
const TombstoneValue = "mcrib-tombstone"

// TombstoneItem returns the tombstone of key: TombstoneValue, flags 0,
// expiring TombstoneTTL from now.
func TombstoneItem(key string) *memcache.Item {
	return &memcache.Item{Key: key, Value: []byte(TombstoneValue), Expiration: int32(TombstoneTTL / time.Second)}
}

// IsTombstone reports whether it holds a tombstone.
func IsTombstone(it *memcache.Item) bool {
	return it != nil && it.Flags == 0 && string(it.Value) == TombstoneValue
}

// Incoming names the node announced to take a slot (docs/api.md,
// "Announce, then serve"): from the write that announces it until
// ServesAt, clients read and write the slot's holder as before and leave
// tombstones in this node; at ServesAt the leader writes the move itself,
// warm until Until (cold when it equals ServesAt or the holder does not
// answer).
type Incoming struct {
	NodeID   string    `json:"node_id"`
	Addr     string    `json:"addr"`
	ServesAt time.Time `json:"serves_at"`
	Until    time.Time `json:"until"`
}

// Node returns the incoming node as a Node (without its zone).
func (in *Incoming) Node() Node { return Node{ID: in.NodeID, Addr: in.Addr} }

// Equal reports whether in and o announce the same node at the same
// instants; two nils are equal.
func (in *Incoming) Equal(o *Incoming) bool {
	if in == nil || o == nil {
		return in == o
	}
	return in.NodeID == o.NodeID && in.Addr == o.Addr && in.ServesAt.Equal(o.ServesAt) && in.Until.Equal(o.Until)
}

func (in *Incoming) utc() *Incoming {
	c := *in
	c.ServesAt, c.Until = c.ServesAt.UTC(), c.Until.UTC()
	return &c
}

// Incoming returns the node announced to slot i (a copy), or nil.
func (m *SlotMap) Incoming(i int) *Incoming {
	if m.incoming == nil || m.incoming[i] == nil {
		return nil
	}
	c := *m.incoming[i]
	return &c
}

// AnyIncoming reports whether some slot has an incoming node.
func (m *SlotMap) AnyIncoming() bool { return m.incoming != nil }

// IncomingOf returns the slot that node id is announced to (slot s for the
// node a slot and its twin carry), or -1. It takes constant time.
func (m *SlotMap) IncomingOf(id string) int {
	if i, ok := m.incomingOf[id]; ok {
		return i
	}
	return -1
}

func (m *SlotMap) copyIncoming() []*Incoming {
	if m.incoming == nil {
		return nil
	}
	out := make([]*Incoming, len(m.incoming))
	for i, in := range m.incoming {
		if in != nil {
			c := *in
			out[i] = &c
		}
	}
	return out
}

// checkIncoming validates spec.Incoming against the slot holders (seen,
// by ID; addrs, by address), the warm sources and the warmings checked,
// and returns the copy the map keeps (nil when no slot has one) with the
// slot of each incoming node: an incoming node has an address and both
// instants, is no slot holder, warm source or holder's address, is
// announced to one slot (and its twin) only, and a slot that warms has
// none. A twin carries slot s's incoming, or has its own (a split
// announced) while slot s has none.
func checkIncoming(spec SlotMapSpec, seen, addrs map[string]int, sources map[string]int, warming []*Warming) ([]*Incoming, map[string]int, error) {
	if spec.Incoming == nil {
		return nil, nil, nil
	}
	if len(spec.Incoming) != len(spec.Slots) {
		return nil, nil, fmt.Errorf("%w: %d incoming entries for %d slots", ErrInvalidSlotMap, len(spec.Incoming), len(spec.Slots))
	}
	var out []*Incoming
	of := make(map[string]int)
	srcAddrs := make(map[string]int, len(sources))
	for i, w := range warming {
		if w != nil {
			srcAddrs[w.Addr] = i
		}
	}
	for i, in := range spec.Incoming {
		if in == nil {
			if twinned(spec, i) && spec.Incoming[i-spec.ResizedFrom] != nil {
				return nil, nil, fmt.Errorf("%w: twin slot %d does not carry the incoming node of slot %d", ErrInvalidSlotMap, i, i-spec.ResizedFrom)
			}
			continue
		}
		if out == nil {
			out = make([]*Incoming, len(spec.Slots))
		}
		if twinned(spec, i) {
			s := i - spec.ResizedFrom
			if in.Equal(spec.Incoming[s]) {
				out[i] = in.utc() // carried with slot s, checked there
				continue
			}
			if spec.Incoming[s] != nil {
				return nil, nil, fmt.Errorf("%w: twin slot %d does not carry the incoming node of slot %d", ErrInvalidSlotMap, i, s)
			}
		}
		switch {
		case in.NodeID == "" || in.Addr == "":
			return nil, nil, fmt.Errorf("%w: the incoming node of slot %d has no node ID or address", ErrInvalidSlotMap, i)
		case in.ServesAt.IsZero() || in.Until.IsZero():
			return nil, nil, fmt.Errorf("%w: the incoming node of slot %d has no serves_at or until", ErrInvalidSlotMap, i)
		case in.Until.Before(in.ServesAt):
			return nil, nil, fmt.Errorf("%w: the incoming node of slot %d has its until before its serves_at", ErrInvalidSlotMap, i)
		case warming != nil && warming[i] != nil:
			return nil, nil, fmt.Errorf("%w: slot %d has an incoming node while it warms", ErrInvalidSlotMap, i)
		}
		if at, held := seen[in.NodeID]; held {
			return nil, nil, fmt.Errorf("%w: incoming node %q of slot %d also holds slot %d", ErrInvalidSlotMap, in.NodeID, i, at)
		}
		if at, src := sources[in.NodeID]; src {
			return nil, nil, fmt.Errorf("%w: incoming node %q of slot %d is also the warm source of slot %d", ErrInvalidSlotMap, in.NodeID, i, at)
		}
		if at, dup := addrs[in.Addr]; dup {
			return nil, nil, fmt.Errorf("%w: the incoming node of slot %d has address %s, held by slot %d", ErrInvalidSlotMap, i, in.Addr, at)
		}
		if at, dup := srcAddrs[in.Addr]; dup {
			return nil, nil, fmt.Errorf("%w: the incoming node of slot %d has address %s, the warm source of slot %d", ErrInvalidSlotMap, i, in.Addr, at)
		}
		if at, dup := of[in.NodeID]; dup {
			return nil, nil, fmt.Errorf("%w: node %q is announced to slot %d and to slot %d", ErrInvalidSlotMap, in.NodeID, at, i)
		}
		of[in.NodeID] = i
		out[i] = in.utc()
	}
	if out == nil {
		return nil, nil, nil
	}
	return out, of, nil
}

// MapOrder says whether a client that routes by current (nil: no map yet)
// takes next: only when next's (generation, revision), compared in that
// order, is higher (docs/api.md, "Warm moves": a missing revision counts
// as 0). A map of the same generation and revision is the same map: not
// taken, and no error. A lower one is refused with an error wrapping
// ErrOlderGeneration. Two maps of one generation that both lack a
// revision (written by an older mcrib) are ordered as that mcrib did: a
// map that differs is taken.
func MapOrder(current, next *SlotMap) (take bool, err error) {
	switch {
	case current == nil || next.generation > current.generation:
		return true, nil
	case next.generation < current.generation:
		return false, fmt.Errorf("%w: generation %d after %d", ErrOlderGeneration, next.generation, current.generation)
	case next.revision > current.revision:
		return true, nil
	case next.revision < current.revision:
		return false, fmt.Errorf("%w: revision %d of generation %d after revision %d", ErrOlderGeneration, next.revision, next.generation, current.revision)
	case next.revision == 0 && !next.Equal(current):
		return true, nil
	}
	return false, nil
}
