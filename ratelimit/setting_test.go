package ratelimit

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseSetting(t *testing.T) {
	tests := []struct {
		body string
		want Setting
	}{
		{`{"mode": "manual", "limit": 5}`, Setting{Mode: ModeManual, Limit: 5}},
		{`{"mode":"manual","limit":0}`, Setting{Mode: ModeManual, Limit: 0}},
		{`{"mode": "manual", "limit": 2.5, "burst": 3}`, Setting{Mode: ModeManual, Limit: 2.5, Burst: 3}},
		{`{"limit": 1e3, "mode": "manual"}`, Setting{Mode: ModeManual, Limit: 1000}},
		{`{"mode": "auto"}`, Setting{Mode: ModeAuto}},
		{`{"mode": "auto", "burst": 7}`, Setting{Mode: ModeAuto, Burst: 7}},
		{" \n{\"mode\": \"auto\"}\n ", Setting{Mode: ModeAuto}},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			got, err := ParseSetting([]byte(tt.body))
			if err != nil || got != tt.want {
				t.Fatalf("ParseSetting(%s) = %+v, %v; want %+v", tt.body, got, err, tt.want)
			}
		})
	}
}

func TestParseSettingRefuses(t *testing.T) {
	tests := []struct {
		body string
		want string // the whole message
	}{
		{``, `the body is empty; send {"mode": "manual", "limit": N} or {"mode": "auto"}`},
		{`{"mode": "manual", "limit": -1}`, msgLimit},
		{`{"mode": "manual", "limit": -0.001}`, msgLimit},
		{`{"mode": "manual", "limit": 1e400}`, msgLimit},
		{`{"mode": "manual", "limit": "5"}`, msgLimit},
		{`{"mode": "manual", "limit": "NaN"}`, msgLimit},
		{`{"mode": "manual", "limit": null}`, msgLimit},
		{`{"mode": "manual", "limit": true}`, msgLimit},
		{`{"mode": "manual", "limit": [5]}`, msgLimit},
		{`{"mode": "manual"}`, "manual mode needs a limit: a finite number of boots per second, at least 0"},
		{`{"mode": "fast", "limit": 5}`, `mode must be "auto" or "manual", not "fast"`},
		{`{"mode": "Manual", "limit": 5}`, `mode must be "auto" or "manual", not "Manual"`},
		{`{"mode": 1}`, `mode must be "auto" or "manual" (a JSON string)`},
		{`{"mode": null}`, `mode must be "auto" or "manual" (a JSON string)`},
		{`{"limit": 5}`, `mode must be "auto" or "manual", and it is missing`},
		{`{}`, `mode must be "auto" or "manual", and it is missing`},
		{`null`, `mode must be "auto" or "manual", and it is missing`},
		{`{"mode": "manual", "limit": 5, "burst": 0}`, msgBurst},
		{`{"mode": "manual", "limit": 5, "burst": -3}`, msgBurst},
		{`{"mode": "manual", "limit": 5, "burst": 2.5}`, msgBurst},
		{`{"mode": "manual", "limit": 5, "burst": "2"}`, msgBurst},
		{`{"mode": "manual", "limit": 5, "burst": 1e12}`, msgBurst},
		{`{"mode": "auto", "limit": 5}`, "limit is only accepted in manual mode; in auto mode the controller sets it"},
		{`{"mode": "auto", "burst": 0}`, msgBurst},
		{`{"mode": "manual", "limit": 5, "rate": 5}`, `unknown field "rate"; the fields are mode, limit and burst`},
		{`{"mode": "manual", "limit": 5, "z": 1, "a": 2}`, `unknown field "a", "z"; the fields are mode, limit and burst`},
		{`{"mode": "manual", "limit": 5} {"mode": "auto"}`, "the body must hold exactly one JSON object and nothing after it"},
		{`{"mode": "manual", "limit": 5}]`, "the body must hold exactly one JSON object and nothing after it"},
		{`[{"mode": "auto"}]`, `the body must be a JSON object such as {"mode": "manual", "limit": 50}`},
		{`"auto"`, `the body must be a JSON object such as {"mode": "manual", "limit": 50}`},
		{`5`, `the body must be a JSON object such as {"mode": "manual", "limit": 50}`},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			got, err := ParseSetting([]byte(tt.body))
			if err == nil {
				t.Fatalf("ParseSetting(%s) = %+v, want an error", tt.body, got)
			}
			if !errors.Is(err, ErrInvalidSetting) {
				t.Errorf("error %v does not match ErrInvalidSetting", err)
			}
			if err.Error() != tt.want {
				t.Errorf("message %q, want %q", err.Error(), tt.want)
			}
		})
	}
}

