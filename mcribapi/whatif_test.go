package mcribapi

import (
	"errors"
	"testing"
	"time"
)

// TestParseWhatIfRequest: a drain's what-if is a drain's body with its
// zone, a resize's a resize's; the reason is optional; the action's own
// refusals hold.
func TestParseWhatIfRequest(t *testing.T) {
	w, err := ParseWhatIfRequest([]byte(`{"action":"drain","zone":"b","percent":50,"step_interval":"1m"}`))
	if err != nil || w.Action != WhatIfDrain || w.Zone != "b" || w.Drain.Percent != 50 || w.Drain.StepPercent != DefaultDrainStepPercent ||
		w.Drain.StepInterval != time.Minute || w.Drain.Reason != whatIfReason {
		t.Errorf("drain: %+v, %v", w, err)
	}
	w, err = ParseWhatIfRequest([]byte(`{"action":"resize","num_slots":32,"reason":"grown"}`))
	if err != nil || w.Action != WhatIfResize || w.Resize.NumSlots != 32 || w.Resize.Reason != "grown" {
		t.Errorf("resize: %+v, %v", w, err)
	}
	for _, body := range []string{``, `[]`, `null`, `{}`, `{"action":null}`, `{"action":"roll"}`, `{"action":"drain","zone":"a/b"}`,
		`{"action":"drain","zone":"b","reason":""}`, `{"action":"resize","num_slots":32,"zone":"b"}`} {
		if _, err := ParseWhatIfRequest([]byte(body)); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: %v, want a bad request", body, err)
		}
	}
}
