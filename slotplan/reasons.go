package slotplan

// EvictionReason says why a plan takes a node out of its slot. Its values
// are the wire's (mcribapi.EvictionReason, which the control loop converts
// to; a test keeps the two in step), so the planner names them without
// importing the wire vocabulary.
type EvictionReason string

// The eviction reasons. The first three are replacements, bounded by
// --max-replacements-per-minute; drain and return steps and a resize's
// splits keep their own pace.
const (
	// EvictionHoldExpired: the holder was absent from Consul and
	// unreachable for its whole hold.
	EvictionHoldExpired EvictionReason = "hold_expired"
	// EvictionMaintenance: Consul put the holder in maintenance.
	EvictionMaintenance EvictionReason = "maintenance"
	// EvictionReplace: an operator's replace.
	EvictionReplace EvictionReason = "replace"
	// EvictionDrain: a drain step moves the slot off a drained zone.
	EvictionDrain EvictionReason = "drain"
	// EvictionReturn: a return step gives the slot back to its zone.
	EvictionReturn EvictionReason = "return"
	// EvictionSplit: a resize's split step moves a twin off the node of
	// the slot it is a twin of.
	EvictionSplit EvictionReason = "split"
)

// EvictionReasons lists every eviction reason.
func EvictionReasons() []EvictionReason {
	return []EvictionReason{EvictionHoldExpired, EvictionMaintenance, EvictionReplace, EvictionDrain, EvictionReturn, EvictionSplit}
}

// IsReplacement reports whether r is a replacement, which
// --max-replacements-per-minute bounds (drain and return steps and splits
// are not).
func (r EvictionReason) IsReplacement() bool {
	return r != EvictionDrain && r != EvictionReturn && r != EvictionSplit
}