func TestParseSettingMalformedJSON(t *testing.T) {
	for _, body := range []string{`{"mode": "manual", "limit": 5`, `{mode: auto}`, `{"mode": "manual", "limit": 5,}`, `{"mode": "manual", "limit": NaN}`, `{"mode": "manual", "limit": Infinity}`} {
		t.Run(body, func(t *testing.T) {
			_, err := ParseSetting([]byte(body))
			if !errors.Is(err, ErrInvalidSetting) {
				t.Fatalf("ParseSetting(%s) = %v, want ErrInvalidSetting", body, err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "the body is not valid JSON (") || strings.Contains(msg, "\n") {
				t.Fatalf("message %q is not the one-sentence JSON complaint", msg)
			}
		})
	}
}

func TestSettingValidate(t *testing.T) {
	bad := []Setting{
		{},
		{Mode: "x"},
		{Mode: ModeAuto, Limit: 5},
		{Mode: ModeAuto, Burst: -5},
		{Mode: ModeManual, Limit: -1},
		{Mode: ModeManual, Limit: 5, Burst: -1},
	}
	for _, s := range bad {
		if err := s.Validate(); !errors.Is(err, ErrInvalidSetting) {
			t.Errorf("%+v.Validate() = %v, want ErrInvalidSetting", s, err)
		}
	}
	for _, s := range []Setting{{Mode: ModeAuto}, {Mode: ModeAuto, Burst: 5}, {Mode: ModeManual}, {Mode: ModeManual, Limit: 5, Burst: 2}} {
		if err := s.Validate(); err != nil {
			t.Errorf("%+v.Validate() = %v", s, err)
		}
	}
}

func TestApplySetting(t *testing.T) {
	now := t0.Add(time.Minute)
	tests := []struct {
		name string
		base Document
		st   Setting
		by   string
		want Document // Mode, Limit, Burst, Reason, AutoLimit, AutoReason are compared
	}{
		{
			name: "auto to manual keeps the controller's limit",
			base: autoDoc(500, t0),
			st:   Setting{Mode: ModeManual, Limit: 5},
			by:   "alice",
			want: Document{Mode: ModeManual, Limit: 5, Burst: 1, Reason: "set to manual 5 boots/s by alice", AutoLimit: 500,
				AutoReason: "the controller keeps computing its own limit from 500 boots/s while the limit is manual"},
		},
		{
			name: "manual with a burst, nobody named",
			base: manualDoc(5, 1, 300, t0),
			st:   Setting{Mode: ModeManual, Limit: 50, Burst: 20},
			want: Document{Mode: ModeManual, Limit: 50, Burst: 20, Reason: "set to manual 50 boots/s with burst 20", AutoLimit: 300},
		},
		{
			name: "back to auto resumes from the manual limit",
			base: manualDoc(250, 25, 900, t0),
			st:   Setting{Mode: ModeAuto},
			by:   "bob",
			want: Document{Mode: ModeAuto, Limit: 250, Burst: 25, Reason: "set to auto by bob, resuming from 250 boots/s", AutoLimit: 250},
		},
		{
			name: "back to auto below the floor resumes from the floor",
			base: manualDoc(5, 1, 900, t0),
			st:   Setting{Mode: ModeAuto},
			by:   "bob",
			want: Document{Mode: ModeAuto, Limit: 10, Burst: 1, Reason: "set to auto by bob, resuming from the floor of 10 boots/s (the manual limit was 5)", AutoLimit: 10},
		},
		{
			name: "back to auto above the ceiling resumes from the ceiling",
			base: manualDoc(5000, 500, 900, t0),
			st:   Setting{Mode: ModeAuto},
			want: Document{Mode: ModeAuto, Limit: 1000, Burst: 100, Reason: "set to auto, resuming from the ceiling of 1000 boots/s (the manual limit was 5000)", AutoLimit: 1000},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := applySetting(tt.base, tt.st, tt.by, now, testConfig, 0.5, true)
			if got.Mode != tt.want.Mode || got.Limit != tt.want.Limit || got.Burst != tt.want.Burst ||
				got.Reason != tt.want.Reason || got.AutoLimit != tt.want.AutoLimit || got.AutoReason != tt.want.AutoReason {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
			if !got.UpdatedAt.Equal(now) || got.HitRate == nil || *got.HitRate != 0.5 || got.Floor != 10 || got.Ceiling != 1000 {
				t.Fatalf("got %+v: want updated_at %v, hit rate 0.5, floor 10, ceiling 1000", got, now)
			}
			if err := got.Validate(); err != nil {
				t.Fatalf("result is not a valid document: %v", err)
			}
		})
	}
}
