package leader

import (
	"testing"
	"time"
)

func TestRetryDelay(t *testing.T) {
	tests := []struct {
		name     string
		failures int
		jitter   float64
		want     time.Duration
	}{
		{"first failure, no jitter", 1, 0, 125 * time.Millisecond},
		{"first failure, half jitter", 1, 0.5, 187500 * time.Microsecond},
		{"second failure doubles", 2, 0, 250 * time.Millisecond},
		{"fifth failure", 5, 0, 2 * time.Second},
		{"capped", 6, 0, 2500 * time.Millisecond},
		{"capped far out", 1000, 0.5, 3750 * time.Millisecond},
		{"zero failures acts as first", 0, 0, 125 * time.Millisecond},
		{"jitter out of range ignored", 1, 1.5, 125 * time.Millisecond},
		{"negative jitter ignored", 1, -1, 125 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryDelay(tt.failures, tt.jitter); got != tt.want {
				t.Errorf("retryDelay(%d, %v) = %v, want %v", tt.failures, tt.jitter, got, tt.want)
			}
		})
	}
}

func TestRetryDelayStaysWithinBounds(t *testing.T) {
	for failures := 1; failures < 40; failures++ {
		for _, j := range []float64{0, 0.25, 0.5, 0.75, 0.999} {
			d := retryDelay(failures, j)
			if d < minRetryDelay/2 || d >= maxRetryDelay {
				t.Fatalf("retryDelay(%d, %v) = %v, outside [%v, %v)", failures, j, d, minRetryDelay/2, maxRetryDelay)
			}
		}
	}
}
