package cachenodes

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ErrInvalidSlotMap is wrapped by every error NewSlotMap and ParseSlotMap
// return for a document that breaks the slot map's rules.
var ErrInvalidSlotMap = errors.New("cachenodes: invalid slot map")

// SlotMap is an immutable snapshot of which node serves which slot, plus the
// spares waiting without a slot. The zero value is not a valid map; build
// one with NewSlotMap or ParseSlotMap. A SlotMap is safe for concurrent use
// because nothing changes it after it is built.
type SlotMap struct {
	pool       string
	generation uint64
	revision   uint64
	updatedAt  time.Time
	slots      []Node
	spares     []Node
	// warming[i] is slot i's warm source; nil when no slot warms.
	warming []*Warming
	// incoming[i] is the node announced to take slot i (announce.go);
	// nil when no slot has one.
	incoming []*Incoming
	// incomingOf maps each incoming node's ID to the slot it is announced
	// to (slot s, not its twin); nil when no slot has one.
	incomingOf map[string]int
	// sourceOf maps each warm source's ID to the slot it warms; nil when
	// no slot warms.
	sourceOf map[string]int
	// slotOf maps each slot holder's ID to its slot; built once by
	// NewSlotMap (it is the duplicate check's set), read-only after. A
	// node that also holds a twin maps to slot s, not to its twin.
	slotOf map[string]int
	// resizedFrom is the slot count before the last resize; 0 when the
	// pool was never resized.
	resizedFrom int
	// twins[i] is true while slot i is a twin of slot i - resizedFrom
	// (docs/api.md, "Growing the pool"); nil when no twin remains.
	twins    []bool
	numTwins int
}

// SlotMapSpec is the plain description NewSlotMap validates into a SlotMap.
// Slots[i] is the node of slot i; a zero Node marks a vacant slot.
type SlotMapSpec struct {
	Pool       string
	Generation uint64
	// Revision rises by one with every write of the map (a change of
	// warming, incoming or spares included), so that two maps of one
	// generation are ordered (MapOrder); 0 in a map of an older mcrib.
	Revision  uint64
	UpdatedAt time.Time
	Slots     []Node
	Spares    []Node
	// Warming, when not nil, has one entry per slot: the warm source of a
	// slot whose new holder is being warmed from its previous one
	// (docs/api.md, "Warm moves"), nil for a slot that does not warm.
	Warming []*Warming
	// Incoming, when not nil, has one entry per slot: the node announced
	// to take the slot (docs/api.md, "Announce, then serve"), nil for a
	// slot without one.
	Incoming []*Incoming
	// ResizedFrom is the slot count before the last resize (half of
	// len(Slots)); 0 when the pool was never resized.
	ResizedFrom int
	// Twins, when not nil, has one entry per slot: true for a slot
	// s + ResizedFrom that is still a twin of slot s, naming the same node
	// (or vacant with it) and carrying the same warming.
	Twins []bool
}

// Warming names the previous holder of a slot that serves as its new
// holder's warm source until Until (docs/api.md, "Warm moves"). Clients read
// the new holder and, on a miss, this node; they stop at Until by their own
// clock, or at once on seeing EndedAt, and send the slot's sets and
// deletes to this node too until WritesUntil.
type Warming struct {
	NodeID string    `json:"node_id"`
	Addr   string    `json:"addr"`
	Until  time.Time `json:"until"`
	// EndedAt is set when the warming ended before Until (docs/api.md, "An
	// ended warming still protects lagging readers"): the object stays in
	// the map for WarmWriteGrace more, for the writes only.
	EndedAt time.Time `json:"ended_at,omitzero"`
}

// Ended reports whether the warming ended before its until.
func (w *Warming) Ended() bool { return !w.EndedAt.IsZero() }

// ReadsUntil returns when clients stop reading the warm source: EndedAt
// when the warming ended early, else Until.
func (w *Warming) ReadsUntil() time.Time {
	if w.Ended() && w.EndedAt.Before(w.Until) {
		return w.EndedAt
	}
	return w.Until
}

