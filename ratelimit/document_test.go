package ratelimit

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"
)

func TestKey(t *testing.T) {
	tests := []struct{ prefix, pool, want string }{
		{"mcrib", "default", "mcrib/default/bootlimit"},
		{"/mcrib/", "web", "mcrib/web/bootlimit"},
		{"a/b", "p", "a/b/p/bootlimit"},
		{"", "p", "p/bootlimit"},
	}
	for _, tt := range tests {
		if got := Key(tt.prefix, tt.pool); got != tt.want {
			t.Errorf("Key(%q, %q) = %q, want %q", tt.prefix, tt.pool, got, tt.want)
		}
	}
}

func TestDefaultBurst(t *testing.T) {
	tests := []struct {
		limit float64
		want  int
	}{{1000, 100}, {250, 25}, {62.5, 7}, {10, 1}, {5, 1}, {0.5, 1}, {0, 1}, {1e300, maxBurst}}
	for _, tt := range tests {
		if got := DefaultBurst(tt.limit); got != tt.want {
			t.Errorf("DefaultBurst(%v) = %d, want %d", tt.limit, got, tt.want)
		}
	}
}

// TestDocumentJSON pins the field names of the boot-limit document
// (docs/api.md) plus the two added ones.
func TestDocumentJSON(t *testing.T) {
	doc := InitialDocument(testConfig, t0)
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	want := []string{"auto_limit", "burst", "ceiling", "floor", "hit_rate", "limit", "mode", "reason", "updated_at"}
	if got := slices.Sorted(maps.Keys(fields)); !slices.Equal(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}
	if fields["updated_at"] != "2026-11-29T13:00:00Z" || fields["mode"] != "auto" || fields["limit"] != 1000.0 || fields["burst"] != 100.0 {
		t.Fatalf("new pool document %s", b)
	}
	if doc.Reason != "new pool: starting in auto mode at the ceiling of 1000 boots/s" {
		t.Fatalf("reason %q", doc.Reason)
	}
	back, err := ParseDocument(b)
	if err != nil || back != doc {
		t.Fatalf("round trip: %+v, %v; want %+v", back, err, doc)
	}
}

func TestParseDocument(t *testing.T) {
	good := `{"mode": "auto", "limit": 250.0, "burst": 25, "hit_rate": 0.72, "floor": 10, "ceiling": 1000,
		"updated_at": "2026-11-29T13:00:00Z", "reason": "hit rate 0.72 below 0.80: cut from 500 to 250", "future": 1}`
	doc, err := ParseDocument([]byte(good))
	if err != nil {
		t.Fatalf("the contract's example was refused: %v", err)
	}
	if doc.Limit != 250 || doc.Burst != 25 || doc.HitRate == nil || *doc.HitRate != 0.72 || !doc.UpdatedAt.Equal(time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)) {
		t.Fatalf("parsed %+v", doc)
	}
	for _, bad := range []string{
		`not json`,
		`{"mode": "fast", "limit": 5, "burst": 1}`,
		`{"mode": "auto", "limit": -5, "burst": 1}`,
		`{"mode": "auto", "limit": 5, "burst": 0}`,
		`{"mode": "auto", "limit": "5", "burst": 1}`,
		`{"mode": "manual", "limit": 5, "burst": 1, "auto_limit": -1}`,
	} {
		if _, err := ParseDocument([]byte(bad)); !errors.Is(err, ErrBadDocument) {
			t.Errorf("ParseDocument(%s) = %v, want ErrBadDocument", bad, err)
		}
	}
}

func TestFmtRate(t *testing.T) {
	tests := []struct {
		h, threshold float64
		want         string
	}{
		{0.72, 0.8, "0.72"},
		{0.795, 0.8, "0.795"},
		{0.8, 0.8, "0.80"},
		{0.8999, 0.9, "0.8999"},
		{1, 0.9, "1.00"},
	}
	for _, tt := range tests {
		if got := fmtRate(tt.h, tt.threshold); got != tt.want {
			t.Errorf("fmtRate(%v, %v) = %q, want %q", tt.h, tt.threshold, got, tt.want)
		}
	}
}
