package mcribapi

// The vocabularies of mcrib's metrics labels and decisions, each a string
// type with its constants and a function that lists them (an exporter
// creates every label value at 0).

// Outcome is the result of one reconcile pass
// (mcrib_reconcile_passes_total{result}).
type Outcome string

// The outcomes of a pass.
const (
	// OutcomeOK: the leader's pass completed (written or nothing to write).
	OutcomeOK Outcome = "ok"
	// OutcomeError: the pass failed; the loop backs off and retries.
	OutcomeError Outcome = "error"
	// OutcomeConflict: the check-and-set write failed because the slot
	// map, the freeze or the leader lock changed under the pass.
	OutcomeConflict Outcome = "conflict"
	// OutcomeFollower: this process follows the stored map.
	OutcomeFollower Outcome = "follower"
	// OutcomeWaiting: the leader knows no map yet and has no answer of
	// discovery to build the first one from.
	OutcomeWaiting Outcome = "waiting"
)

// Outcomes lists the outcomes of a pass.
func Outcomes() []Outcome {
	return []Outcome{OutcomeOK, OutcomeError, OutcomeConflict, OutcomeFollower, OutcomeWaiting}
}

// EvictionReason says why a node leaves its slot.
type EvictionReason string

// The eviction reasons. The first three are replacements, counted by
// mcrib_slot_replacements_total{reason} and bounded by
// --max-replacements-per-minute; drain and return steps and a resize's
// splits keep their own pace.
const (
	// EvictionHoldExpired: the holder was absent from Consul and
	// unreachable for its whole hold.
	EvictionHoldExpired EvictionReason = "hold_expired"
	// EvictionMaintenance: Consul put the holder in maintenance.
	EvictionMaintenance EvictionReason = "maintenance"
	// EvictionReplace: an operator's replace (POST /v1/nodes/{id}/replace).
	EvictionReplace EvictionReason = "replace"
	// EvictionDrain: a drain step moves the slot off a drained zone.
	EvictionDrain EvictionReason = "drain"
	// EvictionReturn: a return step gives the slot back to its zone.
	EvictionReturn EvictionReason = "return"
	// EvictionSplit: a resize's split step moves a twin off the node of
	// the slot it is a twin of (docs/api.md, "Growing the pool").
	EvictionSplit EvictionReason = "split"
	// EvictionRoll: a roll moves the slot off a node it restarts next
	// (docs/api.md, "Rolling restarts").
	EvictionRoll EvictionReason = "roll"
)

// ReplacementReasons lists the eviction reasons that are replacements.
func ReplacementReasons() []EvictionReason {
	return []EvictionReason{EvictionHoldExpired, EvictionMaintenance, EvictionReplace}
}

// IsReplacement reports whether r is a replacement, which
// --max-replacements-per-minute bounds (drain and return steps and splits
// are not).
func (r EvictionReason) IsReplacement() bool {
	return r != EvictionDrain && r != EvictionReturn && r != EvictionSplit && r != EvictionRoll
}

// MoveKind says whether a slot's new holder was warmed from the old one
// (mcrib_slot_moves_total{kind}).
type MoveKind string

// The move kinds.
const (
	MoveWarm MoveKind = "warm"
	MoveCold MoveKind = "cold"
)

// MoveKinds lists the move kinds.
func MoveKinds() []MoveKind { return []MoveKind{MoveWarm, MoveCold} }
