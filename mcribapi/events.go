package mcribapi

import "time"

// Event is one decision or observation of mcrib, an element of the array
// GET /v1/events answers. Seq numbers the events of one process from 1,
// so that a reader can ask for the ones after those it has seen
// (?since=). Node and Slot are left out when they do not apply; Who is
// "mcrib" for mcrib's own decisions and the caller for an operator's
// change. Event is a plain value.
type Event struct {
	Seq    uint64    `json:"seq"`
	At     time.Time `json:"at"`
	Kind   EventKind `json:"kind"`
	Node   string    `json:"node,omitempty"`
	Slot   *int      `json:"slot,omitempty"`
	Reason string    `json:"reason"`
	Who    string    `json:"who"`
	// From, To and ServesAt tell a slot move announced (and dropped): the
	// slot's holder, the node announced to take it and when it serves it;
	// left out of other events.
	From     string     `json:"from,omitempty"`
	To       string     `json:"to,omitempty"`
	ServesAt *time.Time `json:"serves_at,omitempty"`
}

// EventKind says what an Event is.
type EventKind string

// The event kinds.
const (
	// EventPlacement: a spare took a vacant slot (or the first fill).
	EventPlacement EventKind = "placement"
	// EventReplacement: a slot holder lost its slot (hold, maintenance).
	EventReplacement EventKind = "replacement"
	// EventFlush: a node was flushed (a spare for its placement, or a
	// returning holder).
	EventFlush EventKind = "flush"
	// EventFlushOwed: the leader decided that a returning holder owes a
	// flush.
	EventFlushOwed EventKind = "flush owed"
	// EventHoldStarted and EventHoldCleared: a slot holder went absent
	// from Consul, and came back.
	EventHoldStarted EventKind = "hold started"
	EventHoldCleared EventKind = "hold cleared"
	// EventNodeAbsent, EventNodePresent, EventNodeUnreachable and
	// EventNodeReachable: the other transitions of a node.
	EventNodeAbsent      EventKind = "node absent"
	EventNodePresent     EventKind = "node present"
	EventNodeUnreachable EventKind = "node unreachable"
	EventNodeReachable   EventKind = "node reachable"
	// EventObserverFault and EventObserverFaultOver: many slot holders
	// unreachable at once, taken as this process's fault, and its end.
	EventObserverFault     EventKind = "observer fault"
	EventObserverFaultOver EventKind = "observer fault over"
	// EventAutoFreeze and EventAutoFreezeLifted: the guard went on, and
	// off.
	EventAutoFreeze       EventKind = "automatic freeze"
	EventAutoFreezeLifted EventKind = "automatic freeze lifted"
	// EventDiscoveryFault: a Consul answer taken as a fault of discovery.
	EventDiscoveryFault EventKind = "discovery fault"
	// EventBootLimit: the boot limit's mode or value moved.
	EventBootLimit EventKind = "boot limit"
	// EventOperator: an operator's change (freeze, unfreeze, boot limit,
	// drain, undrain, replace).
	EventOperator EventKind = "operator change"
	// EventZoneAlert and EventZoneAlertOver: a zone alert began, naming
	// the command that would drain the zone, and ended.
	EventZoneAlert     EventKind = "zone alert"
	EventZoneAlertOver EventKind = "zone alert over"
	// EventDrainStep, EventReturnStep and EventReplace: a slot moved by a
	// drain, a return or a replace.
	EventDrainStep  EventKind = "drain step"
	EventReturnStep EventKind = "return step"
	EventReplace    EventKind = "replace"
	// EventWarmStart and EventWarmEnd: a warming began, and ended.
	EventWarmStart EventKind = "warm start"
	EventWarmEnd   EventKind = "warm end"
	// EventDrainOver: a returning zone holds its baseline again and its
	// drain entry is removed.
	EventDrainOver EventKind = "drain over"
	// EventLastSpare: a pass's placements took the pool's last ready
	// spare.
	EventLastSpare EventKind = "last spare"
	// EventResizeStarted, EventSplitStep, EventResizeStopped and
	// EventResizeOver: a resize began (its first write doubled the
	// slots), a split moved a twin to a spare, an operator stopped the
	// splits, and every twin is split.
	EventResizeStarted EventKind = "resize started"
	EventSplitStep     EventKind = "split step"
	EventResizeStopped EventKind = "resize stopped"
	EventResizeOver    EventKind = "resize over"
	// EventSlotMoveAnnounced and EventSlotMoveDropped: a slot's next
	// holder was announced (flushed, and written as the slot's incoming
	// node; it serves at serves_at), and an announce was dropped before it
	// served (docs/api.md, "Announce, then serve").
	EventSlotMoveAnnounced EventKind = "slot move announced"
	EventSlotMoveDropped   EventKind = "slot move dropped"
	// EventRollStarted, EventRollRelease, EventRollRestarted,
	// EventRollBlocked, EventRollStopped and EventRollOver: a roll began,
	// a node of it may be restarted now (its reason begins "roll: restart
	// <id> now"), its memcached restarted (the reason begins "roll: <id>
	// restarted"), the roll is blocked, an operator stopped it, and every
	// node is behind it (docs/api.md, "Rolling restarts").
	EventRollStarted   EventKind = "roll started"
	EventRollRelease   EventKind = "roll release"
	EventRollRestarted EventKind = "roll restarted"
	EventRollBlocked   EventKind = "roll blocked"
	EventRollStopped   EventKind = "roll stopped"
	EventRollOver      EventKind = "roll over"
)

// EventKinds lists the event kinds.
func EventKinds() []EventKind {
	return []EventKind{
		EventPlacement, EventReplacement, EventFlush, EventFlushOwed,
		EventHoldStarted, EventHoldCleared,
		EventNodeAbsent, EventNodePresent, EventNodeUnreachable, EventNodeReachable,
		EventObserverFault, EventObserverFaultOver, EventAutoFreeze, EventAutoFreezeLifted,
		EventDiscoveryFault, EventBootLimit, EventOperator, EventZoneAlert, EventZoneAlertOver,
		EventDrainStep, EventReturnStep, EventReplace, EventWarmStart, EventWarmEnd,
		EventDrainOver, EventLastSpare,
		EventResizeStarted, EventSplitStep, EventResizeStopped, EventResizeOver,
		EventSlotMoveAnnounced, EventSlotMoveDropped,
		EventRollStarted, EventRollRelease, EventRollRestarted, EventRollBlocked, EventRollStopped, EventRollOver,
	}
}

// History is the document of GET /v1/history: one time series per
// figure, all on the same time axis At (the end of each interval, oldest
// first). HitRate holds null for an interval whose hit rate is unknown.
// The counts are per interval. History is a plain value.
type History struct {
	IntervalSeconds float64     `json:"interval_seconds"`
	WindowSeconds   float64     `json:"window_seconds"`
	At              []time.Time `json:"at"`
	HitRate         []*float64  `json:"hit_rate"`
	BootLimit       []float64   `json:"boot_limit"`
	BootMode        []string    `json:"boot_mode"`
	Admissions      []int       `json:"admissions"`
	Refusals        []int       `json:"refusals"`
	Flushes         []int       `json:"flushes"`
	Replacements    []int       `json:"replacements"`
}
