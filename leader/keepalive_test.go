package leader

import (
	"testing"
	"time"
)

func TestCheckExpired(t *testing.T) {
	base := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		now  time.Time
		ttl  time.Duration
		want bool
	}{
		{"just refreshed", base, 3 * time.Second, false},
		{"inside ttl", base.Add(2999 * time.Millisecond), 3 * time.Second, false},
		{"at ttl", base.Add(3 * time.Second), 3 * time.Second, true},
		{"past ttl", base.Add(10 * time.Second), 3 * time.Second, true},
		{"clock went back", base.Add(-time.Second), 3 * time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkExpired(base, tt.now, tt.ttl); got != tt.want {
				t.Errorf("checkExpired(%v, %v, %v) = %v, want %v", base, tt.now, tt.ttl, got, tt.want)
			}
		})
	}
}
