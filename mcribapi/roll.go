package mcribapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The roll document and PUT /v1/roll (docs/api.md, "Rolling restarts").

// Roll bounds and defaults.
const (
	DefaultRestartTimeout = 10 * time.Minute
	MinRestartTimeout     = 10 * time.Second
	MaxRestartTimeout     = time.Hour
	// RollKeptFor is how long a stopped or done roll entry stays.
	RollKeptFor = time.Hour
)

// ErrNoRoll: DELETE /v1/roll when no roll runs (404).
var ErrNoRoll = errors.New("mcribapi: no roll")

// RollState is the state of the roll entry.
type RollState string

// The roll states. A roll runs while rolling, paused or blocked.
const (
	// RollRolling: the roll goes on, one node at a time.
	RollRolling RollState = "rolling"
	// RollPaused: a freeze, a fault of discovery or a drain holds it.
	RollPaused RollState = "paused"
	// RollBlocked: a node did not restart in time, or a move found no
	// ready spare; Blocked says which.
	RollBlocked RollState = "blocked"
	// RollStopped: an operator stopped it.
	RollStopped RollState = "stopped"
	// RollDone: every node is restarted or skipped.
	RollDone RollState = "done"
)

// Runs reports whether a roll in state s runs: rolling, paused or blocked.
func (s RollState) Runs() bool { return s == RollRolling || s == RollPaused || s == RollBlocked }

// RollNodeState is the state of one node of a roll.
type RollNodeState string

// The node states of a roll.
const (
	// RollWaiting: its turn has not come (or it waits to become movable).
	RollWaiting RollNodeState = "waiting"
	// RollMoving: its slot moves warm to a spare; it waits until that
	// warming ends and its warming object is removed.
	RollMoving RollNodeState = "moving"
	// RollReleased: the operator may restart it now; mcrib waits for its
	// memcached to restart.
	RollReleased RollNodeState = "released"
	// RollRestarted: its memcached restarted; it is a spare again.
	RollRestarted RollNodeState = "restarted"
	// RollSkipped: it was absent from Consul at its turn.
	RollSkipped RollNodeState = "skipped"
)

// RollNodeStates lists the node states (mcrib_roll_nodes{state}).
func RollNodeStates() []RollNodeState {
	return []RollNodeState{RollWaiting, RollMoving, RollReleased, RollRestarted, RollSkipped}
}

// Finished reports whether a node in state s is behind the roll.
func (s RollNodeState) Finished() bool { return s == RollRestarted || s == RollSkipped }

// RollRequest is the body of PUT /v1/roll: exactly one of Zone, Nodes and
// All. A field left nil is not sent, so that the server's default applies.
type RollRequest struct {
	Reason         string   `json:"reason"`
	Zone           *string  `json:"zone,omitempty"`
	Nodes          []string `json:"nodes,omitempty"`
	All            bool     `json:"all,omitempty"`
	RestartTimeout *string  `json:"restart_timeout,omitempty"`
}

// Roll is a roll as an operator asked for it: a RollRequest read by
// ParseRollRequest, defaults filled in.
type Roll struct {
	Reason string
	// Zone is set when HasZone; Nodes when the nodes were listed; All
	// otherwise.
	Zone    string
	HasZone bool
	Nodes   []string
	All     bool
	// RestartTimeout is how long a released node may take to restart;
	// RestartTimeoutText as the operator wrote it.
	RestartTimeout     time.Duration
	RestartTimeoutText string
}

// TimeoutText returns the restart timeout as the operator wrote it, or in
// Go's form when it was not given.
func (r Roll) TimeoutText() string {
	if r.RestartTimeoutText != "" {
		return r.RestartTimeoutText
	}
	return r.RestartTimeout.String()
}

// What names what the roll restarts: "zone a", "nodes mc-1, mc-2" or
// "every node".
func (r Roll) What() string {
	switch {
	case r.HasZone:
		return fmt.Sprintf("zone %q", r.Zone)
	case len(r.Nodes) > 0:
		return fmt.Sprintf("nodes %v", r.Nodes)
	}
	return "every node"
}

// RollNode is one node of a roll entry. Addr and AZ are the node's as the
// roll began; Slot is the slot it held when it began moving (null before);
// To the node its slot went to. PID and StartedAt are its memcached as
// the last reading before its release showed it (0 and null: unknown).
type RollNode struct {
	NodeID     string        `json:"node_id"`
	Addr       string        `json:"addr,omitempty"`
	AZ         string        `json:"az"`
	State      RollNodeState `json:"state"`
	Slot       *int          `json:"slot"`
	To         string        `json:"to,omitempty"`
	ReleasedAt *time.Time    `json:"released_at,omitempty"`
	PID        int           `json:"pid,omitempty"`
	StartedAt  *time.Time    `json:"started_at,omitempty"`
}

