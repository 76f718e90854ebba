package mcribapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The what-if (docs/api.md, "What-if"): POST /v1/whatif asks what a drain
// or a resize would cost before it is made.

// The actions a what-if takes.
const (
	WhatIfDrain  = "drain"
	WhatIfResize = "resize"
)

// whatIfReason is the reason a what-if's action gets when its body gives
// none (a reason is optional there).
const whatIfReason = "what-if"

// WhatIf is a what-if request: the action, and its own request (a drain
// names its zone).
type WhatIf struct {
	Action string
	Zone   string
	Drain  Drain
	Resize Resize
}

// Prediction is the answer of POST /v1/whatif: the simulator's prediction
// for the pool as it is now. Duration is a Go duration ("4m30s"); Blocked,
// when not empty, is the sentence of the 409 the action's endpoint would
// answer now, or what stopped the simulated action (the other figures are
// then those of the pool as it is, or of the run so far).
type Prediction struct {
	Action          string  `json:"action"`
	Duration        string  `json:"duration"`
	LowestHitRate   float64 `json:"lowest_hit_rate"`
	ExtraMisses     int64   `json:"extra_misses"`
	LowestBootLimit float64 `json:"lowest_boot_limit"`
	Blocked         string  `json:"blocked"`
}

// DurationText formats a prediction's duration: whole seconds.
func DurationText(d time.Duration) string { return d.Round(time.Second).String() }

// ParseWhatIfRequest reads the body of POST /v1/whatif: {"action":
// "drain", "zone": "b", …} with the rest of a PUT /v1/drain/{zone}'s body,
// or {"action": "resize", …} with the rest of a PUT /v1/resize's; the
// reason is optional. Its errors wrap ErrBadRequest.
func ParseWhatIfRequest(body []byte) (WhatIf, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return WhatIf{}, fmt.Errorf("%w: the body must be a JSON object like {\"action\": \"drain\", \"zone\": \"b\"}", ErrBadRequest)
	}
	var w WhatIf
	if err := stringField(fields, "action", &w.Action); err != nil {
		return WhatIf{}, err
	}
	delete(fields, "action")
	switch w.Action {
	case WhatIfDrain:
		if err := stringField(fields, "zone", &w.Zone); err != nil {
			return WhatIf{}, err
		}
		if w.Zone == "" {
			return WhatIf{}, fmt.Errorf("%w: a drain's what-if names its \"zone\"", ErrBadRequest)
		}
		if strings.Contains(w.Zone, "/") {
			return WhatIf{}, fmt.Errorf("%w: a zone name has no '/', and %q has one", ErrBadRequest, w.Zone)
		}
		delete(fields, "zone")
	case WhatIfResize:
	case "":
		return WhatIf{}, fmt.Errorf("%w: a what-if needs an \"action\": \"drain\" or \"resize\"", ErrBadRequest)
	default:
		return WhatIf{}, fmt.Errorf("%w: \"action\" must be \"drain\" or \"resize\", not %q", ErrBadRequest, w.Action)
	}
	if _, ok := fields["reason"]; !ok {
		fields["reason"] = json.RawMessage(`"` + whatIfReason + `"`)
	}
	rest, err := json.Marshal(fields)
	if err != nil {
		return WhatIf{}, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	if w.Action == WhatIfDrain {
		w.Drain, err = ParseDrainRequest(rest)
	} else {
		w.Resize, err = ParseResizeRequest(rest)
	}
	return w, err
}

// stringField reads the string field name of fields into v; absent is
// "", anything but a string is refused.
func stringField(fields map[string]json.RawMessage, name string, v *string) error {
	raw, ok := fields[name]
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil || string(raw) == "null" {
		return fmt.Errorf("%w: %q must be a string", ErrBadRequest, name)
	}
	return nil
}