// WritesUntil returns when clients stop sending the slot's sets and
// deletes to the warm source: ReadsUntil plus WarmWriteGrace. The leader
// removes the object then, never sooner.
func (w *Warming) WritesUntil() time.Time { return w.ReadsUntil().Add(WarmWriteGrace) }

// Node returns the warm source as a Node (without its zone).
func (w *Warming) Node() Node { return Node{ID: w.NodeID, Addr: w.Addr} }

// NewSlotMap validates spec and returns the snapshot it describes. It
// refuses a map with no slots, a node ID that appears twice (in slots or
// spares), a slot node without an address, and a spare that is vacant. The
// slices are copied, so the caller may reuse spec.
func NewSlotMap(spec SlotMapSpec) (*SlotMap, error) {
	if len(spec.Slots) == 0 {
		return nil, fmt.Errorf("%w: it has no slots", ErrInvalidSlotMap)
	}
	numTwins, err := checkTwins(spec)
	if err != nil {
		return nil, err
	}
	// seen maps a slot holder's ID to its slot; error texts are only
	// formatted when there is an error.
	seen := make(map[string]int, len(spec.Slots))
	addrs := make(map[string]int, len(spec.Slots))
	for i, n := range spec.Slots {
		if numTwins > 0 && spec.Twins[i] {
			continue // the node of slot s, checked there
		}
		if n.IsZero() {
			if n.Addr != "" || n.AZ != "" {
				return nil, fmt.Errorf("%w: vacant slot %d has an address or zone", ErrInvalidSlotMap, i)
			}
			continue
		}
		if n.Addr == "" {
			return nil, fmt.Errorf("%w: node %q in slot %d has no address", ErrInvalidSlotMap, n.ID, i)
		}
		if at, dup := seen[n.ID]; dup {
			return nil, fmt.Errorf("%w: node %q appears in slot %d and in slot %d", ErrInvalidSlotMap, n.ID, i, at)
		}
		seen[n.ID] = i
		if at, dup := addrs[n.Addr]; dup {
			return nil, fmt.Errorf("%w: address %s is held by slot %d and by slot %d", ErrInvalidSlotMap, n.Addr, at, i)
		}
		addrs[n.Addr] = i
	}
	warming, sources, err := checkWarming(spec, seen)
	if err != nil {
		return nil, err
	}
	incoming, incomingOf, err := checkIncoming(spec, seen, addrs, sources, warming)
	if err != nil {
		return nil, err
	}
	// Spares sorted by ID (as mcrib writes them) are checked for
	// duplicates among themselves by their neighbours; others by a set.
	sorted := slices.IsSortedFunc(spec.Spares, func(a, b Node) int { return strings.Compare(a.ID, b.ID) })
	var spareSet map[string]bool
	if !sorted {
		spareSet = make(map[string]bool, len(spec.Spares))
	}
	for k, n := range spec.Spares {
		if n.IsZero() {
			return nil, fmt.Errorf("%w: a spare has no node ID", ErrInvalidSlotMap)
		}
		if at, dup := seen[n.ID]; dup {
			return nil, fmt.Errorf("%w: spare %q also appears in slot %d", ErrInvalidSlotMap, n.ID, at)
		}
		if w, ok := sources[n.ID]; ok {
			return nil, fmt.Errorf("%w: spare %q is also the warm source of slot %d", ErrInvalidSlotMap, n.ID, w)
		}
		if at, ok := incomingOf[n.ID]; ok {
			return nil, fmt.Errorf("%w: spare %q is also the node announced to slot %d", ErrInvalidSlotMap, n.ID, at)
		}
		if (sorted && k > 0 && spec.Spares[k-1].ID == n.ID) || spareSet[n.ID] {
			return nil, fmt.Errorf("%w: spare %q also appears in the spares", ErrInvalidSlotMap, n.ID)
		}
		if !sorted {
			spareSet[n.ID] = true
		}
	}
	m := &SlotMap{
		pool:        spec.Pool,
		generation:  spec.Generation,
		revision:    spec.Revision,
		updatedAt:   spec.UpdatedAt.UTC(),
		slots:       append([]Node(nil), spec.Slots...),
		spares:      append([]Node(nil), spec.Spares...),
		warming:     warming,
		sourceOf:    sources,
		incoming:    incoming,
		incomingOf:  incomingOf,
		slotOf:      seen,
		resizedFrom: spec.ResizedFrom,
		numTwins:    numTwins,
	}
	if numTwins > 0 {
		m.twins = append([]bool(nil), spec.Twins...)
	}
	return m, nil
}

