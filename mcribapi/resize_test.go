package mcribapi

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseResizeRequest(t *testing.T) {
	tests := []struct {
		body    string
		want    Resize
		wantErr string
	}{
		{body: `{"num_slots": 32, "reason": "grown past its slots"}`,
			want: Resize{NumSlots: 32, Reason: "grown past its slots", StepPercent: 10, StepInterval: 30 * time.Second}},
		{body: `{"num_slots": 32, "reason": " r ", "step_percent": 25, "step_interval": "1m"}`,
			want: Resize{NumSlots: 32, Reason: "r", StepPercent: 25, StepInterval: time.Minute, StepIntervalText: "1m"}},
		{body: `{"reason": "r"}`, wantErr: `"num_slots" is required`},
		{body: `{"num_slots": 8192, "reason": "r"}`, wantErr: `"num_slots" must be at most 4096, not 8192`},
		{body: `{"num_slots": 32}`, wantErr: `a resize needs a non-empty "reason"`},
		{body: `{"num_slots": 32, "reason": "r", "step_percent": 0}`, wantErr: `"step_percent" must be an integer from 1 to 100, not 0`},
		{body: `{"num_slots": 32, "reason": "r", "step_percent": 101}`, wantErr: `"step_percent" must be an integer from 1 to 100, not 101`},
		{body: `{"num_slots": 32, "reason": "r", "step_interval": "2h"}`, wantErr: `"step_interval" must be from 1s to 1h, not 2h`},
		{body: `{"num_slots": 32, "reason": "r", "step_interval": "soon"}`, wantErr: `"step_interval" must be a duration like "30s"`},
		{body: `{"num_slots": 32, "reason": "r", "step_percent": null}`, wantErr: `"step_percent" must be an integer from 1 to 100, not null`},
		{body: `{"num_slots": 32, "reason": "r", "slots": 3}`, wantErr: `the body must be a JSON object like`},
	}
	for _, tt := range tests {
		got, err := ParseResizeRequest([]byte(tt.body))
		if tt.wantErr != "" {
			if !errors.Is(err, ErrBadRequest) || !strings.Contains(Sentence(err), tt.wantErr) || StatusCode(err) != 400 {
				t.Errorf("ParseResizeRequest(%s) = %v, want a 400 containing %q", tt.body, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseResizeRequest(%s) = %+v, %v; want %+v", tt.body, got, err, tt.want)
		}
	}
}

func TestResizeEntry(t *testing.T) {
	e := ResizeEntry{From: 16, To: 32, StepPercent: 10, StepInterval: "1m"}
	if e.StepSize() != 2 || e.Interval() != time.Minute {
		t.Errorf("step size %d, interval %v; want 2 and 1m", e.StepSize(), e.Interval())
	}
	e.StepPercent, e.StepInterval = 1, "forever"
	if e.StepSize() != 1 || e.Interval() != DefaultResizeStepInterval {
		t.Errorf("step size %d, interval %v; want 1 and the default", e.StepSize(), e.Interval())
	}
	if _, err := ParseStoredResize([]byte(`{"resize": {"from": 16, "to": 48}}`)); err == nil {
		t.Error("a stored entry that does not double parses")
	}
	doc, err := ParseStoredResize([]byte(`{"resize": null}`))
	if err != nil || doc.Resize != nil {
		t.Errorf("ParseStoredResize(null) = %+v, %v", doc, err)
	}
	if StatusCode(ErrNoResize) != 404 {
		t.Errorf("ErrNoResize answers %d", StatusCode(ErrNoResize))
	}
}
