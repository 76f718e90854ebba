package controlloop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// The shapes of CONTRACT.md section 7 (zones, drains and warm moves) that
// the HTTP API, the CLI and the loop share.

// Drain defaults and bounds (section 7).
const (
	DefaultDrainPercent      = 100
	DefaultDrainStepPercent  = 10
	DefaultDrainStepInterval = 30 * time.Second
	MinDrainStepInterval     = time.Second
	MaxDrainStepInterval     = time.Hour
	// MaxReason is the longest reason of a drain or a replace, in
	// characters (as for a freeze).
	MaxReason = MaxFreezeReason
)

// Drain states of a zone's entry.
const (
	DrainDraining  = "draining"
	DrainDrained   = "drained"
	DrainReturning = "returning"
	DrainPaused    = "paused"
)

// Slot move kinds, the label values of mcrib_slot_moves_total.
const (
	MoveWarm = "warm"
	MoveCold = "cold"
)

// MoveKinds lists the move kinds, so an exporter can create each at 0.
var MoveKinds = []string{MoveWarm, MoveCold}

// Errors of the zone operations; the API maps them to status codes.
var (
	// ErrBadRequest wraps every refusal of a request's body (400).
	ErrBadRequest = errors.New("controlloop: bad request")
	// ErrUnknownZone: no node is known in that zone (404).
	ErrUnknownZone = errors.New("controlloop: unknown zone")
	// ErrNotDrained: DELETE of a zone that has no drain entry (404).
	ErrNotDrained = errors.New("controlloop: zone not drained")
	// ErrUnknownNode: replace of a node the loop does not know (404).
	ErrUnknownNode = errors.New("controlloop: unknown node")
	// ErrRefused wraps a conflict (409): a drain that would leave no
	// undrained zone, a replace of a node without a slot, with no spare,
	// while frozen or beyond the ceiling.
	ErrRefused = errors.New("controlloop: refused")
	// ErrNotLeader: an action only the leader carries out was asked of a
	// follower; the API forwards it to the leader.
	ErrNotLeader = errors.New("controlloop: this process is not the leader")
)