// checkWarming validates spec.Warming against the slot holders seen and
// returns the copy the map keeps (nil when no slot warms): a warm source
// belongs to a held slot, is not a slot holder itself, has an address and
// an until, and warms one slot only.
func checkWarming(spec SlotMapSpec, seen map[string]int) ([]*Warming, map[string]int, error) {
	if spec.Warming == nil {
		return nil, nil, nil
	}
	if len(spec.Warming) != len(spec.Slots) {
		return nil, nil, fmt.Errorf("%w: %d warming entries for %d slots", ErrInvalidSlotMap, len(spec.Warming), len(spec.Slots))
	}
	var out []*Warming
	sources := make(map[string]int)
	for i, w := range spec.Warming {
		if twinned(spec, i) {
			// A twin carries slot s's warming, checked there.
			if !w.Equal(spec.Warming[i-spec.ResizedFrom]) {
				return nil, nil, fmt.Errorf("%w: twin slot %d does not carry the warming of slot %d", ErrInvalidSlotMap, i, i-spec.ResizedFrom)
			}
			if w != nil {
				if out == nil {
					out = make([]*Warming, len(spec.Slots))
				}
				out[i] = w.utc()
			}
			continue
		}
		if w == nil {
			continue
		}
		switch {
		case spec.Slots[i].IsZero():
			return nil, nil, fmt.Errorf("%w: vacant slot %d has a warm source", ErrInvalidSlotMap, i)
		case w.NodeID == "" || w.Addr == "":
			return nil, nil, fmt.Errorf("%w: the warm source of slot %d has no node ID or address", ErrInvalidSlotMap, i)
		case w.Until.IsZero():
			return nil, nil, fmt.Errorf("%w: the warming of slot %d has no until", ErrInvalidSlotMap, i)
		}
		if at, held := seen[w.NodeID]; held && !(spec.ResizedFrom > 0 && at == i-spec.ResizedFrom) {
			// The one exception is a split: slot s's holder warms the
			// node its twin went to and keeps slot s.
			return nil, nil, fmt.Errorf("%w: warm source %q of slot %d also holds slot %d", ErrInvalidSlotMap, w.NodeID, i, at)
		}
		if at, dup := sources[w.NodeID]; dup {
			return nil, nil, fmt.Errorf("%w: node %q is the warm source of slot %d and of slot %d", ErrInvalidSlotMap, w.NodeID, at, i)
		}
		sources[w.NodeID] = i
		if out == nil {
			out = make([]*Warming, len(spec.Slots))
		}
		out[i] = w.utc()
	}
	if out == nil {
		return nil, nil, nil
	}
	return out, sources, nil
}

// utc returns a copy of w with its instants in UTC.
func (w *Warming) utc() *Warming {
	c := *w
	c.Until = c.Until.UTC()
	if !c.EndedAt.IsZero() {
		c.EndedAt = c.EndedAt.UTC()
	}
	return &c
}

// Spec returns a copy of the map's description, for building the next map.
func (m *SlotMap) Spec() SlotMapSpec {
	return SlotMapSpec{
		Pool:        m.pool,
		Generation:  m.generation,
		Revision:    m.revision,
		UpdatedAt:   m.updatedAt,
		Slots:       append([]Node(nil), m.slots...),
		Spares:      append([]Node(nil), m.spares...),
		Warming:     m.copyWarming(),
		Incoming:    m.copyIncoming(),
		ResizedFrom: m.resizedFrom,
		Twins:       m.copyTwins(),
	}
}

func (m *SlotMap) copyWarming() []*Warming {
	if m.warming == nil {
		return nil
	}
	out := make([]*Warming, len(m.warming))
	for i, w := range m.warming {
		if w != nil {
			c := *w
			out[i] = &c
		}
	}
	return out
}

