package mcribapi

import (
	"fmt"
	"time"
)

// The drain document and PUT /v1/drain/{zone} (docs/api.md, "Drain
// document" and "Zones, drains and warm moves").

// Drain defaults and bounds.
const (
	DefaultDrainPercent      = 100
	DefaultDrainStepPercent  = 10
	DefaultDrainStepInterval = 30 * time.Second
	MinDrainStepInterval     = time.Second
	MaxDrainStepInterval     = time.Hour
)

// DrainState is the state of a zone's drain entry.
type DrainState string

// The drain states.
const (
	// DrainDraining: the zone holds more slots than its target.
	DrainDraining DrainState = "draining"
	// DrainDrained: the zone holds its target.
	DrainDrained DrainState = "drained"
	// DrainReturning: the zone holds fewer slots than its target (after
	// DELETE /v1/drain/{zone}, its baseline).
	DrainReturning DrainState = "returning"
	// DrainPaused: an operator freeze holds the drain or return.
	DrainPaused DrainState = "paused"
)

// DrainRequest is the body of PUT /v1/drain/{zone}. A field left nil is not
// sent, so that the server's default applies; ParseDrainRequest reads it.
type DrainRequest struct {
	Reason       string  `json:"reason"`
	Percent      *int    `json:"percent,omitempty"`
	StepPercent  *int    `json:"step_percent,omitempty"`
	StepInterval *string `json:"step_interval,omitempty"`
}

// Drain is a drain as an operator asked for it: a DrainRequest read by
// ParseDrainRequest, defaults filled in.
type Drain struct {
	Reason       string
	Percent      int
	StepPercent  int
	StepInterval time.Duration
	// StepIntervalText is StepInterval as the operator wrote it ("1m"),
	// stored and answered as given; "" stands for StepInterval.String().
	StepIntervalText string
}

// IntervalText returns the step interval as the operator wrote it ("1m"),
// or in Go's form when it was not given.
func (d Drain) IntervalText() string {
	if d.StepIntervalText != "" {
		return d.StepIntervalText
	}
	return d.StepInterval.String()
}

// DrainEntry is one zone's entry of the drain document, as stored in KV
// and answered by GET /v1/drain. Slots, TargetSlots, SlotsToMove, State,
// SparesLeft and Warning are filled in when answered; LastStepAt,
// Returning and MovedSlots are the loop's bookkeeping, stored so a new
// leader keeps the pace and gives back what was moved.
type DrainEntry struct {
	Percent       int        `json:"percent"`
	StepPercent   int        `json:"step_percent"`
	StepInterval  string     `json:"step_interval"`
	Reason        string     `json:"reason"`
	By            string     `json:"by"`
	At            time.Time  `json:"at"`
	BaselineSlots int        `json:"baseline_slots"`
	Slots         int        `json:"slots"`
	TargetSlots   int        `json:"target_slots"`
	State         DrainState `json:"state"`
	Blocked       string     `json:"blocked"`
	// Returning is true after DELETE /v1/drain/{zone}: the target is the
	// baseline, and the entry is removed when the zone holds it again.
	Returning bool `json:"returning,omitempty"`
	// LastStepAt is when the last drain or return step moved a slot.
	LastStepAt *time.Time `json:"last_step_at,omitempty"`
	// MovedSlots are the slots the zone's drain steps moved off it and no
	// return step gave back yet, ascending: a return step gives these back
	// first ("Undrain undoes"). Answered as [] when none.
	MovedSlots []int `json:"moved_slots"`
	// SlotsToMove is how many slots the zone's steps still move: off it
	// while draining, back to it while returning (0 at the target).
	SlotsToMove int `json:"slots_to_move"`
	// SparesLeft is the number of ready spares outside the drained zones,
	// the nodes a replacement or a drain step can take; Warning says, in
	// one sentence, when the drain takes the last of them ("" otherwise).
	SparesLeft int    `json:"spares_left"`
	Warning    string `json:"warning,omitempty"`
}

// Interval returns the entry's step interval (the default when unreadable).
func (e DrainEntry) Interval() time.Duration {
	d, err := time.ParseDuration(e.StepInterval)
	if err != nil || d < MinDrainStepInterval || d > MaxDrainStepInterval {
		return DefaultDrainStepInterval
	}
	return d
}

// Target returns the number of slots the zone should hold:
// ⌊baseline × (100 − percent) ÷ 100⌋, or the baseline while returning.
func (e DrainEntry) Target() int {
	if e.Returning {
		return e.BaselineSlots
	}
	return e.BaselineSlots * (100 - e.Percent) / 100
}

// StepSize returns how many slots one step moves: ⌈baseline × step ÷ 100⌉,
// at least 1.
func (e DrainEntry) StepSize() int {
	return max(1, (e.BaselineSlots*e.StepPercent+99)/100)
}

// DrainDoc is the drain document: {"zones": {...}}.
type DrainDoc struct {
	Zones map[string]*DrainEntry `json:"zones"`
	// Corrupt, in an answer only, says that the stored document does not
	// parse (Zones are then the last that parsed) and how to fix it; ""
	// when it parses. It is never stored.
	Corrupt string `json:"corrupt,omitempty"`
}

// ParseDrainRequest reads the body of PUT /v1/drain/{zone}: a JSON object
// with a required reason (≤ MaxReason characters) and optional percent
// (1..100, default 100), step_percent (1..100, default 10) and
// step_interval (1s..1h, default 30s). A value given outside its range, or
// given as null, is refused, never read as the default. Its errors wrap
// ErrBadRequest and are one readable sentence.
func ParseDrainRequest(body []byte) (Drain, error) {
	var raw DrainRequest
	if err := decodeOne(body, &raw, `{"reason": "…", "percent": 100, "step_percent": 10, "step_interval": "30s"}`); err != nil {
		return Drain{}, err
	}
	if err := refuseNulls(body, map[string]string{
		"reason":        "a non-empty string",
		"percent":       "an integer from 1 to 100",
		"step_percent":  "an integer from 1 to 100",
		"step_interval": "a duration from 1s to 1h",
	}); err != nil {
		return Drain{}, err
	}
	reason, err := checkReason(raw.Reason, "a drain")
	if err != nil {
		return Drain{}, err
	}
	d := Drain{Reason: reason, Percent: DefaultDrainPercent, StepPercent: DefaultDrainStepPercent, StepInterval: DefaultDrainStepInterval}
	if raw.Percent != nil {
		if *raw.Percent < 1 || *raw.Percent > 100 {
			return Drain{}, fmt.Errorf("%w: \"percent\" must be an integer from 1 to 100, not %d", ErrBadRequest, *raw.Percent)
		}
		d.Percent = *raw.Percent
	}
	if raw.StepPercent != nil {
		if *raw.StepPercent < 1 || *raw.StepPercent > 100 {
			return Drain{}, fmt.Errorf("%w: \"step_percent\" must be an integer from 1 to 100, not %d", ErrBadRequest, *raw.StepPercent)
		}
		d.StepPercent = *raw.StepPercent
	}
	if raw.StepInterval != nil {
		step, err := time.ParseDuration(*raw.StepInterval)
		if err != nil {
			return Drain{}, fmt.Errorf("%w: \"step_interval\" must be a duration like \"30s\", not %q", ErrBadRequest, *raw.StepInterval)
		}
		if step < MinDrainStepInterval || step > MaxDrainStepInterval {
			return Drain{}, fmt.Errorf("%w: \"step_interval\" must be from 1s to 1h, not %s", ErrBadRequest, *raw.StepInterval)
		}
		d.StepInterval, d.StepIntervalText = step, *raw.StepInterval
	}
	return d, nil
}