// RollEntry is the roll entry, stored in KV and answered by GET /v1/roll.
type RollEntry struct {
	Reason         string    `json:"reason"`
	By             string    `json:"by"`
	At             time.Time `json:"at"`
	RestartTimeout string    `json:"restart_timeout"`
	// State is rolling, paused, blocked, stopped or done; Blocked empty
	// or one sentence naming what holds the roll.
	State   RollState `json:"state"`
	Blocked string    `json:"blocked"`
	// EndedAt is when the roll stopped or was done (null while it runs):
	// the entry is removed RollKeptFor later.
	EndedAt *time.Time `json:"ended_at,omitempty"`
	Nodes   []RollNode `json:"nodes"`
}

// Timeout returns the entry's restart timeout (the default when
// unreadable).
func (e RollEntry) Timeout() time.Duration {
	d, err := time.ParseDuration(e.RestartTimeout)
	if err != nil || d < MinRestartTimeout || d > MaxRestartTimeout {
		return DefaultRestartTimeout
	}
	return d
}

// Clone returns a deep copy of e.
func (e *RollEntry) Clone() *RollEntry {
	if e == nil {
		return nil
	}
	c := *e
	c.Nodes = slices.Clone(e.Nodes)
	return &c
}

// Count returns how many of the entry's nodes are in state s.
func (e RollEntry) Count(s RollNodeState) int {
	n := 0
	for _, rn := range e.Nodes {
		if rn.State == s {
			n++
		}
	}
	return n
}

// RollDoc is the roll document: {"roll": {...}}, or {"roll": null}.
type RollDoc struct {
	Roll *RollEntry `json:"roll"`
}

// ParseStoredRoll reads the roll document as stored in KV.
func ParseStoredRoll(data []byte) (*RollDoc, error) {
	var doc RollDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("the roll document does not parse: %v", err)
	}
	if e := doc.Roll; e != nil {
		switch e.State {
		case RollRolling, RollPaused, RollBlocked, RollStopped, RollDone:
		default:
			return nil, fmt.Errorf("the roll entry has state %q, not one of rolling, paused, blocked, stopped and done", e.State)
		}
		for _, n := range e.Nodes {
			if n.NodeID == "" || !slices.Contains(RollNodeStates(), n.State) {
				return nil, fmt.Errorf("the roll entry has a node %q in state %q", n.NodeID, n.State)
			}
		}
	}
	return &doc, nil
}

// ParseRollRequest reads the body of PUT /v1/roll: a JSON object with a
// required reason (≤ MaxReason characters), exactly one of zone (a zone
// name), nodes (a non-empty list of node IDs, none twice) and all (true),
// and an optional restart_timeout (10s..1h, default 10m). Its errors wrap
// ErrBadRequest and are one readable sentence.
func ParseRollRequest(body []byte) (Roll, error) {
	var raw RollRequest
	if err := decodeOne(body, &raw, `{"reason": "…", "zone": "a"}`); err != nil {
		return Roll{}, err
	}
	if err := refuseNulls(body, map[string]string{
		"reason":          "a non-empty string",
		"zone":            "a zone name",
		"nodes":           "a list of node IDs",
		"all":             "true",
		"restart_timeout": "a duration from 10s to 1h",
	}); err != nil {
		return Roll{}, err
	}
	reason, err := checkReason(raw.Reason, "a roll")
	if err != nil {
		return Roll{}, err
	}
	r := Roll{Reason: reason, RestartTimeout: DefaultRestartTimeout}
	given := 0
	if raw.Zone != nil {
		given++
		if err := CheckZone(*raw.Zone); err != nil {
			return Roll{}, err
		}
		r.Zone, r.HasZone = *raw.Zone, true
	}
	if raw.Nodes != nil {
		given++
		if len(raw.Nodes) == 0 {
			return Roll{}, fmt.Errorf("%w: \"nodes\" must list at least one node ID", ErrBadRequest)
		}
		for i, id := range raw.Nodes {
			if id == "" {
				return Roll{}, fmt.Errorf("%w: \"nodes\" has an empty node ID", ErrBadRequest)
			}
			if err := CheckNodeID(id); err != nil {
				return Roll{}, err
			}
			if slices.Contains(raw.Nodes[:i], id) {
				return Roll{}, fmt.Errorf("%w: \"nodes\" lists node %s twice", ErrBadRequest, id)
			}
		}
		r.Nodes = slices.Clone(raw.Nodes)
	}
	if raw.All {
		given++
		r.All = true
	}
	if given != 1 {
		return Roll{}, fmt.Errorf("%w: a roll names exactly one of \"zone\", \"nodes\" and \"all\": true, not %d of them", ErrBadRequest, given)
	}
	if raw.RestartTimeout != nil {
		d, err := time.ParseDuration(*raw.RestartTimeout)
		if err != nil {
			return Roll{}, fmt.Errorf("%w: \"restart_timeout\" must be a duration like \"10m\", not %q", ErrBadRequest, *raw.RestartTimeout)
		}
		if d < MinRestartTimeout || d > MaxRestartTimeout {
			return Roll{}, fmt.Errorf("%w: \"restart_timeout\" must be from 10s to 1h, not %s", ErrBadRequest, *raw.RestartTimeout)
		}
		r.RestartTimeout, r.RestartTimeoutText = d, *raw.RestartTimeout
	}
	return r, nil
}
