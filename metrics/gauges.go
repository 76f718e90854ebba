package metrics

import (
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// Gauges is the state a scrape reports, read from the control loop and
// the boot limiter through Options.Gauges at scrape time. The zero value
// reports every gauge as 0 (and the last reconcile as never).
type Gauges struct {
	// Generation is the slot map generation (mcrib_slotmap_generation).
	Generation uint64
	// LastReconcile is when the last reconcile pass completed; the zero
	// time exports 0 (mcrib_last_reconcile_timestamp_seconds).
	LastReconcile time.Time
	// Leader, Frozen, AutoFrozen, DiscoveryFault, ConsulReachable and
	// Ready export 1 when true and 0 when false (mcrib_leader,
	// mcrib_frozen, mcrib_auto_frozen, mcrib_discovery_fault,
	// mcrib_consul_reachable, mcrib_ready).
	Leader, Frozen, AutoFrozen, DiscoveryFault, ConsulReachable, Ready bool
	// VacantSlots is the number of slots without a node (mcrib_vacant_slots).
	VacantSlots int
	// SlotsUnserved is the number of slots whose keys reach no memcached:
	// vacant, or held by an unreachable node (mcrib_slots_unserved). The
	// hit rate counts only the gets that reached one.
	SlotsUnserved int
	// NumSlots is the number of slots of the slot map this process knows,
	// 0 before it knows one (mcrib_slots): SlotsUnserved out of it is the
	// share of the keys that reach no memcached.
	NumSlots int
	// SpareNodes is the number of ready spares: nodes that could take a
	// slot now (mcrib_spare_nodes).
	SpareNodes int
	// PresentNodes is the number of nodes present in Consul outside the
	// drained zones (mcrib_present_nodes): more than a quarter of them
	// ready spares for long means the pool has outgrown its slots.
	PresentNodes int
	// ReplacementsBlocked is the number of replacements due but held back
	// by a freeze or the replacement ceiling (mcrib_replacements_blocked).
	ReplacementsBlocked int
	// NodesByState counts nodes by status-document state
	// (mcribapi.NodeStates: serving, held, spare, flushing, down, warming;
	// mcrib_nodes{state}). A state missing from the map exports 0; a state
	// not among these is exported as well.
	NodesByState map[mcribapi.NodeState]int
	// RollNodes counts the nodes of the roll entry by node state
	// (mcribapi.RollNodeStates: waiting, moving, released, restarted,
	// skipped; mcrib_roll_nodes{state}); every state exports 0 when no
	// roll is known.
	RollNodes map[mcribapi.RollNodeState]int
	// HitRate is the cache hit rate, 0..1 (mcrib_hit_rate).
	HitRate float64
	// BootLimit is the boot limit in boots per second (mcrib_boot_limit).
	BootLimit float64
	// BootLimitManual is true while an operator pins the boot limit
	// (mcrib_boot_limit_manual: 1 manual, 0 auto).
	BootLimitManual bool
	// FlushesPending counts slot holders whose flush is due but held back
	// (mcrib_flushes_pending).
	FlushesPending int
	// SlotMapUpdated is when the slot map last changed; the zero time
	// exports 0 (mcrib_slotmap_updated_timestamp_seconds).
	SlotMapUpdated time.Time
	// ConfigGenerations is, by config kind, the slot-map generation the
	// config file was last found or written in step with
	// (mcrib_config_generation{kind}); only the kinds this process keeps.
	ConfigGenerations map[string]uint64
	// CorruptDocuments names the documents in Consul KV that do not parse
	// (mcrib_kv_corrupt_documents{key}: 1 for each, 0 for the others of
	// kvlayout.Checked()).
	CorruptDocuments []string
	// WarmCopiedKeys and WarmCopiedBytes count the keys and value bytes
	// the leader's copies of this process put into warming slots' new
	// holders (mcrib_warm_copied_keys_total, mcrib_warm_copied_bytes_total):
	// counters, which only grow for the life of the process.
	WarmCopiedKeys, WarmCopiedBytes int64
	// Zones has one entry per zone known (mcrib_zone_slots,
	// mcrib_zone_unreachable_nodes, mcrib_zone_hit_ratio, mcrib_zone_alert,
	// labelled zone).
	Zones []ZoneGauges
}

// ZoneGauges is one zone's figures, from the status document's zones
// (docs/api.md, "Per zone and the zone alert").
type ZoneGauges struct {
	// Zone is the zone's name; "" is the nodes without a zone.
	Zone string
	// Slots is the number of slots its nodes hold (mcrib_zone_slots).
	Slots int
	// Unreachable is the number of its nodes mcrib cannot reach
	// (mcrib_zone_unreachable_nodes).
	Unreachable int
	// HitRate is its hit rate, 0..1; nil while unknown, which exports no
	// mcrib_zone_hit_ratio series for the zone.
	HitRate *float64
	// Alert is true while mcrib's zone alert names the zone: more than
	// half of its slot holders, and at least two, unreachable
	// (mcrib_zone_alert: 1, else 0).
	Alert bool
}

// unixSeconds is t as fractional Unix seconds, 0 for the zero time.
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}

// boolValue is 1 for true and 0 for false.
func boolValue(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
