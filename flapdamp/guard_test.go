package flapdamp

import "testing"

func TestMassGuard(t *testing.T) {
	tests := []struct {
		name       string
		fraction   float64
		serving    int
		absent     int
		wantTrip   bool
		wantReason string
	}{
		{"none absent", 0.25, 4, 0, false, ""},
		{"exactly at the fraction", 0.25, 4, 1, false, ""},
		{"above the fraction", 0.25, 4, 2, true,
			"2 of 4 serving nodes (50%) are absent, above the 25% limit: replacements stop until fewer are absent"},
		{"three of four", 0.25, 4, 3, true,
			"3 of 4 serving nodes (75%) are absent, above the 25% limit: replacements stop until fewer are absent"},
		{"exactly 3 of 10 at 0.3 (decimal boundary)", 0.3, 10, 3, false, ""},
		{"4 of 10 above 0.3", 0.3, 10, 4, true,
			"4 of 10 serving nodes (40%) are absent, above the 30% limit: replacements stop until fewer are absent"},
		{"exactly 1 of 10 at 0.1", 0.1, 10, 1, false, ""},
		{"exactly 3 of 30 at 0.1", 0.1, 30, 3, false, ""},
		{"exactly 29 of 50 at 0.58 (0.58*50 rounds below 29)", 0.58, 50, 29, false, ""},
		{"exactly 63 of 90 at 0.7 (0.7*90 rounds below 63)", 0.7, 90, 63, false, ""},
		{"singular node", 0.5, 1, 1, true,
			"1 of 1 serving node (100%) is absent, above the 50% limit: replacements stop until fewer are absent"},
		{"close percentages keep apart", 0.333, 3, 1, true,
			"1 of 3 serving nodes (33.33%) is absent, above the 33.30% limit: replacements stop until fewer are absent"},
		{"zero value trips on one absent", 0, 5, 1, true,
			"1 of 5 serving nodes (20%) is absent, above the 0% limit: replacements stop until fewer are absent"},
		{"fraction 1 never trips", 1, 4, 4, false, ""},
		{"no serving nodes", 0.25, 0, 0, false, ""},
		{"no serving nodes, some absent", 0.25, 0, 3, false, ""},
		{"negative counts", 0.25, -1, -1, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tripped, reason := MassGuard{MaxAbsentFraction: tt.fraction}.Check(tt.serving, tt.absent)
			if tripped != tt.wantTrip {
				t.Errorf("Check(%d, %d) tripped = %v, want %v", tt.serving, tt.absent, tripped, tt.wantTrip)
			}
			if reason != tt.wantReason {
				t.Errorf("Check(%d, %d) reason =\n  %q\nwant\n  %q", tt.serving, tt.absent, reason, tt.wantReason)
			}
		})
	}
}

// TestMassGuardUnreachable: the same guard over the slot holders the
// probes cannot reach; one node alone is never a mass episode, whatever
// the pool's size, and with no holders it never trips.
func TestMassGuardUnreachable(t *testing.T) {
	tests := []struct {
		name        string
		fraction    float64
		holders     int
		unreachable int
		wantTrip    bool
		wantReason  string
	}{
		{"two of three above a half", 0.5, 3, 2, true,
			"2 of 3 slot holders (67%) are unreachable at once, above the 50% limit: taken as a fault of the observer or the network between, nothing is flushed or replaced because of it"},
		{"exactly at the fraction", 0.5, 4, 2, false, ""},
		{"one alone in a pool of one", 0.5, 1, 1, false, ""},
		{"one alone, zero fraction", 0, 10, 1, false, ""},
		{"no holders", 0.5, 0, 2, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tripped, reason := MassGuard{MaxAbsentFraction: tt.fraction}.CheckUnreachable(tt.holders, tt.unreachable)
			if tripped != tt.wantTrip || reason != tt.wantReason {
				t.Errorf("CheckUnreachable(%d, %d) = %v %q, want %v %q", tt.holders, tt.unreachable, tripped, reason, tt.wantTrip, tt.wantReason)
			}
		})
	}
}