// Warming returns the warm source of slot i (a copy), or nil when the slot
// does not warm.
func (m *SlotMap) Warming(i int) *Warming {
	if m.warming == nil || m.warming[i] == nil {
		return nil
	}
	c := *m.warming[i]
	return &c
}

// AnyWarming reports whether some slot is being warmed.
func (m *SlotMap) AnyWarming() bool { return m.warming != nil }

// WarmsAt reports whether some slot still warms at now: its warming has
// not ended and its until has not passed (a warming that ended stays in
// the map for its writes, while the clients stop reading it by their own
// clocks).
func (m *SlotMap) WarmsAt(now time.Time) bool {
	for _, w := range m.warming {
		if w != nil && !w.Ended() && now.Before(w.Until) {
			return true
		}
	}
	return false
}

// WarmingOf returns the slot that node id is the warm source of, or -1.
// It takes constant time.
func (m *SlotMap) WarmingOf(id string) int {
	if i, ok := m.sourceOf[id]; ok {
		return i
	}
	return -1
}

// Pool returns the pool name.
func (m *SlotMap) Pool() string { return m.pool }

// NumSlots returns the fixed number of slots.
func (m *SlotMap) NumSlots() int { return len(m.slots) }

// Generation returns the map's generation; it rises by one with every
// change of any slot's node.
func (m *SlotMap) Generation() uint64 { return m.generation }

// Revision returns the map's revision; it rises by one with every write of
// the map (0 in a map of an older mcrib).
func (m *SlotMap) Revision() uint64 { return m.revision }

// UpdatedAt returns when the map was last changed.
func (m *SlotMap) UpdatedAt() time.Time { return m.updatedAt }

// Slot returns the node of slot i; a zero Node if the slot is vacant.
func (m *SlotMap) Slot(i int) Node { return m.slots[i] }

// Slots returns a copy of the slot nodes in slot order.
func (m *SlotMap) Slots() []Node { return append([]Node(nil), m.slots...) }

// Spares returns a copy of the spares.
func (m *SlotMap) Spares() []Node { return append([]Node(nil), m.spares...) }

// NumSpares returns the number of spares.
func (m *SlotMap) NumSpares() int { return len(m.spares) }

// Spare returns spare i.
func (m *SlotMap) Spare(i int) Node { return m.spares[i] }

// SlotOf returns the slot that node id holds, or -1. It takes constant
// time.
func (m *SlotMap) SlotOf(id string) int {
	if i, ok := m.slotOf[id]; ok && id != "" {
		return i
	}
	return -1
}

// SameSlots reports whether m and o put the same node IDs in the same slots.
// Addresses, zones and spares do not count: only a change of a slot's node
// moves the generation.
func (m *SlotMap) SameSlots(o *SlotMap) bool {
	if m == nil || o == nil || len(m.slots) != len(o.slots) {
		return m == o
	}
	for i := range m.slots {
		if m.slots[i].ID != o.slots[i].ID {
			return false
		}
	}
	return true
}

// Equal reports whether m and o hold the same document apart from
// updated_at: pool, generation, every slot and every spare.
func (m *SlotMap) Equal(o *SlotMap) bool {
	if m == nil || o == nil {
		return m == o
	}
	if m.pool != o.pool || m.generation != o.generation || m.revision != o.revision || len(m.slots) != len(o.slots) || len(m.spares) != len(o.spares) ||
		m.resizedFrom != o.resizedFrom || m.numTwins != o.numTwins {
		return false
	}
	for i := range m.slots {
		if m.slots[i] != o.slots[i] || !m.Warming(i).Equal(o.Warming(i)) || !m.Incoming(i).Equal(o.Incoming(i)) || m.IsTwin(i) != o.IsTwin(i) {
			return false
		}
	}
	for i := range m.spares {
		if m.spares[i] != o.spares[i] {
			return false
		}
	}
	return true
}

