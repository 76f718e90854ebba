package consulwatch

import "testing"

func TestNextIndex(t *testing.T) {
	tests := []struct {
		name      string
		prev, got uint64
		seen      bool
		want      uint64
	}{
		{"first answer", 0, 42, false, 42},
		{"moved on", 42, 50, true, 50},
		{"unchanged", 42, 42, true, 42},
		{"went backwards: start over", 42, 7, true, 0},
		{"went backwards to zero: start over", 42, 0, true, 0},
		{"zero first answer becomes one", 0, 0, false, 1},
		{"zero again becomes one", 0, 0, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nextIndex(tt.prev, tt.got, tt.seen); got != tt.want {
				t.Errorf("nextIndex(%d, %d, %v) = %d, want %d", tt.prev, tt.got, tt.seen, got, tt.want)
			}
		})
	}
}
