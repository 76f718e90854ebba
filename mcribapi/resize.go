package mcribapi

import (
	"encoding/json"
	"fmt"
	"time"
)

// The resize document and PUT /v1/resize (docs/api.md, "Growing the
// pool").

// Resize defaults and bounds.
const (
	DefaultResizeStepPercent  = 10
	DefaultResizeStepInterval = 30 * time.Second
	MinResizeStepInterval     = time.Second
	MaxResizeStepInterval     = time.Hour
	// MaxSlots is the largest slot count a pool may grow to.
	MaxSlots = 4096
)

// ResizeState is the state of the resize entry.
type ResizeState string

// The resize states.
const (
	// ResizeSplitting: twins remain and split steps go on.
	ResizeSplitting ResizeState = "splitting"
	// ResizePaused: an operator freeze holds the split steps.
	ResizePaused ResizeState = "paused"
	// ResizeStopped: an operator stopped the splits; twins remain.
	ResizeStopped ResizeState = "stopped"
	// ResizeDone: every twin is split (warmings may still run).
	ResizeDone ResizeState = "done"
)

// ResizeRequest is the body of PUT /v1/resize. A field left nil is not
// sent, so that the server's default applies; ParseResizeRequest reads it.
type ResizeRequest struct {
	NumSlots     int     `json:"num_slots"`
	Reason       string  `json:"reason"`
	StepPercent  *int    `json:"step_percent,omitempty"`
	StepInterval *string `json:"step_interval,omitempty"`
}

// Resize is a resize as an operator asked for it: a ResizeRequest read by
// ParseResizeRequest, defaults filled in.
type Resize struct {
	NumSlots     int
	Reason       string
	StepPercent  int
	StepInterval time.Duration
	// StepIntervalText is StepInterval as the operator wrote it ("1m").
	StepIntervalText string
}

// IntervalText returns the step interval as the operator wrote it, or in
// Go's form when it was not given.
func (r Resize) IntervalText() string {
	if r.StepIntervalText != "" {
		return r.StepIntervalText
	}
	return r.StepInterval.String()
}

// ResizeEntry is the resize entry, as stored in KV and answered by GET
// /v1/resize. From, To, Reason, By, At, StepPercent, StepInterval and
// LastStepAt are stored; Stopped and Done are the loop's bookkeeping;
// Twins, Split, State and Blocked are stored as the leader last wrote them
// and filled in anew when answered.
type ResizeEntry struct {
	From         int        `json:"from"`
	To           int        `json:"to"`
	Reason       string     `json:"reason"`
	By           string     `json:"by"`
	At           time.Time  `json:"at"`
	StepPercent  int        `json:"step_percent"`
	StepInterval string     `json:"step_interval"`
	LastStepAt   *time.Time `json:"last_step_at"`
	Twins        int        `json:"twins"`
	Split        int        `json:"split"`
	// State is splitting, paused, stopped or done.
	State ResizeState `json:"state"`
	// Blocked is empty or one sentence naming what stops the splits.
	Blocked string `json:"blocked"`
	// Warning says, in one sentence, when the splits take the pool's
	// last ready spare ("" otherwise).
	Warning string `json:"warning,omitempty"`
}

// Interval returns the entry's step interval (the default when unreadable).
func (e ResizeEntry) Interval() time.Duration {
	d, err := time.ParseDuration(e.StepInterval)
	if err != nil || d < MinResizeStepInterval || d > MaxResizeStepInterval {
		return DefaultResizeStepInterval
	}
	return d
}

// StepSize returns how many twins one split step moves: ⌈from × step ÷
// 100⌉, at least 1.
func (e ResizeEntry) StepSize() int {
	return max(1, (e.From*e.StepPercent+99)/100)
}

// ResizeDoc is the resize document: {"resize": {...}}, or {"resize":
// null} when there is no entry.
type ResizeDoc struct {
	Resize *ResizeEntry `json:"resize"`
}

// ParseStoredResize reads the resize document as stored in KV.
func ParseStoredResize(data []byte) (*ResizeDoc, error) {
	var doc ResizeDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("the resize document does not parse: %v", err)
	}
	if e := doc.Resize; e != nil && (e.From < 1 || e.To != 2*e.From) {
		return nil, fmt.Errorf("the resize entry grows from %d to %d slots; a resize doubles the slots", e.From, e.To)
	}
	return &doc, nil
}

// ParseResizeRequest reads the body of PUT /v1/resize: a JSON object with
// a required num_slots (a positive integer; the server checks it against
// the stored count) and reason (≤ MaxReason characters), and optional
// step_percent (1..100, default 10) and step_interval (1s..1h, default
// 30s). A value given outside its range, or given as null, is refused,
// never read as the default. Its errors wrap ErrBadRequest and are one
// readable sentence.
func ParseResizeRequest(body []byte) (Resize, error) {
	var raw ResizeRequest
	if err := decodeOne(body, &raw, `{"num_slots": 32, "reason": "…", "step_percent": 10, "step_interval": "30s"}`); err != nil {
		return Resize{}, err
	}
	if err := refuseNulls(body, map[string]string{
		"num_slots":     "a power of two, twice the pool's slots",
		"reason":        "a non-empty string",
		"step_percent":  "an integer from 1 to 100",
		"step_interval": "a duration from 1s to 1h",
	}); err != nil {
		return Resize{}, err
	}
	if raw.NumSlots < 1 {
		return Resize{}, fmt.Errorf("%w: \"num_slots\" is required: twice the pool's slots (or its slot count, to resume a stopped resize)", ErrBadRequest)
	}
	if raw.NumSlots > MaxSlots {
		return Resize{}, fmt.Errorf("%w: \"num_slots\" must be at most %d, not %d", ErrBadRequest, MaxSlots, raw.NumSlots)
	}
	reason, err := checkReason(raw.Reason, "a resize")
	if err != nil {
		return Resize{}, err
	}
	r := Resize{NumSlots: raw.NumSlots, Reason: reason, StepPercent: DefaultResizeStepPercent, StepInterval: DefaultResizeStepInterval}
	if raw.StepPercent != nil {
		if *raw.StepPercent < 1 || *raw.StepPercent > 100 {
			return Resize{}, fmt.Errorf("%w: \"step_percent\" must be an integer from 1 to 100, not %d", ErrBadRequest, *raw.StepPercent)
		}
		r.StepPercent = *raw.StepPercent
	}
	if raw.StepInterval != nil {
		step, err := time.ParseDuration(*raw.StepInterval)
		if err != nil {
			return Resize{}, fmt.Errorf("%w: \"step_interval\" must be a duration like \"30s\", not %q", ErrBadRequest, *raw.StepInterval)
		}
		if step < MinResizeStepInterval || step > MaxResizeStepInterval {
			return Resize{}, fmt.Errorf("%w: \"step_interval\" must be from 1s to 1h, not %s", ErrBadRequest, *raw.StepInterval)
		}
		r.StepInterval, r.StepIntervalText = step, *raw.StepInterval
	}
	return r, nil
}
