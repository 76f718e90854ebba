package mcribapi

import "time"

// Status is the status document of GET /v1/status. The control loop fills
// every field but HitRate and BootLimit, which the server adds from the
// boot limiter. Fields may be added, none removed or renamed.
type Status struct {
	Pool                 string       `json:"pool"`
	Leader               bool         `json:"leader"`
	LeaderID             string       `json:"leader_id"`
	Frozen               bool         `json:"frozen"`
	Freeze               *FreezeDoc   `json:"freeze"`
	AutoFrozen           bool         `json:"auto_frozen"`
	AutoFreezeReason     string       `json:"auto_freeze_reason"`
	Generation           uint64       `json:"generation"`
	LastReconcileAt      *time.Time   `json:"last_reconcile_at"`
	ConsulReachable      bool         `json:"consul_reachable"`
	Nodes                []NodeStatus `json:"nodes"`
	DiscoveryFault       bool         `json:"discovery_fault"`
	DiscoveryFaultReason string       `json:"discovery_fault_reason"`
	ReplacementsBlocked  int          `json:"replacements_blocked"`
	LastError            string       `json:"last_error"`
	VacantSlots          int          `json:"vacant_slots"`
	// NumSlots is the number of slots of the map this process knows (0
	// before it knows one): slots_unserved out of it is the share of the
	// keys that reach no memcached.
	NumSlots int `json:"num_slots"`
	// SlotsUnserved counts the slots whose keys reach no memcached: vacant,
	// or held by a node unreachable by the pool's verdict. The hit rate
	// counts only the gets that reached a memcached; this is the share of
	// the keys it leaves out.
	SlotsUnserved int `json:"slots_unserved"`
	// CorruptDocuments names the documents in Consul KV that do not parse
	// ("slotmap", "freeze"); absent when none.
	CorruptDocuments []string `json:"corrupt_documents,omitempty"`
	// Zones has one entry per zone known, by zone name.
	Zones []ZoneStatus `json:"zones"`
	// ZoneAlert names each zone more than half of whose slot holders, and
	// at least two of them, are unreachable, with the command that would
	// drain it; "" when none.
	ZoneAlert string `json:"zone_alert,omitempty"`
	// Resize is the resize entry, as GET /v1/resize answers it; null when
	// there is none.
	Resize *ResizeEntry `json:"resize"`
	// Roll is the roll entry, as GET /v1/roll answers it; null when there
	// is none.
	Roll *RollEntry `json:"roll"`
	// Capacity tells whether the pool has outgrown its slots; null before
	// this process knows a map.
	Capacity *Capacity `json:"capacity"`
	// HitRate is the pool's hit rate, null while no interval with traffic
	// has been measured (before any traffic, on a follower).
	HitRate *float64 `json:"hit_rate"`
	// BootLimit is the boot-limit document in force.
	BootLimit BootLimit `json:"boot_limit"`
	// GetsPerSecond is the pool's gets a second over the last stats
	// interval, as the slot holders count them; null while unknown.
	GetsPerSecond *float64 `json:"gets_per_second"`
	// Flags are the flags of mcrib serve the simulator reads (PoolFlags).
	Flags *PoolFlags `json:"flags"`
}

// Capacity is the status document's capacity: the slot count, the
// present nodes outside drained zones, how many of them are ready spares,
// and how long (by this process's clock) more than a quarter of them have
// been ready spares, as a Go duration ("3h0m0s"; null when not).
type Capacity struct {
	Slots       int     `json:"slots"`
	Nodes       int     `json:"nodes"`
	SparesReady int     `json:"spares_ready"`
	SparesFor   *string `json:"spares_for"`
}

// NodeState is the state of a node in the status document.
type NodeState string

// The node states.
const (
	// NodeServing: the node holds a slot.
	NodeServing NodeState = "serving"
	// NodeHeld: the node holds a slot and is absent from Consul, inside
	// its hold.
	NodeHeld NodeState = "held"
	// NodeSpare: the node holds no slot and is ready.
	NodeSpare NodeState = "spare"
	// NodeFlushing: the node is being flushed, or holds a slot and owes a
	// flush.
	NodeFlushing NodeState = "flushing"
	// NodeDown: the node is unreachable and holds no slot.
	NodeDown NodeState = "down"
	// NodeWarming: the node gave its slot away in a planned move and
	// serves as the new holder's warm source until the warming ends, and
	// keeps this state until its warming object is removed.
	NodeWarming NodeState = "warming"
	// NodeIncoming: the node is announced to take a slot (the slot map's
	// incoming) and serves it from serves_at (docs/api.md, "Announce, then
	// serve").
	NodeIncoming NodeState = "incoming"
)