// Equal reports whether w and o name the same warm source with the same
// until and ended_at; two nils are equal (neither slot warms).
func (w *Warming) Equal(o *Warming) bool {
	if w == nil || o == nil {
		return w == o
	}
	return w.NodeID == o.NodeID && w.Addr == o.Addr && w.Until.Equal(o.Until) && w.EndedAt.Equal(o.EndedAt)
}

// slotMapDoc is the JSON slot map document (docs/api.md, "Slot map document").
type slotMapDoc struct {
	Pool        string    `json:"pool"`
	NumSlots    int       `json:"num_slots"`
	ResizedFrom int       `json:"resized_from,omitempty"`
	Generation  uint64    `json:"generation"`
	Revision    uint64    `json:"revision"`
	UpdatedAt   time.Time `json:"updated_at"`
	Slots       []slotDoc `json:"slots"`
	Spares      []Node    `json:"spares"`
}

type slotDoc struct {
	Slot int `json:"slot"`
	Node
	Warming  *Warming  `json:"warming,omitempty"`
	Incoming *Incoming `json:"incoming,omitempty"`
	// TwinOf is slot s for a twin s + resized_from; absent otherwise.
	TwinOf *int `json:"twin_of,omitempty"`
}

// MarshalJSON writes the slot map document.
func (m *SlotMap) MarshalJSON() ([]byte, error) {
	doc := slotMapDoc{
		Pool:        m.pool,
		NumSlots:    len(m.slots),
		ResizedFrom: m.resizedFrom,
		Generation:  m.generation,
		Revision:    m.revision,
		UpdatedAt:   m.updatedAt,
		Slots:       make([]slotDoc, len(m.slots)),
		Spares:      m.spares,
	}
	if doc.Spares == nil {
		doc.Spares = []Node{}
	}
	for i, n := range m.slots {
		doc.Slots[i] = slotDoc{Slot: i, Node: n, Warming: m.Warming(i), Incoming: m.Incoming(i)}
		if m.IsTwin(i) {
			s := i - m.resizedFrom
			doc.Slots[i].TwinOf = &s
		}
	}
	return json.Marshal(doc)
}

// ParseSlotMap reads a slot map document and validates it as NewSlotMap
// does; it also refuses slots out of order and a num_slots that does not
// match the slots listed. It reads the gzip-compressed form that
// EncodeStoredSlotMap stores for large pools as well.
func ParseSlotMap(data []byte) (*SlotMap, error) {
	data, err := inflateStored(data, maxStoredSlotMap)
	if err != nil {
		return nil, err
	}
	var doc slotMapDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSlotMap, err)
	}
	if doc.NumSlots != len(doc.Slots) {
		return nil, fmt.Errorf("%w: num_slots is %d but %d slots are listed", ErrInvalidSlotMap, doc.NumSlots, len(doc.Slots))
	}
	spec := SlotMapSpec{Pool: doc.Pool, Generation: doc.Generation, Revision: doc.Revision, UpdatedAt: doc.UpdatedAt, Spares: doc.Spares, ResizedFrom: doc.ResizedFrom}
	for i, s := range doc.Slots {
		if s.Slot != i {
			return nil, fmt.Errorf("%w: entry %d names slot %d", ErrInvalidSlotMap, i, s.Slot)
		}
		if s.TwinOf != nil {
			if *s.TwinOf != i-doc.ResizedFrom || doc.ResizedFrom <= 0 {
				return nil, fmt.Errorf("%w: slot %d is a twin of slot %d but resized_from is %d", ErrInvalidSlotMap, i, *s.TwinOf, doc.ResizedFrom)
			}
			if spec.Twins == nil {
				spec.Twins = make([]bool, len(doc.Slots))
			}
			spec.Twins[i] = true
		}
		spec.Slots = append(spec.Slots, s.Node)
		if s.Warming != nil {
			if spec.Warming == nil {
				spec.Warming = make([]*Warming, len(doc.Slots))
			}
			spec.Warming[i] = s.Warming
		}
		if s.Incoming != nil {
			if spec.Incoming == nil {
				spec.Incoming = make([]*Incoming, len(doc.Slots))
			}
			spec.Incoming[i] = s.Incoming
		}
	}
	return NewSlotMap(spec)
}