// DrainRequest is the body of PUT /v1/drain/{zone}, defaults filled in.
type DrainRequest struct {
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
func (r DrainRequest) IntervalText() string {
	if r.StepIntervalText != "" {
		return r.StepIntervalText
	}
	return r.StepInterval.String()
}

// DrainEntry is one zone's entry of the drain document, as stored in KV
// and answered by GET /v1/drain. Slots, TargetSlots, SlotsToMove, State,
// SparesLeft and Warning are filled in when answered; LastStepAt,
// Returning and MovedSlots are the loop's bookkeeping, stored so a new
// leader keeps the pace and gives back what was moved.
type DrainEntry struct {
	Percent       int       `json:"percent"`
	StepPercent   int       `json:"step_percent"`
	StepInterval  string    `json:"step_interval"`
	Reason        string    `json:"reason"`
	By            string    `json:"by"`
	At            time.Time `json:"at"`
	BaselineSlots int       `json:"baseline_slots"`
	Slots         int       `json:"slots"`
	TargetSlots   int       `json:"target_slots"`
	State         string    `json:"state"`
	Blocked       string    `json:"blocked"`
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

// DrainDoc is the drain document of section 7: {"zones": {...}}.
type DrainDoc struct {
	Zones map[string]*DrainEntry `json:"zones"`
	// Corrupt, in an answer only, says that the stored document does not
	// parse (Zones are then the last that parsed) and how to fix it; ""
	// when it parses. It is never stored.
	Corrupt string `json:"corrupt,omitempty"`
}

// ReplaceResult is the answer of POST /v1/nodes/{id}/replace.
type ReplaceResult struct {
	Slot int    `json:"slot"`
	From string `json:"from"`
	To   string `json:"to"`
	Warm bool   `json:"warm"`
	// SparesLeft is the number of ready spares outside the drained zones
	// after the replace; Warning says, in one sentence, that it took the
	// last of them ("" otherwise).
	SparesLeft int    `json:"spares_left"`
	Warning    string `json:"warning,omitempty"`
}

// ZoneStatus is one entry of the status document's zones (section 7).
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

// ParseDrainRequest reads the body of PUT /v1/drain/{zone}: a JSON object
// with a required reason (≤ 512 characters) and optional percent (1..100,
// default 100), step_percent (1..100, default 10) and step_interval (1s..1h,
// default 30s). A value given outside its range, or given as null, is
// refused, never read as the default. Its errors wrap ErrBadRequest and are one readable sentence.
func ParseDrainRequest(body []byte) (DrainRequest, error) {
	var raw struct {
		Reason       *string `json:"reason"`
		Percent      *int    `json:"percent"`
		StepPercent  *int    `json:"step_percent"`
		StepInterval *string `json:"step_interval"`
	}
	if err := decodeOne(body, &raw, `{"reason": "…", "percent": 100, "step_percent": 10, "step_interval": "30s"}`); err != nil {
		return DrainRequest{}, err
	}
	if err := refuseNulls(body, map[string]string{
		"reason":        "a non-empty string",
		"percent":       "an integer from 1 to 100",
		"step_percent":  "an integer from 1 to 100",
		"step_interval": "a duration from 1s to 1h",
	}); err != nil {
		return DrainRequest{}, err
	}
	reason, err := checkReason(raw.Reason, "a drain")
	if err != nil {
		return DrainRequest{}, err
	}
	req := DrainRequest{Reason: reason, Percent: DefaultDrainPercent, StepPercent: DefaultDrainStepPercent, StepInterval: DefaultDrainStepInterval}
	if raw.Percent != nil {
		if *raw.Percent < 1 || *raw.Percent > 100 {
			return DrainRequest{}, fmt.Errorf("%w: \"percent\" must be an integer from 1 to 100, not %d", ErrBadRequest, *raw.Percent)
		}
		req.Percent = *raw.Percent
	}
	if raw.StepPercent != nil {
		if *raw.StepPercent < 1 || *raw.StepPercent > 100 {
			return DrainRequest{}, fmt.Errorf("%w: \"step_percent\" must be an integer from 1 to 100, not %d", ErrBadRequest, *raw.StepPercent)
		}
		req.StepPercent = *raw.StepPercent
	}
	if raw.StepInterval != nil {
		d, err := time.ParseDuration(*raw.StepInterval)
		if err != nil {
			return DrainRequest{}, fmt.Errorf("%w: \"step_interval\" must be a duration like \"30s\", not %q", ErrBadRequest, *raw.StepInterval)
		}
		if d < MinDrainStepInterval || d > MaxDrainStepInterval {
			return DrainRequest{}, fmt.Errorf("%w: \"step_interval\" must be from 1s to 1h, not %s", ErrBadRequest, *raw.StepInterval)
		}
		req.StepInterval, req.StepIntervalText = d, *raw.StepInterval
	}
	return req, nil
}

// ParseReplaceRequest reads the body of POST /v1/nodes/{id}/replace:
// {"reason": "…"} with a non-empty reason of at most 512 characters.
func ParseReplaceRequest(body []byte) (reason string, err error) {
	var raw struct {
		Reason *string `json:"reason"`
	}
	if err := decodeOne(body, &raw, `{"reason": "…"}`); err != nil {
		return "", err
	}
	return checkReason(raw.Reason, "a replace")
}

// refuseNulls refuses a field of the JSON object body given as null (a
// null would otherwise read as absent, that is as the default); want names
// each field checked with what it must be. body was decoded already.
func refuseNulls(body []byte, want map[string]string) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return fmt.Errorf("%w: the body must be a JSON object (%s)", ErrBadRequest, jsonProblem(err))
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if string(bytes.TrimSpace(fields[name])) != "null" {
			continue
		}
		for field, what := range want {
			// encoding/json matches a key to a field regardless of case.
			if strings.EqualFold(name, field) {
				return fmt.Errorf("%w: %q must be %s, not null", ErrBadRequest, field, what)
			}
		}
	}
	return nil
}

// decodeOne decodes exactly one JSON object without unknown fields into v.
func decodeOne(body []byte, v any, example string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: the body must be a JSON object like %s (%s)", ErrBadRequest, example, jsonProblem(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: the body must hold exactly one JSON object", ErrBadRequest)
	}
	return nil
}

func checkReason(r *string, what string) (string, error) {
	if r == nil || strings.TrimSpace(*r) == "" {
		return "", fmt.Errorf("%w: %s needs a non-empty \"reason\"", ErrBadRequest, what)
	}
	if n := utf8.RuneCountInString(*r); n > MaxReason {
		return "", fmt.Errorf("%w: the reason is %d characters long, more than the %d allowed", ErrBadRequest, n, MaxReason)
	}
	return strings.TrimSpace(*r), nil
}