// NodeStates lists the node states, so that an exporter can create each
// at 0.
func NodeStates() []NodeState {
	return []NodeState{NodeServing, NodeHeld, NodeSpare, NodeFlushing, NodeDown, NodeWarming, NodeIncoming}
}

// ConsulState is how Consul lists a node, in the status document.
type ConsulState string

// The Consul states.
const (
	ConsulPresent     ConsulState = "present"
	ConsulAbsent      ConsulState = "absent"
	ConsulMaintenance ConsulState = "maintenance"
)

// NodeStatus is one node of the status document. Slot is null for a node
// without a slot; AbsentSince is null while Consul lists it as present.
type NodeStatus struct {
	ID          string      `json:"id"`
	Addr        string      `json:"addr"`
	AZ          string      `json:"az"`
	Slot        *int        `json:"slot"`
	Consul      ConsulState `json:"consul"`
	Reachable   bool        `json:"reachable"`
	State       NodeState   `json:"state"`
	AbsentSince *time.Time  `json:"absent_since"`
	Flaps       int         `json:"flaps"`
	Suppressed  bool        `json:"suppressed"`
	// HoldRemainingSeconds counts down while a slot holder is absent and
	// unreachable (0: due for replacement); null while it is not counting.
	HoldRemainingSeconds *float64 `json:"hold_remaining_seconds"`
	// HeldUntil is when the slot of a held node goes to a spare if the
	// node does not return: the end of its hold, while the hold counts
	// down (the node absent from Consul and unreachable); null otherwise.
	// Past it, the replacement is due and waits only for a spare, the
	// replacement ceiling or a freeze.
	HeldUntil *time.Time `json:"held_until"`
	// FlushPending is true while the flushes document names the node: its
	// flush was decided and is not done yet, whatever it waits for (the
	// node to answer, a freeze, the leader's next pass).
	FlushPending bool `json:"flush_pending"`
	// Drained is true while the node's zone is drained.
	Drained bool `json:"drained"`
	// Warming is the slot this node still serves as the warm source of,
	// else null.
	Warming *int `json:"warming"`
	// Twin is the twin of the node's slot s (s + the slot count before the
	// resize) while it remains a twin, else null.
	Twin *int `json:"twin"`
	// WarmingUntil is when clients stop reading that warm source: the
	// slot map's ended_at when the warming ended early, else its until
	// (on the clock of the leader that wrote it); null when the node warms
	// nothing. The warming object stays 12 s longer (for the writes), and
	// the node is a spare again only once it is removed (a drained one, in
	// a drained zone).
	WarmingUntil *time.Time `json:"warming_until"`
	// WarmingEnded is true once that warming ended before its until (the
	// slot map's ended_at is set): clients read the new holder only, and
	// still write both until the object is removed.
	WarmingEnded bool `json:"warming_ended,omitempty"`
	// Incoming is the slot this node is announced to take (the slot map's
	// incoming), else null; ServesAt is when it serves it, on the clock of
	// the leader that wrote the announce.
	Incoming *int       `json:"incoming"`
	ServesAt *time.Time `json:"serves_at,omitempty"`
	// IncomingNode, on a slot holder, names the node announced to take its
	// slot ("" when none).
	IncomingNode string `json:"incoming_node,omitempty"`
	// WarmHitRate, on a warming slot's new holder, is its own hit rate
	// (get_hits ÷ cmd_get) over the last stats interval; null when
	// unknown or when the node's slot does not warm.
	WarmHitRate *float64 `json:"warm_hit_rate"`
	// CopiedKeys and CopiedBytes, on a warming slot's new holder, count
	// the keys and value bytes the leader's copy put into it from the
	// warm source (docs/api.md, "The leader copies the hot keys"); 0
	// elsewhere, and on a replica that does not lead.
	CopiedKeys  int64 `json:"copied_keys"`
	CopiedBytes int64 `json:"copied_bytes"`
	// Roll is the node's state in the roll that runs (waiting, moving,
	// released, restarted, skipped); "" when no roll runs or the roll
	// does not list it.
	Roll RollNodeState `json:"roll,omitempty"`
}

// ZoneStatus is one entry of the status document's zones.
type ZoneStatus struct {
	Zone        string      `json:"zone"`
	Nodes       int         `json:"nodes"`
	Slots       int         `json:"slots"`
	Unreachable int         `json:"unreachable"`
	Absent      int         `json:"absent"`
	HitRate     *float64    `json:"hit_rate"`
	Drain       *DrainEntry `json:"drain"`
	// Alert is true while the zone alerts: more than half of its slot
	// holders, and at least two of them, unreachable (the status's
	// zone_alert names it, with the command that would drain it).
	Alert bool `json:"alert"`
}
