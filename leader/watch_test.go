package leader

import (
	"testing"

	"github.com/hashicorp/consul/api"
)

func TestNextIndex(t *testing.T) {
	tests := []struct {
		name      string
		prev, got uint64
		want      uint64
	}{
		{"first read", 0, 42, 42},
		{"moved on", 42, 50, 50},
		{"unchanged", 42, 42, 42},
		{"went backwards: start over", 42, 7, 0},
		{"zero never reused", 0, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nextIndex(tt.prev, tt.got); got != tt.want {
				t.Errorf("nextIndex(%d, %d) = %d, want %d", tt.prev, tt.got, got, tt.want)
			}
		})
	}
}

func TestHolder(t *testing.T) {
	tests := []struct {
		name       string
		kv         *api.KVPair
		session    string
		wantID     string
		wantHeldBy bool
	}{
		{"absent", nil, "s1", "", false},
		{"free", &api.KVPair{Value: []byte("a:1")}, "s1", "", false},
		{"held by us", &api.KVPair{Value: []byte("a:1"), Session: "s1"}, "s1", "a:1", true},
		{"held by another", &api.KVPair{Value: []byte("b:1"), Session: "s2"}, "s1", "b:1", false},
		{"free, empty session asked", &api.KVPair{Value: []byte("a:1")}, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := holderID(tt.kv); got != tt.wantID {
				t.Errorf("holderID = %q, want %q", got, tt.wantID)
			}
			if got := heldBy(tt.kv, tt.session); got != tt.wantHeldBy {
				t.Errorf("heldBy(%q) = %v, want %v", tt.session, got, tt.wantHeldBy)
			}
		})
	}
}
